package trace_test

import (
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/audit"
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

// A streaming reader that forgets each attempt a few attempts after it
// finished holds only the latest ones; what it reads of them is what the
// whole fold says, and nothing forgotten turns into an anomaly.
func TestForgetReleasesReadAttempts(t *testing.T) {
	for _, keep := range []int{1, 3} {
		forgetting(t, keep)
	}
}

// forgetting folds longCall(1000) keeping keep attempts (with 1, the late
// effect reaches a forgotten attempt).
func forgetting(t *testing.T, keep int) {
	const n = 1000
	events := longCall(n)
	full := trace.New("x")
	fullDelivered := audit.WatchDeliveries(full)
	for _, e := range events {
		full.Apply(e)
	}
	lean := trace.New("x")
	leanDelivered := audit.WatchDeliveries(lean)
	for _, e := range events {
		lean.Apply(e)
		if e.Kind == trace.AttemptStarted && e.Attempt > keep {
			lean.Forget(lean.Attempt("s1", e.Attempt-keep))
		}
		if c := lean.LastCall("s1"); c != nil && len(c.Attempts) > keep {
			t.Fatalf("after seq %d the call holds %d attempts", lean.LastSeq, len(c.Attempts))
		}
	}
	c := lean.LastCall("s1")
	if got := c.Released + len(c.Attempts); got != n || len(c.Attempts) != keep {
		t.Errorf("released %d + kept %d, want %d + %d", c.Released, len(c.Attempts), n-keep, keep)
	}
	if len(c.Nodes) != keep {
		t.Errorf("the call holds %d nodes", len(c.Nodes))
	}
	if len(lean.Anomalies) != 0 || len(full.Anomalies) != 0 {
		t.Errorf("anomalies: lean %v, full %v", lean.Anomalies, full.Anomalies)
	}
	if !leanDelivered.Duplicated() || !fullDelivered.Duplicated() {
		t.Errorf("duplicates: lean %v, full %v; the late effect of a released attempt still counts", leanDelivered.Duplicated(), fullDelivered.Duplicated())
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

// A forgotten attempt still counts as started: starting it again is the
// same anomaly as in the whole fold, and attempts never started are not
// taken for forgotten ones, whatever order they are forgotten in.
func TestForgottenAttemptsStillStarted(t *testing.T) {
	events := longCall(6)
	tr := trace.New("x")
	for _, e := range events[:len(events)-1] {
		tr.Apply(e)
	}
	for _, n := range []int{5, 1, 3, 2} {
		tr.Forget(tr.Attempt("s1", n))
	}
	tr.Apply(trace.Event{Kind: trace.AttemptStarted, Run: 1, Time: t0, Call: "s1", Attempt: 2})
	tr.Apply(trace.Event{Kind: trace.FaultInjected, Run: 1, Time: t0, Call: "s1", Attempt: 9, Fault: "server-error"})
	tr.Apply(trace.Event{Kind: trace.FaultInjected, Run: 1, Time: t0, Call: "s1", Attempt: 3, Fault: "server-error"})
	var got []string
	for _, an := range tr.Anomalies {
		got = append(got, an.Text)
	}
	want := []string{"attempt 2 started twice", "fault server-error injected into attempt 9, which never started"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("anomalies %q, want %q", got, want)
	}
}
