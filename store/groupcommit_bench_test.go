package store

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkGroupCommitRatio measures group commit in the store itself, in
// one run: rounds alternate between one execution appending alone (one
// fsynced commit per event) and 64 executions appending at once from 64
// goroutines, each event acknowledged only after the commit that holds it.
// One op is one event of the 64; the metrics are both rates and their ratio.
func BenchmarkGroupCommitRatio(b *testing.B) {
	const workers, single, each = 64, 50, 10
	db := benchDB(b)
	data := make([]byte, benchEventSize)
	encode := func(uint64) ([]byte, error) { return data, nil }
	appendOne := func(exec string) error {
		return db.Update(func(tx *Tx) error {
			_, err := tx.AppendEvent(exec, encode)
			return err
		})
	}
	rounds := max(1, (b.N+workers*each-1)/(workers*each))
	var tSingle, tMany time.Duration
	b.ResetTimer()
	for range rounds {
		b.StopTimer()
		start := time.Now()
		for range single {
			if err := appendOne("single"); err != nil {
				b.Fatal(err)
			}
		}
		tSingle += time.Since(start)
		b.StartTimer()
		start = time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				exec := fmt.Sprintf("exec-%02d", w)
				for range each {
					if err := appendOne(exec); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		tMany += time.Since(start)
	}
	b.StopTimer()
	rs := float64(rounds*single) / tSingle.Seconds()
	rm := float64(rounds*workers*each) / tMany.Seconds()
	b.ReportMetric(rs, "single-events/s")
	b.ReportMetric(rm, "concurrent64-events/s")
	b.ReportMetric(rm/rs, "concurrent/single")
}
