package otlp

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// memoryLimitMu orders the changes this package makes to the soft memory
// limit, which is the process's own state, not this package's: each is a
// read and a write (followLiveHeap, roomForDocument).
var memoryLimitMu sync.Mutex

// raiseMemoryLimit sets the soft memory limit to to when it is lower.
func raiseMemoryLimit(to int64) {
	memoryLimitMu.Lock()
	defer memoryLimitMu.Unlock()
	if to > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(to)
	}
}

// setMemoryLimit sets the soft memory limit.
func setMemoryLimit(to int64) {
	memoryLimitMu.Lock()
	defer memoryLimitMu.Unlock()
	debug.SetMemoryLimit(to)
}

// liveHeap is the runtime metric of the heap the last collection found
// live.
const liveHeap = "/gc/heap/live:bytes"

// heapLimitTick is how often followLiveHeap looks at the live heap: a
// collector running back to back under the limit costs half the CPU for
// as long as it lasts, and reading the metric costs a microsecond.
const heapLimitTick = 20 * time.Millisecond

// followLiveHeap keeps the process's soft memory limit, when one is set
// (ImportMemoryLimit: 'retrylab import'), at least half again above the
// live heap, until the returned func puts the limit back as it found it.
//
// The limit makes the collector run before the heap doubles what is live,
// which keeps a streaming import small (BENCHMARKS.md, 8b); but a file
// whose traces all interleave keeps more than the limit live (each
// trace's state, the chunks in flight), and under a limit below the live
// heap the collector runs without pause, at half the CPU: it took 43% of
// the import of 200 000 spans shuffled end to end, which takes 9.7–10.9
// CPU-s with the limit following the live heap against 14.3–16.1 under the
// fixed limit, for 20–30 MB more RSS (BENCHMARKS.md, 8j′). JSON Lines of
// traces that come together never have that much live, and keep the limit.
func followLiveHeap() (restore func()) {
	base := debug.SetMemoryLimit(-1)
	if base == math.MaxInt64 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		sample := []metrics.Sample{{Name: liveHeap}}
		tick := time.NewTicker(heapLimitTick)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return // a runtime without the metric: the limit stays
			}
			// Only ever raised here: roomForDocument may have raised it
			// more for a whole document, and puts back what it found.
			live := int64(sample[0].Value.Uint64())
			raiseMemoryLimit(live + live/2)
		}
	}()
	return func() {
		close(done)
		<-stopped
		setMemoryLimit(base)
	}
}
