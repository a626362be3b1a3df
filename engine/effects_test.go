package engine_test

import (
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
)

// Every message the mail API delivers for an execution is recorded in that
// execution's history, attributed to its step and attempt, and the record
// keeps the duplicate flag; resetting the world empties the outbox but
// leaves both as they were.
func TestEffectsAreRecordedInTheHistory(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	play(t, h, func() (*engine.Run, error) { return h.Start("naive", engine.RunOptions{}) })
	msgs, err := h.Providers().MessagesFor(naiveExec)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("outbox of naive: %d messages, %v", len(msgs), err)
	}
	recorded := func() map[string]history.Event {
		events, err := h.Events(naiveExec, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]history.Event{}
		for _, ev := range events {
			if ev.Type == history.EffectObserved {
				out[ev.Effect.ID] = ev
			}
		}
		return out
	}
	byID := recorded()
	for _, m := range msgs {
		ev, ok := byID[m.ID]
		if !ok {
			t.Fatalf("message %s is not in the history", m.ID)
		}
		if ev.Step != m.Attribution.Step || ev.Attempt != m.Attribution.Attempt || ev.Run != m.Attribution.Run ||
			ev.Effect.Service != "mail" || ev.Effect.Target != m.To || ev.Effect.Summary != m.Subject {
			t.Errorf("message %s recorded as %+v %+v, attributed %+v", m.ID, ev, *ev.Effect, m.Attribution)
		}
	}
	if len(byID) != len(msgs) {
		t.Errorf("history records %d effects, the outbox holds %d", len(byID), len(msgs))
	}
	if x, _ := h.Execution(naiveExec); !x.Duplicates {
		t.Errorf("the record does not flag the duplicate send: %+v", x)
	}

	if err := h.Providers().ResetWorld(); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := h.Providers().MessagesFor(naiveExec); len(msgs) != 0 {
		t.Fatalf("the reset left %d messages", len(msgs))
	}
	if got := recorded(); len(got) != len(byID) {
		t.Errorf("after the reset the history records %d effects, before %d", len(got), len(byID))
	}
	if x, _ := h.Execution(naiveExec); !x.Duplicates {
		t.Error("the reset cleared the record's duplicate flag")
	}
}
