package trace_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

var t0 = time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)

// An importer's events carry no run numbers and may keep only an
// activity's last attempt (Temporal): the fold still makes runs, attempts
// not kept, and effects that arrived before their attempt.
func TestApplyImporterEvents(t *testing.T) {
	events := []trace.Event{
		{Kind: trace.ExecutionStarted, Time: t0, Scenario: "OrderWorkflow", Text: "temporal"},
		{Kind: trace.RunStarted, Time: t0},
		{Kind: trace.CallScheduled, Time: t0, Call: "5", Tool: "ChargeCard"},
		{Kind: trace.AttemptsNotKept, Time: t0, Call: "5", Attempt: 4, Error: "card service 503"},
		{Kind: trace.EffectObserved, Time: t0, Call: "5", Attempt: 4, Effect: &trace.Effect{Service: "payments", ID: "ch_1"}},
		{Kind: trace.AttemptStarted, Time: t0.Add(time.Second), Call: "5", Attempt: 4},
		{Kind: trace.AttemptFinished, Time: t0.Add(2 * time.Second), Call: "5", Attempt: 4, Outcome: trace.OutcomeOK},
		{Kind: trace.RunCrashed, Time: t0.Add(3 * time.Second)},
		{Kind: trace.RunStarted, Time: t0.Add(13 * time.Second)},
		{Kind: trace.ExecutionEnded, Time: t0.Add(14 * time.Second), Outcome: trace.OutcomeOK},
	}
	tr := trace.Fold("wf-1", events)
	want := `run 1 policy=temporal faults=[] end=☠
  call ChargeCard 5
    ⋯ #3 error
    ✓ #4 ok effect=payments:
  ☠ run.crashed
gap before run 2 afterCrash=true
run 2 policy=temporal faults=[] end=✓
  ✓ execution.ended
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if r := tr.Runs[1]; r.Idle != 10*time.Second {
		t.Errorf("idle before run 2: %s, want 10s", r.Idle)
	}
	if tr.LastSeq != uint64(len(events)) {
		t.Errorf("LastSeq %d: events without Seq are numbered in order", tr.LastSeq)
	}
	if a := tr.Attempt("5", 4); a == nil || len(a.Effects) != 1 || tr.UnmatchedEffects() != 0 {
		t.Errorf("the early effect did not reach attempt 4: %+v, %d unmatched", a, tr.UnmatchedEffects())
	}
}

// What cannot be true of a history is reported, not folded silently.
func TestApplyAnomalies(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Seq: 1, Kind: trace.RunStarted, Run: 1},
		{Seq: 2, Kind: trace.AttemptStarted, Run: 1, Call: "s1", Attempt: 1},
		{Seq: 3, Kind: trace.AttemptStarted, Run: 1, Call: "s1", Attempt: 1},
		{Seq: 5, Kind: trace.AttemptFinished, Run: 1, Call: "s2", Attempt: 1},
		{Seq: 6, Kind: trace.FaultInjected, Run: 1, Call: "s3", Attempt: 2, Fault: "server-error"},
		{Seq: 7, Kind: trace.EffectObserved, Run: 1, Call: "s4", Attempt: 1, Effect: &trace.Effect{Service: "mail", ID: "m"}},
	})
	want := []string{
		"2 s1 attempt 1 of a call that was never scheduled",
		"3 s1 attempt 1 started twice",
		"5 s2 history jumps from event 3 to 5",
		"5 s2 attempt 1 finished without starting",
		"6 s3 fault server-error injected into attempt 2, which never started",
	}
	if len(tr.Anomalies) != len(want) {
		t.Fatalf("anomalies %+v, want %d", tr.Anomalies, len(want))
	}
	for i, a := range tr.Anomalies {
		if got := fmt.Sprintf("%d %s %s", a.Seq, a.Call, a.Text); got != want[i] {
			t.Errorf("anomaly %d: %q, want %q", i, got, want[i])
		}
	}
	if tr.UnmatchedEffects() != 1 {
		t.Errorf("unmatched effects %d, want 1", tr.UnmatchedEffects())
	}
}

// A run's worker may report before its start is recorded: the run number,
// not RunStarted, opens the run, and the attempt left open by a crash is
// the only one the crash marks.
func TestApplyRunOpenedByNumber(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Seq: 1, Kind: trace.ExecutionStarted, Run: 1, Text: "none", Time: t0},
		{Seq: 2, Kind: trace.RunStarted, Run: 1, PID: 10, Time: t0},
		{Seq: 3, Kind: trace.CallScheduled, Run: 1, Call: "a", Tool: "t", Time: t0},
		{Seq: 4, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 1, Time: t0},
		{Seq: 5, Kind: trace.AttemptFinished, Run: 1, Call: "a", Attempt: 1, Outcome: trace.OutcomeTimeout, Time: t0},
		{Seq: 6, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 2, Time: t0},
		{Seq: 7, Kind: trace.RunCrashed, Run: 1, ExitCode: 137, Time: t0.Add(time.Second)},
		{Seq: 8, Kind: trace.TurnStarted, Run: 2, Turn: 1, Time: t0.Add(5 * time.Second)},
		{Seq: 9, Kind: trace.RunStarted, Run: 2, PID: 11, Text: "keys", Time: t0.Add(5 * time.Second)},
	})
	want := `run 1 policy=none faults=[] end=☠
  call t a
    ⏱ #1 timeout
    ☠ #2
  ☠ run.crashed
gap before run 2 afterCrash=true
run 2 policy=keys faults=[] end=…
  turn 1
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if tr.Runs[1].PID != 11 || tr.Runs[1].Idle != 4*time.Second {
		t.Errorf("run 2: pid %d idle %s", tr.Runs[1].PID, tr.Runs[1].Idle)
	}
}

// Glyphs and words come from one table; the legend lists ✎ too.
func TestLegend(t *testing.T) {
	want := "✓ ok  ⏱ timeout  ↺ deduplicated by key  ⟲ replayed from journal  ✎ journaled  ☠ worker killed  ⚑ escalated  ◆ unknown to caller; delivered  ✖ failed  ⚠ duplicates"
	if got := trace.Legend(); got != want {
		t.Errorf("legend\n%q\nwant\n%q", got, want)
	}
	if trace.Mark(-1).Glyph() != "" || trace.MarkNone.Glyph() != "" {
		t.Error("no glyph for no mark")
	}
}

// A run that ends with the execution going on elsewhere (continue-as-new)
// ends the run, not the execution; notes land in the current turn.
func TestApplyRunEndedAndNotes(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Kind: trace.ExecutionStarted, Run: 1, Scenario: "Loop", Time: t0},
		{Kind: trace.TurnStarted, Run: 1, Turn: 1, Time: t0},
		{Kind: trace.Noted, Run: 1, Text: "timer 1 started (1s)", Time: t0},
		{Kind: trace.RunEnded, Run: 1, Outcome: trace.OutcomeOK, Text: "continued as new", Time: t0.Add(time.Second)},
		{Kind: trace.RunStarted, Run: 2, Time: t0.Add(2 * time.Second)},
		{Kind: trace.Noted, Run: 2, Text: "signal go", Time: t0.Add(2 * time.Second)},
	})
	want := `run 1 policy= faults=[] end=✓
  turn 1
     noted
  ✓ run.ended
gap before run 2 afterCrash=false
run 2 policy= faults=[] end=…
   noted
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if tr.End != nil || tr.Outcome() != trace.MarkRunning {
		t.Errorf("a run that continued as new ended the execution: %+v", tr.End)
	}
	if n := tr.Runs[0].End; n == nil || n.Text != "continued as new" {
		t.Errorf("run 1 end %+v", n)
	}
}

// Attempts a source did not keep take the outcome it gives them (a
// timeout: the caller never learnt what they did), an error otherwise.
func TestApplyNotKeptOutcome(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Kind: trace.CallScheduled, Run: 1, Call: "a", Tool: "SendEmail", Time: t0},
		{Kind: trace.AttemptsNotKept, Run: 1, Call: "a", Attempt: 2, Outcome: trace.OutcomeTimeout, Error: "start-to-close timeout", Time: t0},
		{Kind: trace.CallScheduled, Run: 1, Call: "b", Tool: "ChargeCard", Time: t0},
		{Kind: trace.AttemptsNotKept, Run: 1, Call: "b", Attempt: 3, Error: "503", Time: t0},
	})
	a, b := tr.LastCall("a").Attempts[0], tr.LastCall("b").Attempts[0]
	if a.Outcome != trace.OutcomeTimeout || !a.Unknown() || a.Mark() != trace.MarkNotKept || a.N != 1 {
		t.Errorf("a: %+v", a)
	}
	if b.Outcome != trace.OutcomeError || b.Unknown() || b.NotKept != 2 || b.N != 2 {
		t.Errorf("b: %+v", b)
	}
}

// What a new run starts from: where each call's attempts go on counting,
// which planned faults fired, and which calls never finished (with a
// journal, an ok answer that never reached it leaves the call unfinished).
func TestApplyWhatARunStartsFrom(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Seq: 1, Kind: trace.CallScheduled, Run: 1, Call: "a"},
		{Seq: 2, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 1},
		{Seq: 3, Kind: trace.FaultInjected, Run: 1, Call: "a", Attempt: 1, Fault: "timeout-after-effect", PlanIndex: 2},
		{Seq: 4, Kind: trace.AttemptFinished, Run: 1, Call: "a", Attempt: 1, Outcome: trace.OutcomeTimeout},
		{Seq: 5, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 2},
		{Seq: 6, Kind: trace.AttemptFinished, Run: 1, Call: "a", Attempt: 2, Outcome: trace.OutcomeOK},
		{Seq: 7, Kind: trace.CallScheduled, Run: 1, Call: "b"},
		{Seq: 8, Kind: trace.AttemptStarted, Run: 1, Call: "b", Attempt: 1},
		{Seq: 9, Kind: trace.CallScheduled, Run: 1, Call: "c"},
		{Seq: 10, Kind: trace.AttemptStarted, Run: 1, Call: "c", Attempt: 1},
		{Seq: 11, Kind: trace.AttemptFinished, Run: 1, Call: "c", Attempt: 1, Outcome: trace.OutcomeOK},
		{Seq: 12, Kind: trace.StepRecorded, Run: 1, Call: "c"},
		{Seq: 13, Kind: trace.RunCrashed, Run: 1, ExitCode: 137},
	})
	if got := fmt.Sprint(tr.LastAttempts()); got != "map[a:2 b:1 c:1]" {
		t.Errorf("last attempts %s", got)
	}
	if got := fmt.Sprint(tr.AttemptCounts()); got != "map[a:2 b:1 c:1]" {
		t.Errorf("attempt counts %s", got)
	}
	if got := fmt.Sprint(tr.PlansFired()); got != "map[2:true]" {
		t.Errorf("plans fired %s", got)
	}
	if got := fmt.Sprint(tr.Unfinished(true)); got != "[a b]" {
		t.Errorf("unfinished with a journal %s, want [a b]", got)
	}
	if got := fmt.Sprint(tr.Unfinished(false)); got != "[b]" {
		t.Errorf("unfinished without %s, want [b]", got)
	}
}

// A run started after the execution ended (the safe scenario run twice)
// makes it run again: its outcome is the new run's, not the old end.
func TestApplyRunAfterTheEnd(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Seq: 1, Kind: trace.RunStarted, Run: 1},
		{Seq: 2, Kind: trace.ExecutionEnded, Run: 1, Outcome: trace.OutcomeOK},
	})
	if tr.Outcome() != trace.MarkOK {
		t.Fatalf("ended: %s", tr.Outcome())
	}
	tr.Apply(trace.Event{Seq: 3, Kind: trace.RunStarted, Run: 2})
	if tr.Outcome() != trace.MarkRunning || tr.End != nil || tr.Runs[0].Mark() != trace.MarkOK {
		t.Fatalf("running again: outcome %s, end %+v, run 1 %s", tr.Outcome(), tr.End, tr.Runs[0].Mark())
	}
}

// An attempt that timed out or met a server error has an unknown outcome:
// an unsafe tool's worker escalates right after recording it, and a worker
// killed in between (its host killed with SIGKILL, say) leaves the call
// unfinished, so the next run escalates instead of repeating the call. A
// definite answer (ok, or a 4xx) closes the attempt as before.
func TestApplyUnknownOutcomeLeavesTheCallUnfinished(t *testing.T) {
	tr := trace.Fold("x", []trace.Event{
		{Seq: 1, Kind: trace.CallScheduled, Run: 1, Call: "timeout"},
		{Seq: 2, Kind: trace.AttemptStarted, Run: 1, Call: "timeout", Attempt: 1},
		{Seq: 3, Kind: trace.AttemptFinished, Run: 1, Call: "timeout", Attempt: 1, Outcome: trace.OutcomeTimeout},
		{Seq: 4, Kind: trace.CallScheduled, Run: 1, Call: "error"},
		{Seq: 5, Kind: trace.AttemptStarted, Run: 1, Call: "error", Attempt: 1},
		{Seq: 6, Kind: trace.AttemptFinished, Run: 1, Call: "error", Attempt: 1, Outcome: trace.OutcomeError},
		{Seq: 7, Kind: trace.CallScheduled, Run: 1, Call: "rejected"},
		{Seq: 8, Kind: trace.AttemptStarted, Run: 1, Call: "rejected", Attempt: 1},
		{Seq: 9, Kind: trace.AttemptFinished, Run: 1, Call: "rejected", Attempt: 1, Outcome: trace.OutcomeRejected},
		{Seq: 10, Kind: trace.CallScheduled, Run: 1, Call: "retried"},
		{Seq: 11, Kind: trace.AttemptStarted, Run: 1, Call: "retried", Attempt: 1},
		{Seq: 12, Kind: trace.AttemptFinished, Run: 1, Call: "retried", Attempt: 1, Outcome: trace.OutcomeTimeout},
		{Seq: 13, Kind: trace.AttemptStarted, Run: 1, Call: "retried", Attempt: 2},
		{Seq: 14, Kind: trace.AttemptFinished, Run: 1, Call: "retried", Attempt: 2, Outcome: trace.OutcomeOK},
		{Seq: 15, Kind: trace.StepRecorded, Run: 1, Call: "retried"},
		{Seq: 16, Kind: trace.RunCrashed, Run: 1, ExitCode: 137},
	})
	for _, journal := range []bool{true, false} {
		if got := fmt.Sprint(tr.Unfinished(journal)); got != "[timeout error]" {
			t.Errorf("unfinished (journal %v) %s, want [timeout error]", journal, got)
		}
	}
	// An escalation closes the call.
	tr = trace.Fold("y", []trace.Event{
		{Seq: 1, Kind: trace.CallScheduled, Run: 1, Call: "send"},
		{Seq: 2, Kind: trace.AttemptStarted, Run: 1, Call: "send", Attempt: 1},
		{Seq: 3, Kind: trace.AttemptFinished, Run: 1, Call: "send", Attempt: 1, Outcome: trace.OutcomeTimeout},
		{Seq: 4, Kind: trace.Escalated, Run: 1, Call: "send"},
	})
	if got := tr.Unfinished(true); len(got) != 0 {
		t.Errorf("unfinished after the escalation %v, want none", got)
	}
}

// A move of the world clock and the key it expired are notes where they
// happened: between runs at the top level (no worker ran them), during a
// run in its open turn. They open no run and leave the gap before the next
// run as long as it was.
func TestApplyClockNotes(t *testing.T) {
	events := []trace.Event{
		{Kind: trace.ExecutionStarted, Time: t0, Text: "keys+journal"},
		{Kind: trace.RunStarted, Run: 1, Time: t0},
		{Kind: trace.TurnStarted, Run: 1, Turn: 1, Time: t0},
		{Kind: trace.CallScheduled, Run: 1, Call: "step-4", Tool: "send", Key: "ik_1", Time: t0},
		{Kind: trace.ClockMoved, Time: t0, Duration: time.Hour, Offset: time.Hour},
		{Kind: trace.AttemptStarted, Run: 1, Call: "step-4", Attempt: 1, Key: "ik_1", Time: t0},
		{Kind: trace.RunCrashed, Run: 1, Time: t0.Add(time.Second), ExitCode: 137},
		{Kind: trace.ClockMoved, Time: t0.Add(5 * time.Second), Duration: 25 * time.Hour, Offset: 26 * time.Hour},
		{Kind: trace.KeyExpired, Run: 1, Call: "step-4", Attempt: 1, Key: "ik_1", Time: t0.Add(5 * time.Second), Duration: 24 * time.Hour},
		{Kind: trace.RunStarted, Run: 2, Time: t0.Add(11 * time.Second)},
	}
	tr := trace.Fold("x", events)
	want := `run 1 policy=keys+journal faults=[] end=☠
  turn 1
    call send step-4
      ☠ #1  keyed
    ⏰ clock.moved
  ☠ run.crashed
⏰ clock.moved
⏰ key.expired step-4
gap before run 2 afterCrash=true
run 2 policy=keys+journal faults=[] end=…
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if r := tr.Runs[1]; r.Idle != 10*time.Second {
		t.Errorf("idle before run 2: %s, want 10s (from the crash, not from the clock move)", r.Idle)
	}
	n := tr.Nodes[1].(*trace.Note)
	if n.Duration != 25*time.Hour || n.Offset != 26*time.Hour || n.Run != 1 {
		t.Errorf("the move's note: %+v", n)
	}
	if k := tr.Nodes[2].(*trace.Note); k.Key != "ik_1" || k.Duration != 24*time.Hour {
		t.Errorf("the expired key's note: %+v", k)
	}
}
