package diff_test

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/trace"
)

// bigHistory is an execution of about `events` events: turns of tool calls
// with a timeout, a retry and a delivery each; every `every`-th call of
// variant 1 is deduplicated instead of delivered, and variant 1 files every
// 97th call under another step id (an agent's own retry), so the
// comparison has differences to find in every pass.
func bigHistory(events, variant int) []trace.Event {
	evs := []trace.Event{{Kind: trace.ExecutionStarted, Scenario: "big", Text: "keys"}, {Kind: trace.RunStarted, Run: 1}}
	add := func(e trace.Event) {
		e.Run = 1
		e.Time = t0.Add(time.Duration(len(evs)) * time.Millisecond)
		evs = append(evs, e)
	}
	for i := 0; len(evs) < events; i++ {
		if i%10 == 0 {
			add(trace.Event{Kind: trace.TurnStarted, Turn: i/10 + 1})
		}
		step := fmt.Sprintf("step-%d", i)
		if variant == 1 && i%97 == 0 {
			step += "-retry1"
		}
		a := json.RawMessage(fmt.Sprintf(`{"to":"c%d@acme.dev","subject":"invoice %d"}`, i, i))
		add(trace.Event{Kind: trace.CallScheduled, Call: step, Tool: send, Args: a})
		add(trace.Event{Kind: trace.AttemptStarted, Call: step, Attempt: 1})
		add(trace.Event{Kind: trace.EffectObserved, Call: step, Attempt: 1, Effect: &trace.Effect{Service: "mail", Target: "c@acme.dev"}})
		add(trace.Event{Kind: trace.AttemptFinished, Call: step, Attempt: 1, Outcome: trace.OutcomeTimeout})
		add(trace.Event{Kind: trace.AttemptStarted, Call: step, Attempt: 2})
		dedup := variant == 1 && i%7 == 0
		if !dedup {
			add(trace.Event{Kind: trace.EffectObserved, Call: step, Attempt: 2, Effect: &trace.Effect{Service: "mail", Target: "c@acme.dev"}})
		}
		add(trace.Event{Kind: trace.AttemptFinished, Call: step, Attempt: 2, Outcome: trace.OutcomeOK, Deduplicated: dedup})
	}
	add(trace.Event{Kind: trace.ExecutionEnded, Outcome: trace.OutcomeOK})
	return evs
}

// BenchmarkDiff50k folds two 50 000-event executions, compares them and
// writes the text: what `retrylab diff` does after reading the events.
func BenchmarkDiff50k(b *testing.B) {
	ea, eb := bigHistory(50000, 0), bigHistory(50000, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := diff.Compare(trace.Fold("A", ea), trace.Fold("B", eb), "", "")
		if err := diff.Text(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.ReportMetric(float64(len(r.Rows)), "rows")
		}
	}
}
