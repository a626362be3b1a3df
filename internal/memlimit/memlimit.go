// Package memlimit changes the process's soft memory limit
// (runtime/debug.SetMemoryLimit) for the parts of retrylab that tune the
// garbage collector: a file import (engine/otlp) and the explorer
// (internal/cli). The limit is the process's own state, not a package's;
// each change here is a read and a write, and one lock orders them.
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// mu orders the changes made to the process's soft memory limit.
var mu sync.Mutex

// None is the limit of a process that has none.
const None = math.MaxInt64

// Current is the limit now (None: no limit).
func Current() int64 { return debug.SetMemoryLimit(-1) }

// Set sets the limit and returns the one before.
func Set(to int64) (was int64) {
	mu.Lock()
	defer mu.Unlock()
	return debug.SetMemoryLimit(to)
}

// Raise sets the limit to to when it is lower.
func Raise(to int64) {
	mu.Lock()
	defer mu.Unlock()
	if to > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(to)
	}
}

// Lift raises the limit, when one is set, by n bytes, until the returned
// func puts back the limit it found.
func Lift(n int64) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	limit := debug.SetMemoryLimit(-1)
	if limit == None {
		return func() {}
	}
	debug.SetMemoryLimit(limit + n)
	return func() { Set(limit) }
}

// liveHeap is the runtime metric of the heap the last collection found
// live.
const liveHeap = "/gc/heap/live:bytes"

// Follow keeps the limit at least factor times the live heap, looking at
// it every tick, until the returned func stops it (and returns once it has
// stopped). It only ever raises the limit: another change (Lift) may have
// raised it more. Under a limit below what is live the collector runs
// without pause, at half the CPU; reading the metric costs a microsecond.
func Follow(factor float64, tick time.Duration) (stop func()) {
	ticker := time.NewTicker(tick)
	sample := []metrics.Sample{{Name: liveHeap}}
	stopFollowing := follow(ticker.C, func() (uint64, bool) {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0, false // a runtime without the metric: the limit stays
		}
		return sample[0].Value.Uint64(), true
	}, factor)
	return func() {
		stopFollowing()
		ticker.Stop()
	}
}

// follow is Follow on ticks, reading the live heap with live (false: it
// cannot be read, and following ends).
func follow(ticks <-chan time.Time, live func() (uint64, bool), factor float64) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-ticks:
			}
			n, ok := live()
			if !ok {
				return
			}
			Raise(int64(factor * float64(n)))
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
