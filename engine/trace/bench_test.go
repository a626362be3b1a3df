package trace_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

// synth is a history of about n events: one run of calls, each with a
// timed-out attempt, a retry, an ok attempt with its effect, and a record.
func synth(n int) []trace.Event {
	evs := []trace.Event{{Kind: trace.ExecutionStarted, Run: 1, Text: "none", Time: t0},
		{Kind: trace.RunStarted, Run: 1, PID: 1, Time: t0}, {Kind: trace.TurnStarted, Run: 1, Turn: 1, Time: t0}}
	for i := 0; len(evs) < n; i++ {
		evs = append(evs, callEvents(i)...)
	}
	evs = evs[:n]
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	return evs
}

func callEvents(i int) []trace.Event {
	step := fmt.Sprintf("step-%d", i)
	fx := &trace.Effect{Service: "mail", ID: fmt.Sprintf("msg_%d", i), Target: "a@b"}
	return []trace.Event{
		{Kind: trace.CallScheduled, Run: 1, Call: step, Tool: "send", Time: t0},
		{Kind: trace.AttemptStarted, Run: 1, Call: step, Attempt: 1, Time: t0},
		{Kind: trace.AttemptFinished, Run: 1, Call: step, Attempt: 1, Outcome: trace.OutcomeTimeout, Duration: time.Second, Time: t0},
		{Kind: trace.RetryScheduled, Run: 1, Call: step, Attempt: 1, Delay: time.Millisecond, Time: t0},
		{Kind: trace.AttemptStarted, Run: 1, Call: step, Attempt: 2, Time: t0},
		{Kind: trace.EffectObserved, Run: 1, Call: step, Attempt: 2, Effect: fx, Time: t0},
		{Kind: trace.AttemptFinished, Run: 1, Call: step, Attempt: 2, Outcome: trace.OutcomeOK, Time: t0},
		{Kind: trace.StepRecorded, Run: 1, Call: step, Time: t0},
	}
}

// BenchmarkApplyLive is the cost of applying one live event to a trace
// that already holds size events. The trace is folded afresh (untimed)
// every 1 000 events, so each measured event lands on a trace of size to
// size+1 000 events. Goal: at 100 000 at most 1.2× the cost at 1 000.
func BenchmarkApplyLive(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			base := synth(size)
			next := synth(size + 1000)[size:]
			var tr *trace.Trace
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % len(next)
				if j == 0 {
					b.StopTimer()
					tr = trace.Fold("bench", base)
					b.StartTimer()
				}
				tr.Apply(next[j])
			}
		})
	}
}

// The fold of a long history is exactly the fold of its parts applied one
// at a time: a live trace and a trace read at once agree.
func TestApplyIncrementalEqualsFold(t *testing.T) {
	evs := synth(5000)
	whole := trace.Fold("x", evs)
	live := trace.Fold("x", evs[:1234])
	for _, e := range evs[1234:] {
		live.Apply(e)
	}
	if a, b := dump(whole), dump(live); a != b {
		t.Fatalf("live fold differs from a fold at once")
	}
	if whole.LastSeq != 5000 || whole.Events != 5000 || len(whole.Anomalies) != 0 || !whole.Duplicates() {
		t.Fatalf("LastSeq %d Events %d anomalies %d", whole.LastSeq, whole.Events, len(whole.Anomalies))
	}
}
