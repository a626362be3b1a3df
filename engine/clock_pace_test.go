package engine_test

import (
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/testrun"
)

// eventsOf is an execution's whole history.
func eventsOf(t *testing.T, h *engine.Host, id string) []history.Event {
	t.Helper()
	evs, err := h.Events(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// A move of the world clock is recorded in the history of the execution
// whose key it expires (the move, with the total, then the key), and in
// the unfinished one: a second move, which expires nothing, still says
// the total. An execution that finished and kept no key gets nothing.
func TestClockMoveIsRecordedInTheHistoriesItConcerns(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	naive := play(t, h, func() (*engine.Run, error) { return h.Start("naive", engine.RunOptions{}) })
	kr := play(t, h, func() (*engine.Run, error) { return h.Start("key-retention", engine.RunOptions{}) })
	if kr.res.Status != history.StatusKilled {
		t.Fatalf("key-retention's first run: %s, want killed", kr.res.Status)
	}
	id := kr.run.Execution
	var key string
	for _, ev := range eventsOf(t, h, id) {
		if ev.Type == history.AttemptStarted {
			key = ev.Key
		}
	}
	before := len(eventsOf(t, h, id))
	ch, stop := h.Subscribe(64)
	defer stop()
	if err := h.Providers().AdvanceClock(25 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := h.Providers().AdvanceClock(25 * time.Hour); err != nil {
		t.Fatal(err)
	}
	evs := eventsOf(t, h, id)[before:]
	if len(evs) != 3 {
		t.Fatalf("two moves left %d events, want 3: %+v", len(evs), evs)
	}
	if e := evs[0]; e.Type != history.ClockMoved || e.Duration != 25*time.Hour || e.Offset != 25*time.Hour {
		t.Errorf("first move: %+v", e)
	}
	if e := evs[1]; e.Type != history.KeyExpired || e.Key != key || key == "" || e.Step != "step-4" || e.Attempt != 1 ||
		e.Run != 1 || e.Duration != 24*time.Hour {
		t.Errorf("the expired key %s: %+v", key, e)
	}
	if e := evs[2]; e.Type != history.ClockMoved || e.Offset != 50*time.Hour {
		t.Errorf("second move: %+v", e)
	}
	for i := 0; i < 3; i++ {
		if n := <-ch; n.Execution != id || n.Event == nil || n.Event.Seq != evs[i].Seq {
			t.Errorf("notice %d: %+v, want event %d of %s", i, n, evs[i].Seq, id)
		}
	}
	for _, ev := range eventsOf(t, h, naive.run.Execution) {
		if ev.Type == history.ClockMoved || ev.Type == history.KeyExpired {
			t.Errorf("naive finished and kept no key, yet its history has %s", ev.Type)
		}
	}
}

// Slow motion waits before each attempt and records the wait where it
// happens, before the attempt it delays; the attempts' deadlines are the
// scenario's.
func TestPaceWaitsBeforeEachAttemptAndSaysSo(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	const pace = 30 * time.Millisecond
	p := play(t, h, func() (*engine.Run, error) { return h.Start("naive", engine.RunOptions{Pace: pace}) })
	var order []history.Type
	var paced []history.Event
	for _, ev := range eventsOf(t, h, p.run.Execution) {
		switch ev.Type {
		case history.Paced:
			paced = append(paced, ev)
			order = append(order, ev.Type)
		case history.AttemptStarted:
			order = append(order, ev.Type)
		case history.AttemptFinished:
			if ev.Outcome == history.OutcomeTimeout && ev.Duration > testrun.QuickTimeout+time.Second {
				t.Errorf("attempt %d timed out after %s: the scenario's deadline is %s", ev.Attempt, ev.Duration, testrun.QuickTimeout)
			}
		}
	}
	want := []history.Type{history.Paced, history.AttemptStarted, history.Paced, history.AttemptStarted}
	if len(order) != len(want) {
		t.Fatalf("paced naive: %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("paced naive: %v, want %v", order, want)
		}
	}
	for i, ev := range paced {
		if ev.Delay != pace || ev.Step != "step-4" || ev.Attempt != i+1 {
			t.Errorf("wait %d: %+v", i+1, ev)
		}
	}
	// The host's own pace applies to runs that start after it is set.
	h.Runtime().SetPace(pace)
	if got := h.Runtime().Pace(); got != pace {
		t.Fatalf("Pace after SetPace: %s", got)
	}
	p = play(t, h, func() (*engine.Run, error) { return h.Start("safe", engine.RunOptions{}) })
	n := 0
	for _, ev := range eventsOf(t, h, p.run.Execution) {
		if ev.Type == history.Paced {
			n++
		}
	}
	if n == 0 {
		t.Error("a run started after SetPace did not wait")
	}
}
