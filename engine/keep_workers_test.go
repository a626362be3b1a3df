package engine_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/fixtures"
)

// workerPIDs lists the pids of an execution's WorkerStarted events, by run.
func workerPIDs(t *testing.T, h *engine.Host, id string) []int {
	t.Helper()
	var pids []int
	for _, ev := range pick(events(t, h, id), history.WorkerStarted, 0, "") {
		pids = append(pids, ev.PID)
	}
	return pids
}

// TestKeptWorkers: with Config.KeepWorkers a worker that finished its run
// plays the next one in the same process; a crash fault is still a SIGKILL
// of that process (exit 137, WorkerCrashed), after which a new process
// takes the resume; and Close ends the idle processes.
func TestKeptWorkers(t *testing.T) {
	t.Parallel()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: fixtures.FS,
		KeepWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})

	first := start(t, h, "safe")
	wantStatus(t, first, history.StatusCompleted, 0)
	second := start(t, h, "naive")
	wantStatus(t, second, history.StatusCompleted, 0)
	a, b := workerPIDs(t, h, safeExec), workerPIDs(t, h, naiveExec)
	if len(a) != 1 || len(b) != 1 || a[0] != b[0] {
		t.Fatalf("worker pids %v then %v: want the second run played by the first run's process", a, b)
	}
	kept := a[0]
	// Killing a run that has ended leaves the idle process alone.
	if err := h.Kill(naiveExec); err == nil {
		t.Errorf("Kill of a finished run found a live worker")
	}
	if err := syscall.Kill(kept, 0); err != nil {
		t.Fatalf("the kept worker %d is gone: %v", kept, err)
	}

	// A crash fault kills the kept process itself.
	crashed := start(t, h, "crash")
	wantStatus(t, crashed, history.StatusKilled, engine.ExitKilled)
	evs := events(t, h, crashExec)
	wc := pick(evs, history.WorkerCrashed, 1, "")
	if len(wc) != 1 || wc[0].Fault != string(fault.CrashAfterEffect) || wc[0].PID != kept {
		t.Fatalf("WorkerCrashed %+v, want the kept process %d killed by crash-after-effect", wc, kept)
	}
	if err := syscall.Kill(kept, 0); err == nil {
		t.Fatalf("the crashed worker %d is still alive", kept)
	}
	resumed := resume(t, h, crashExec)
	wantStatus(t, resumed, history.StatusCompleted, 0)
	pids := workerPIDs(t, h, crashExec)
	if len(pids) != 2 || pids[1] == kept {
		t.Fatalf("worker pids of %s: %v; the resume must start a new process", crashExec, pids)
	}

	// Close ends the idle worker.
	idle := pids[1]
	if err := h.Check(); err != nil {
		t.Errorf("database check: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := syscall.Kill(idle, 0); err == nil {
		t.Errorf("the idle worker %d outlived its host", idle)
	}
}
