package otlp

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The soft memory limit an import runs under follows its live heap up to
// half again above it, and is put back as it was when the import ends.
// (Not parallel: the limit is the process's.)
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	const base = 32 << 20
	old := debug.SetMemoryLimit(base)
	defer debug.SetMemoryLimit(old)

	restore := followLiveHeap()
	live := make([][]byte, 64) // 64 MiB live, twice the limit
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = byte(i)
	}
	runtime.GC() // the live heap is what a collection found
	deadline := time.Now().Add(time.Minute)
	for debug.SetMemoryLimit(-1) < 96<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d MiB with 64 MiB live, want at least 96", debug.SetMemoryLimit(-1)>>20)
		}
		time.Sleep(heapLimitTick)
	}
	runtime.KeepAlive(live)
	restore()
	if got := debug.SetMemoryLimit(-1); got != base {
		t.Errorf("limit %d after the import, want %d as before", got, base)
	}

	// Without a limit (a host, a test) there is nothing to follow.
	debug.SetMemoryLimit(math.MaxInt64)
	followLiveHeap()()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d, want none", got)
	}
}
