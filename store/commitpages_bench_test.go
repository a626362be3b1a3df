package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkGroupCommitPages is 1b″'s 64 at once on the store alone, with
// events like the runtime's (about 370 bytes, repeating each other as an
// execution's events do) in histories that already hold sealed chunks: 64
// goroutines each append to a history of their own, one event an Update.
// Its metrics say what a group commit costs: the pages bbolt writes per
// commit (its TxStats), the time of those writes and fsyncs per commit,
// the writers per commit, and the events per second. One op is one event.
func BenchmarkGroupCommitPages(b *testing.B) {
	const workers, before = 64, 40
	db := benchDB(b)
	event := func(exec string, seq uint64) []byte {
		return fmt.Appendf(nil, `{"seq":%d,"type":"AttemptFinished","exec":%q,"attempt":%d,"tool":"send_invoice_email",`+
			`"request":{"to":"alex@initech.com","subject":"Your April invoice","body":"Hello Alex, please find attached invoice INV-%04d for April. Kind regards, Billing"},`+
			`"response":{"status":200,"body":{"id":"msg_%06x","queued":true}},"took_ns":%d}`, seq, exec, seq%4+1, seq%7919, seq*2654435761%(1<<24), 1000000+seq*7717%900000)
	}
	execs := make([]string, workers)
	for w := range execs {
		execs[w] = fmt.Sprintf("exec_bench%02d", w)
	}
	// Histories of some chunks each, written in turns as executions run.
	for range before {
		if err := db.Update(func(tx *Tx) error {
			for _, exec := range execs {
				if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return event(exec, seq), nil }); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	var (
		last    atomic.Pointer[bolt.Tx]
		commits atomic.Int64
	)
	counted := func(exec string) error {
		return db.Update(func(tx *Tx) error {
			if last.Swap(tx.tx) != tx.tx {
				commits.Add(1)
			}
			_, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return event(exec, seq), nil })
			return err
		})
	}
	per := max(1, (b.N+workers-1)/workers)
	s0 := db.bolt.Stats().TxStats
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, exec := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := counted(exec); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	s1 := db.bolt.Stats().TxStats
	n := float64(commits.Load())
	b.ReportMetric(float64(s1.GetWrite()-s0.GetWrite())/n, "pages/commit")
	b.ReportMetric(float64((s1.GetWriteTime()-s0.GetWriteTime()).Microseconds())/n, "write-µs/commit")
	b.ReportMetric(float64(per*workers)/n, "writers/commit")
	b.ReportMetric(float64(per*workers)/elapsed.Seconds(), "events/s")
}
