package cli

import (
	"runtime/debug"
	"testing"

	"github.com/retrylab/retrylab/internal/memlimit"
)

// gcPercent is the collector's GOGC now.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// The explorer lets its heap grow to five times what is live, under a
// limit that follows it, and puts the collector back as it found it; a
// GOGC or GOMEMLIMIT the user set wins. (Not parallel: the collector is
// the process's.)
func TestExplorerCollectsLessOften(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	gc, limit := gcPercent(), memlimit.Current()
	restore := collectLessOften()
	if got := gcPercent(); got != explorerGCPercent {
		t.Errorf("GOGC %d in the explorer, want %d", got, explorerGCPercent)
	}
	if got := memlimit.Current(); got < explorerHeapFloor || got == memlimit.None {
		t.Errorf("memory limit %d in the explorer, want at least %d", got, explorerHeapFloor)
	}
	restore()
	if got := gcPercent(); got != gc {
		t.Errorf("GOGC %d after, want %d as before", got, gc)
	}
	if got := memlimit.Current(); got != limit {
		t.Errorf("memory limit %d after, want %d as before", got, limit)
	}

	t.Setenv("GOGC", "50")
	collectLessOften()()
	restore = collectLessOften()
	if got := gcPercent(); got != gc {
		t.Errorf("GOGC %d with GOGC=50 set, want the process's %d kept", got, gc)
	}
	restore()
}
