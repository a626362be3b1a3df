package trace_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/audit"
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
// that already holds 1 000 events and to one that holds 100 000. The two
// alternate in rounds of 100 events inside one run, so the noise of a
// shared machine falls on both; each trace is folded afresh (untimed)
// after 1 000 events, so a measured event lands on a trace of its size to
// size+1 000. Metrics: ns per event at each size, and the ratio (goal ≤ 1.2).
func BenchmarkApplyLive(b *testing.B) {
	const round, refold = 100, 1000
	type side struct {
		base, next []trace.Event
		tr         *trace.Trace
		j          int
		spent      time.Duration
		applied    int
	}
	mk := func(size int) *side {
		return &side{base: synth(size), next: synth(size + refold)[size:]}
	}
	small, large := mk(1000), mk(100000)
	step := func(s *side, n int) {
		for n > 0 {
			if s.tr == nil || s.j == len(s.next) {
				s.tr, s.j = trace.Fold("bench", s.base), 0
			}
			k := min(n, len(s.next)-s.j, round)
			start := time.Now()
			for _, e := range s.next[s.j : s.j+k] {
				s.tr.Apply(e)
			}
			s.spent += time.Since(start)
			s.applied += k
			s.j += k
			n -= k
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		step(small, n)
		step(large, n)
	}
	ns := func(s *side) float64 { return float64(s.spent.Nanoseconds()) / float64(max(1, s.applied)) }
	b.ReportMetric(ns(small), "ns/event@1k")
	b.ReportMetric(ns(large), "ns/event@100k")
	b.ReportMetric(ns(large)/ns(small), "ratio")
}

// The fold of a long history is exactly the fold of its parts applied one
// at a time: a live trace and a trace read at once agree.
func TestApplyIncrementalEqualsFold(t *testing.T) {
	evs := synth(5000)
	whole := trace.New("x")
	delivered := audit.WatchDeliveries(whole)
	for _, e := range evs {
		whole.Apply(e)
	}
	live := trace.Fold("x", evs[:1234])
	for _, e := range evs[1234:] {
		live.Apply(e)
	}
	if a, b := dump(whole), dump(live); a != b {
		t.Fatalf("live fold differs from a fold at once")
	}
	if whole.LastSeq != 5000 || whole.Events != 5000 || len(whole.Anomalies) != 0 || !delivered.Duplicated() {
		t.Fatalf("LastSeq %d Events %d anomalies %d duplicates %v", whole.LastSeq, whole.Events, len(whole.Anomalies), delivered.Duplicated())
	}
}
