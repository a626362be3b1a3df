package engine_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
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
// takes the resume; and Close ends every worker process.
func TestKeptWorkers(t *testing.T) {
	t.Parallel()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS),
		KeepWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})

	// One kept process (started when the host opened, or by the first
	// run if that one was not waiting yet) plays run after run: three runs,
	// at most two processes, where each run used to start its own.
	pids := map[int]bool{}
	var last int
	for _, c := range []struct{ name, id string }{{"safe", safeExec}, {"naive", naiveExec}, {"one-send", "exec_M4TX"}} {
		wantStatus(t, start(t, h, c.name), history.StatusCompleted, 0)
		got := workerPIDs(t, h, c.id)
		if len(got) != 1 {
			t.Fatalf("%s: worker pids %v, want one run", c.id, got)
		}
		pids[got[0]] = true
		last = got[0]
	}
	if len(pids) > 2 {
		t.Fatalf("three runs took %d worker processes (%v), want the kept one reused", len(pids), pids)
	}
	kept := last
	// Killing a run that has ended leaves the idle process alone.
	if err := h.Kill("exec_M4TX"); err == nil {
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
	if len(wc) != 1 || wc[0].Fault != string(fault.CrashAfterEffect) {
		t.Fatalf("WorkerCrashed %+v, want one, by crash-after-effect", wc)
	}
	if err := syscall.Kill(wc[0].PID, 0); err == nil {
		t.Fatalf("the crashed worker %d is still alive", wc[0].PID)
	}
	resumed := resume(t, h, crashExec)
	wantStatus(t, resumed, history.StatusCompleted, 0)
	runs := workerPIDs(t, h, crashExec)
	if len(runs) != 2 || runs[1] == wc[0].PID {
		t.Fatalf("worker pids of %s: %v; the resume must be played by another process than the killed one", crashExec, runs)
	}

	// Close ends every worker process, the idle ones too.
	for _, pid := range runs {
		pids[pid] = true
	}
	if err := h.Store().Check(); err != nil {
		t.Errorf("database check: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	for pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("worker %d outlived its host", pid)
		}
	}
}

// TestKillAfterTheEndKeepsIt: a kill that lands after the worker reported
// the run's end (here an escalation: an unsafe tool's outcome is unknown),
// before its process exited, is recorded, but the execution stays
// escalated; marked killed, it would be resumed and the unsafe step sent
// again. The kill is sent the moment the escalation is published, which
// is before the worker has even had the answer to its report.
func TestKillAfterTheEndKeepsIt(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	const id = "exec_8UN1"
	ch, stop := h.Subscribe(1 << 12)
	defer stop()
	run, err := h.Start("unsafe-escalates", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for no := range ch {
		if no.Event != nil && no.Execution == id && no.Event.Type == history.Escalated {
			if err := h.Kill(id); err != nil {
				t.Logf("kill: %v", err)
			}
			break
		}
	}
	res := run.Result()
	x, err := h.Execution(id)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != history.StatusEscalated || res.Status != history.StatusEscalated {
		t.Fatalf("execution %s, run ended %+v: want it to stay escalated", x.Status, res)
	}
	crashed := pick(events(t, h, id), history.WorkerCrashed, 1, "")
	switch res.ExitCode {
	case engine.ExitKilled:
		if len(crashed) != 1 {
			t.Errorf("the kill after the end is not recorded: %+v", crashed)
		}
	default:
		t.Logf("the worker exited (%d) before the kill landed; nothing to record", res.ExitCode)
	}
	if _, err := h.Resume(id); err == nil {
		t.Errorf("an escalated execution could be resumed")
	}
}

// TestBatchedReportsKeepOrder: the events a worker reports in batches (a
// turn and a call with the attempt's permission, an answer with the
// journal write or the retry) are recorded in the order it reported them,
// each stamped no earlier than the one before, whatever request carried it.
func TestBatchedReportsKeepOrder(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	wantStatus(t, start(t, h, "one-send"), history.StatusCompleted, 0)
	wantStatus(t, start(t, h, "safe"), history.StatusCompleted, 0)
	for _, id := range []string{"exec_M4TX", safeExec} {
		evs := events(t, h, id)
		for i, ev := range evs {
			if i > 0 && ev.Time.Before(evs[i-1].Time) {
				t.Errorf("%s: event %d (%s) at %s is stamped before event %d (%s) at %s", id,
					ev.Seq, ev.Type, ev.Time, evs[i-1].Seq, evs[i-1].Type, evs[i-1].Time)
			}
		}
	}
	var got []history.Type
	for _, ev := range events(t, h, "exec_M4TX") {
		got = append(got, ev.Type)
	}
	want := []history.Type{history.ExecutionStarted, history.WorkerStarted, history.TurnStarted, history.ToolCallScheduled,
		history.AttemptStarted, history.EffectObserved, history.AttemptFinished, history.StepRecorded, history.ExecutionCompleted}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("one-send recorded %v, want %v", got, want)
	}
}
