package otlp

import (
	"time"

	"github.com/retrylab/retrylab/internal/memlimit"
)

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
	base := memlimit.Current()
	if base == memlimit.None {
		return func() {}
	}
	stop := memlimit.Follow(1.5, heapLimitTick)
	return func() {
		stop()
		memlimit.Set(base)
	}
}
