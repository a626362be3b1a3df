package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// A worker that reports before the host has recorded its WorkerStarted
// (a process started under load, or a host slow to commit) waits for it:
// the run's history starts with the worker's start, then what it sent.
func TestWorkerStartedComesBeforeTheWorkersEvents(t *testing.T) {
	t.Parallel()
	h, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	// Time enough for the worker to send its first events before the
	// host records its start.
	h.beforeWorkerStarted = func() { time.Sleep(300 * time.Millisecond) }
	r, err := h.Start("naive", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	evs, err := h.Events(r.Execution, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []history.Type
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if len(types) < 3 || types[0] != history.ExecutionStarted || types[1] != history.WorkerStarted {
		t.Fatalf("history begins %v, want ExecutionStarted, WorkerStarted, then the worker's events", types)
	}
	for i, ty := range types[2:] {
		if ty == history.WorkerStarted {
			t.Errorf("a second WorkerStarted at %d: %v", i+2, types)
		}
	}
}
