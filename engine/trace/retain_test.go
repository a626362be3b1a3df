package trace_test

import (
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

// longCall is a history of one call retried n times, each attempt failing
// with a fault and a retry, and an effect of attempt n-1 that arrives late
// (after attempt n started): the shape of a long generated execution.
func longCall(n int) []trace.Event {
	ev := []trace.Event{
		{Kind: trace.ExecutionStarted, Run: 1, Time: t0, Scenario: "long", Text: "keys"},
		{Kind: trace.RunStarted, Run: 1, Time: t0},
		{Kind: trace.CallScheduled, Run: 1, Time: t0, Call: "s1", Tool: "send"},
	}
	at := t0
	for i := 1; i <= n; i++ {
		at = at.Add(time.Second)
		ev = append(ev,
			trace.Event{Kind: trace.AttemptStarted, Run: 1, Time: at, Call: "s1", Attempt: i, Key: "k"},
			trace.Event{Kind: trace.FaultInjected, Run: 1, Time: at, Call: "s1", Attempt: i, Fault: "server-error"},
			trace.Event{Kind: trace.AttemptFinished, Run: 1, Time: at, Call: "s1", Attempt: i, Outcome: trace.OutcomeError})
		if i < n {
			ev = append(ev, trace.Event{Kind: trace.RetryScheduled, Run: 1, Time: at, Call: "s1", Attempt: i, Delay: time.Second})
		}
		if i == n {
			mail := &trace.Effect{Service: "mail", ID: "m", Target: "a@b", Summary: "hi"}
			ev = append(ev,
				trace.Event{Kind: trace.EffectObserved, Run: 1, Time: at, Call: "s1", Attempt: n - 1, Effect: mail},
				trace.Event{Kind: trace.EffectObserved, Run: 1, Time: at, Call: "s1", Attempt: n, Effect: mail})
		}
	}
	return append(ev, trace.Event{Kind: trace.ExecutionEnded, Run: 1, Time: at, Outcome: trace.OutcomeError})
}

// Under Retain a call keeps only its latest attempts; what a streaming
// reader needs of the fresh ones is the same as in the whole fold, and
// nothing released turns into an anomaly.
func TestRetainReleasesSettledAttempts(t *testing.T) {
	const n, keep = 1000, 3
	events := longCall(n)
	full := trace.Fold("x", events)
	lean := trace.New("x")
	lean.Retain(keep)
	for _, e := range events {
		lean.Apply(e)
		if c := lean.LastCall("s1"); c != nil && len(c.Attempts) > keep+1 {
			t.Fatalf("after seq %d the call holds %d attempts; Retain(%d)", lean.LastSeq, len(c.Attempts), keep)
		}
	}
	c := lean.LastCall("s1")
	if got := c.Released + len(c.Attempts); got != n || len(c.Attempts) != keep {
		t.Errorf("released %d + kept %d, want %d + %d", c.Released, len(c.Attempts), n-keep, keep)
	}
	if len(lean.Anomalies) != 0 || len(full.Anomalies) != 0 {
		t.Errorf("anomalies: lean %v, full %v", lean.Anomalies, full.Anomalies)
	}
	if !lean.Duplicates() || !full.Duplicates() {
		t.Errorf("duplicates: lean %v, full %v; the late effect of a released attempt still counts", lean.Duplicates(), full.Duplicates())
	}
	for i := n - keep + 1; i <= n; i++ {
		a, b := lean.Attempt("s1", i), full.Attempt("s1", i)
		if a == nil || b == nil || a.Mark() != b.Mark() || len(a.Faults) != len(b.Faults) || a.Retry != b.Retry {
			t.Errorf("attempt %d: lean %+v, full %+v", i, a, b)
		}
	}
	if lean.Attempt("s1", 1) != nil {
		t.Error("attempt 1 is still held")
	}
	if lean.LastAttempts()["s1"] != n || lean.AttemptCounts()["s1"] != n || lean.Outcome() != full.Outcome() {
		t.Errorf("progress: last %d, count %d, outcome %s", lean.LastAttempts()["s1"], lean.AttemptCounts()["s1"], lean.Outcome())
	}
}
