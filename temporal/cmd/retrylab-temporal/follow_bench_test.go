package main

import (
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// BenchmarkFollowLatency measures what following a live workflow adds: from
// just before a signal is sent (its event is committed before the call
// returns) until `import --follow`'s loop has stored that event in
// retrylab's database (validated, saved, fsynced). Reported as p50 and p99
// over b.N signals; each is an upper bound of commit-to-stored.
func BenchmarkFollowLatency(b *testing.B) {
	c, ctx, _ := startWaiter(b, "waiter")
	db, err := store.Open(filepath.Join(b.TempDir(), "retrylab.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()

	h := &historypb.History{}
	stored := make(chan time.Time, 1<<16)
	var mu sync.Mutex
	counted, known := 0, 0
	batch := func() error {
		if err := rltemporal.Validate(h); err != nil {
			return err
		}
		if err := db.Update(func(tx *store.Tx) error { _, err := rltemporal.SaveFrom(tx, h, "bench", known); return err }); err != nil {
			return err
		}
		known = len(h.Events)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if len(h.Events) <= counted {
			return nil // read again from the start: nothing new yet
		}
		for _, ev := range h.Events[counted:] {
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
				stored <- now
			}
		}
		counted = len(h.Events)
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- fetchHistory(ctx, c.WorkflowService(), "default", "waiter", "", h, batch) }()

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := c.SignalWorkflow(ctx, "waiter", "", "tick", "tick"); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-stored:
			lat = append(lat, at.Sub(t0))
		case err := <-done:
			b.Fatalf("follower ended: %v", err)
		case <-time.After(30 * time.Second):
			b.Fatal("the signal's event was never stored")
		}
	}
	b.StopTimer()
	if err := c.SignalWorkflow(ctx, "waiter", "", "tick", "stop"); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatalf("follower: %v", err)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
