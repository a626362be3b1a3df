package narrate

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
)

// The handout reads what an attempt caused from the history: with the
// outbox emptied since (the world reset), the crashed attempt still
// delivered, and the timeout still did.
func TestHandoutEffectsFromHistory(t *testing.T) {
	t0 := time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)
	fx := func(id string) *history.Effect {
		return &history.Effect{Service: "mail", ID: id, Target: "jordan@acme.dev", Summary: "Your June invoice"}
	}
	evs := []history.Event{
		{Seq: 1, Type: history.ExecutionStarted, Run: 1, Scenario: "crash", Text: "none", Time: t0},
		{Seq: 2, Type: history.WorkerStarted, Run: 1, PID: 7, Time: t0},
		{Seq: 3, Type: history.ToolCallScheduled, Run: 1, Step: "step-4", Tool: "send_invoice_email", Time: t0},
		{Seq: 4, Type: history.AttemptStarted, Run: 1, Step: "step-4", Attempt: 1, Time: t0},
		{Seq: 5, Type: history.EffectObserved, Run: 1, Step: "step-4", Attempt: 1, Effect: fx("msg_1"), Time: t0},
		{Seq: 6, Type: history.WorkerCrashed, Run: 1, ExitCode: 137, Error: "killed", Time: t0.Add(time.Second)},
		{Seq: 7, Type: history.WorkerStarted, Run: 2, PID: 8, Time: t0.Add(time.Minute)},
		{Seq: 8, Type: history.ToolCallScheduled, Run: 2, Step: "step-4", Tool: "send_invoice_email", Time: t0.Add(time.Minute)},
		{Seq: 9, Type: history.AttemptStarted, Run: 2, Step: "step-4", Attempt: 2, Time: t0.Add(time.Minute)},
		{Seq: 10, Type: history.EffectObserved, Run: 2, Step: "step-4", Attempt: 2, Effect: fx("msg_2"), Time: t0.Add(time.Minute)},
		{Seq: 11, Type: history.AttemptFinished, Run: 2, Step: "step-4", Attempt: 2, Outcome: history.OutcomeTimeout,
			Duration: time.Second, Time: t0.Add(time.Minute + time.Second)},
	}
	x := history.Execution{ID: "exec_X", Scenario: "crash", Started: t0, Updated: evs[len(evs)-1].Time, Runs: 2}
	var buf bytes.Buffer
	if err := Markdown(&buf, Handout{Execution: x, Events: evs}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"◆ attempt 1 of `step-4` never finished, but the provider delivered `msg_1`",
		"⏱ attempt 2: timeout after 1s, outcome unknown to the agent · ◆ but the provider delivered `msg_2`",
		"> ┆ 59s with no worker running",
		"No messages from this execution.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("handout lacks %q:\n%s", want, out)
		}
	}
}
