package cli

import (
	"context"
	"io"
	"os"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

// BenchmarkCheckWide measures what 'retrylab check' does on a wide
// database, many executions of about one attempt each (issue 14, goal 1,
// row 14.1w of BENCHMARKS.md): 1 000 000 executions with
// RETRYLAB_BENCH_FULL=1, else 2 000. One op is the whole check of a copy
// of the file, read-only: the store's consistency check, then the
// checker with the CLI's resolver, and the report written
// out; heap-MB is the peak of the Go heap during the op (runtime/metrics,
// sampled every 10 ms), which the mapped file does not count in.
func BenchmarkCheckWide(b *testing.B) {
	opts := gen.Options{Executions: 2000, AttemptsPerStep: 1, Seed: 1}
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		opts.Executions = 1_000_000
	}
	path, _, err := gen.Cached(context.Background(), gen.CacheDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	peak := heapPeak()
	b.ResetTimer()
	for range b.N {
		if err := db.Check(); err != nil { // as runCheck does first
			b.Fatal(err)
		}
		rep, err := check.CheckDB(db, check.Options{Resolve: planResolver(scenario.NewCatalog(fixtures.FS))})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Executions != opts.Executions {
			b.Fatalf("checked %d executions, want %d", rep.Executions, opts.Executions)
		}
		rep.Write(io.Discard, maxListedViolations)
	}
	b.StopTimer()
	b.ReportMetric(peak()/(1<<20), "heap-MB")
}

// heapPeak samples the Go heap's live objects every 10 ms until the
// returned function is called, which answers the largest sample in bytes.
func heapPeak() func() float64 {
	const name = "/memory/classes/heap/objects:bytes"
	var (
		mu   sync.Mutex
		top  uint64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: name}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			top = max(top, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return float64(top)
	}
}
