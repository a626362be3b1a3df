package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/timeline"
	"github.com/retrylab/retrylab/engine/trace"
)

// bigExecution is a naive execution of calls×per attempts as the fold's
// input: each attempt but a call's last times out after the provider
// delivered, then backs off; the last succeeds. Times are fixed.
func bigExecution(calls, per int) (history.Execution, []trace.Event) {
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	now := t0
	var evs []trace.Event
	add := func(e trace.Event) {
		e.Time = now
		evs = append(evs, e)
	}
	add(trace.Event{Kind: trace.ExecutionStarted, Scenario: "gen-naive", Text: "none"})
	add(trace.Event{Kind: trace.RunStarted, Run: 1, PID: 1})
	for c := range calls {
		call := fmt.Sprintf("step-%d", c+1)
		add(trace.Event{Kind: trace.CallScheduled, Run: 1, Call: call, Tool: "send_invoice_email"})
		for n := 1; n <= per; n++ {
			add(trace.Event{Kind: trace.AttemptStarted, Run: 1, Call: call, Attempt: n})
			now = now.Add(11 * time.Millisecond)
			add(trace.Event{Kind: trace.EffectObserved, Run: 1, Call: call, Attempt: n,
				Effect: &trace.Effect{Service: "mail", ID: fmt.Sprintf("msg_%d_%d", c, n)}})
			if n < per {
				now = now.Add(989 * time.Millisecond)
				add(trace.Event{Kind: trace.AttemptFinished, Run: 1, Call: call, Attempt: n, Outcome: trace.OutcomeTimeout, Duration: time.Second})
				add(trace.Event{Kind: trace.RetryScheduled, Run: 1, Call: call, Attempt: n, Delay: 50 * time.Millisecond})
				now = now.Add(50 * time.Millisecond)
				continue
			}
			now = now.Add(2 * time.Millisecond)
			add(trace.Event{Kind: trace.AttemptFinished, Run: 1, Call: call, Attempt: n, Outcome: trace.OutcomeOK, Duration: 13 * time.Millisecond})
		}
	}
	add(trace.Event{Kind: trace.ExecutionEnded, Run: 1, Outcome: trace.OutcomeOK})
	return history.Execution{ID: "exec_big", Scenario: "gen-naive"}, evs
}

// timelineKeys is what a reader does in the timeline: step through
// attempts, zoom in and out, scroll, see it all again.
var timelineKeys = []string{"j", "j", "+", "+", "+", "l", "l", "j", "k", "h", "-", "+", "+", "+", "+", "j", "l", "0"}

// BenchmarkTimeline draws the Timeline view of a 10 000-attempt execution
// (100 calls of 100 attempts, each with an effect, a deadline and a
// backoff) at 160×45: one op is one key, from the message to the frame
// drawn. It reports the frame's p50, p99 and max, and how long laying the
// execution out (engine/timeline.Build, once per state of the trace) took.
func BenchmarkTimeline(b *testing.B) {
	x, evs := bigExecution(100, 100)
	m := New(Options{Source: &snapshot{}, Now: fixedNow})
	defer m.Close()
	m.trace.tr = newImportedTraceView(x, evs)
	m.trace.tr.exec.Imported = "" // native: no inferred effects to audit
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	start := time.Now()
	tl := timeline.Build(m.trace.tr.t, timeline.Options{})
	build := time.Since(start)
	if len(tl.Attempts) != 10000 {
		b.Fatalf("%d attempts laid out", len(tl.Attempts))
	}
	m.Update(keyMsg("w"))
	_ = m.View()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		m.Update(keyMsg(timelineKeys[i%len(timelineKeys)]))
		_ = m.View()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
	b.ReportMetric(ms(build), "build-ms")
}
