package execindex

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// benchRows is 1 000 000 with RETRYLAB_BENCH_FULL=1, else 20 000.
func benchRows() int {
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		return 1_000_000
	}
	return 20_000
}

// BenchmarkFind answers, in turn, each filter a user types letter by letter
// over an index of generated-like executions (ids of 13 characters, six
// scenarios, five statuses, four policies, one in eight with duplicates).
// One op is one Find of a 48-row page; p50/max per query in ms.
func BenchmarkFind(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	ix := New()
	scens := []string{"gen-naive", "gen-safe", "gen-crash-resume", "gen-invoice-crm", "gen-unsafe", "gen-give-up"}
	for i := range benchRows() {
		x := randomExec(rng, fmt.Sprintf("exec_%08X", rng.Uint32())) // upper case, as generated ids
		x.Scenario = scens[i%len(scens)]
		x.Duplicates = rng.IntN(8) == 0
		if err := ix.Put(x); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"c", "co", "com", "comp", "k", "ke", "key", "keys", "keys+", "g", "ge", "gen", "gen-",
		"gen-n", "gen-naive", "✖", "dup", "0", "00", "007", "e", "ex", "exec", "exec_", "exec_a", "zz"}
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	worst := map[string]time.Duration{}
	for i := range b.N {
		q := queries[i%len(queries)]
		t := time.Now()
		if _, _, err := ix.Find(Parse(q), 0, 48); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t)
		lat = append(lat, d)
		worst[q] = max(worst[q], d)
	}
	b.StopTimer()
	b.Logf("slowest per query: %v", worst)
	slicesSort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
}

func slicesSort(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
