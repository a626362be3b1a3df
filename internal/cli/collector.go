package cli

import (
	"os"
	"runtime/debug"
	"time"

	"github.com/retrylab/retrylab/internal/memlimit"
)

// The explorer's garbage collector.
//
// The explorer keeps little live (the list's window, the selected
// execution's trace: some 7 MB while spans arrive) and makes its garbage
// frame by frame. Under Go's default (GOGC=100) its collector ran every few
// MB of frames, a fifth of the explorer's CPU while a receiver stored spans,
// and a key that came during a collection waited for it: 24c's key p99 was
// 21-32 ms in four runs, 14-24 ms in six with the heap let grow to five
// times what is live (BENCHMARKS.md, 24c). So the explorer collects less
// often: up to five times its live heap (GOGC=400) under a soft limit that
// starts at explorerHeapFloor and follows the live heap at twice it, so that
// a large live heap (a long history's timeline) is collected as under the
// default and never grows to five times.
const (
	explorerGCPercent = 400
	explorerHeapFloor = 32 << 20
	explorerHeapTick  = 100 * time.Millisecond
)

// collectLessOften tunes the collector for the explorer until the returned
// func puts back what it found. A GOGC or GOMEMLIMIT the user set is kept.
func collectLessOften() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	gc := debug.SetGCPercent(explorerGCPercent)
	limit := memlimit.Set(explorerHeapFloor)
	stop := memlimit.Follow(2, explorerHeapTick)
	return func() {
		stop()
		memlimit.Set(limit)
		debug.SetGCPercent(gc)
	}
}
