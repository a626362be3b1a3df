package memlimit

import (
	"runtime/debug"
	"testing"
	"time"
)

// These tests change the process's limit: none runs in parallel, and each
// puts it back.

func TestFollowRaisesTheLimitAboveTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	ticks := make(chan time.Time)
	reads := make(chan uint64)
	live := uint64(10 << 20)
	stop := follow(ticks, func() (uint64, bool) {
		n := live // read once: the test sets the next value once it has it
		reads <- n
		return n, true
	}, 2)
	tick := func(n uint64) {
		t.Helper()
		live = n
		ticks <- time.Time{}
		<-reads
		ticks <- time.Time{} // the raise before it is done once this tick is taken
		<-reads
	}
	tick(10 << 20) // 20 MiB wanted, below the limit: it stays
	if got := Current(); got != 64<<20 {
		t.Errorf("limit %d MiB with 10 MiB live, want 64 as set", got>>20)
	}
	tick(48 << 20)
	if got := Current(); got != 96<<20 {
		t.Errorf("limit %d MiB with 48 MiB live, want 96", got>>20)
	}
	tick(8 << 20) // it never lowers the limit
	if got := Current(); got != 96<<20 {
		t.Errorf("limit %d MiB once the live heap shrank, want 96 still", got>>20)
	}
	stop()
}

func TestFollowEndsWhenTheHeapCannotBeRead(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	ticks := make(chan time.Time, 1)
	ticks <- time.Time{}
	stop := follow(ticks, func() (uint64, bool) { return 1 << 40, false }, 2)
	stop() // returns: the goroutine ended, or ends now
	if got := Current(); got != 64<<20 {
		t.Errorf("limit %d MiB, want 64 as set", got>>20)
	}
}

func TestLiftPutsBackWhatItFound(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(32 << 20))
	restore := Lift(16 << 20)
	if got := Current(); got != 48<<20 {
		t.Errorf("lifted limit %d MiB, want 48", got>>20)
	}
	restore()
	if got := Current(); got != 32<<20 {
		t.Errorf("limit %d MiB after, want 32", got>>20)
	}
	// Without a limit there is nothing to lift.
	debug.SetMemoryLimit(None)
	Lift(16 << 20)()
	if got := Current(); got != None {
		t.Errorf("limit %d, want none", got)
	}
}

func TestRaiseOnlyRaises(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(32 << 20))
	Raise(16 << 20)
	if got := Current(); got != 32<<20 {
		t.Errorf("limit %d MiB, want 32", got>>20)
	}
	Raise(40 << 20)
	if got := Current(); got != 40<<20 {
		t.Errorf("limit %d MiB, want 40", got>>20)
	}
	if was := Set(24 << 20); was != 40<<20 {
		t.Errorf("Set returned %d MiB, want 40", was>>20)
	}
}

// Follow on the runtime's own metric raises the limit once the heap a
// collection found live needs it.
func TestFollowReadsTheRuntime(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(16 << 20))
	stop := Follow(1.5, time.Millisecond)
	defer stop()
	live := make([][]byte, 32) // 32 MiB live, twice the limit
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = byte(i)
	}
	deadline := time.Now().Add(time.Minute)
	for Current() < 48<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d MiB with 32 MiB live, want at least 48", Current()>>20)
		}
		debug.FreeOSMemory() // a collection, so that the live heap is known
	}
	_ = live[31][0]
}
