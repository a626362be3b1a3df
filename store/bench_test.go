package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const benchEventSize = 200

func benchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	return db
}

func reportRate(b *testing.B, events int, elapsed time.Duration) {
	if elapsed > 0 {
		b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	}
}

// BenchmarkAppendSingle: one goroutine, one fsynced Update per 200-byte event.
func BenchmarkAppendSingle(b *testing.B) {
	db := benchDB(b)
	data := make([]byte, benchEventSize)
	encode := func(uint64) ([]byte, error) { return data, nil }
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		err := db.Update(func(tx *Tx) error {
			_, err := tx.AppendEvent("bench", encode)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportRate(b, n, time.Since(start))
}

// BenchmarkAppendBareBolt is the baseline: the same bytes and key scheme
// written with plain bbolt db.Update calls, no store layer.
func BenchmarkAppendBareBolt(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		h, err := tx.CreateBucketIfNotExists([]byte(bucketHistories))
		if err != nil {
			return err
		}
		_, err = h.CreateBucketIfNotExists([]byte("bench"))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchEventSize)
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		err := db.Update(func(tx *bolt.Tx) error {
			h := tx.Bucket([]byte(bucketHistories)).Bucket([]byte("bench"))
			seq, err := h.NextSequence()
			if err != nil {
				return err
			}
			return h.Put(U64(seq), data)
		})
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportRate(b, n, time.Since(start))
}

// BenchmarkAppendConcurrent64: b.N events appended by 64 goroutines, each to
// its own execution, so group commit shares fsyncs between them.
func BenchmarkAppendConcurrent64(b *testing.B) {
	db := benchDB(b)
	data := make([]byte, benchEventSize)
	encode := func(uint64) ([]byte, error) { return data, nil }
	const workers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := fmt.Sprintf("bench-%02d", w)
			for next.Add(1) <= int64(b.N) {
				err := db.Update(func(tx *Tx) error {
					_, err := tx.AppendEvent(exec, encode)
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportRate(b, b.N, elapsed)
}

// BenchmarkCheckAtOpen: what a read-write Open of a file within CheckUpTo
// spends checking it, on a 32 MB file of 2 000 histories: the pages' bounds
// walked from the file (walk), and with the records' checksums
// (walk-sums, what a writer's Open walks), bbolt's consistency check (bbolt), and both
// as Open runs them (open, the whole Open). Each reports ms per MB.
func BenchmarkCheckAtOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "check.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for e := range 2000 {
		exec := fmt.Sprintf("exec-%04d", e)
		err := db.Update(func(tx *Tx) error {
			for range 60 {
				if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
					return payload(exec, seq, benchEventSize), nil
				}); err != nil {
					return err
				}
			}
			return tx.PutExecution(exec, []byte("rec"))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(info.Size()) / (1 << 20)
	perMB := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N)/mb, "ms/MB")
		b.ReportMetric(mb, "MB")
	}
	b.Run("walk", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			if err := walkFile(path, os.Getpagesize()); err != nil {
				b.Fatal(err)
			}
		}
		perMB(b, start)
	})
	b.Run("walk-sums", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			if err := walkFileSums(path, os.Getpagesize(), sumAll); err != nil {
				b.Fatal(err)
			}
		}
		perMB(b, start)
	})
	b.Run("bbolt", func(b *testing.B) {
		bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer bdb.Close()
		start := time.Now()
		for range b.N {
			if err := bdb.View(func(tx *bolt.Tx) error { return checkTx(tx) }); err != nil {
				b.Fatal(err)
			}
		}
		perMB(b, start)
	})
	b.Run("open", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			db, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
		perMB(b, start)
	})
}
