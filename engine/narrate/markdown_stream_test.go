package narrate

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/engine/trace"
)

// handoutBoth writes a handout streamed (as Markdown does) and from the
// whole fold, the way it was written before it streamed.
func handoutBoth(t *testing.T, x history.Execution, evs []history.Event) (streamed, whole string) {
	t.Helper()
	var a bytes.Buffer
	if err := Markdown(&a, Handout{Execution: x, Events: evs}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	m := &mdWriter{w: bw, h: Handout{Execution: x, Events: evs}, start: x.Started, whole: true}
	m.t = trace.New(x.ID)
	if err := m.render(func(fn func(history.Event) error) error {
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	return a.String(), b.String()
}

// The streamed handout is the whole fold's, line for line, also where
// events interleave (tracetest.Interleaved), for every prefix of the
// history.
func TestHandoutStreamsAsTheWholeFold(t *testing.T) {
	evs, start, end := tracetest.Interleaved()
	x := history.Execution{ID: "exec_M", Scenario: "mix", Started: start, Updated: end, Runs: 2}
	for n := 0; n <= len(evs); n++ { // every prefix: a history read while it grows
		streamed, whole := handoutBoth(t, x, evs[:n])
		if streamed != whole {
			t.Fatalf("after %d events the streamed handout differs:\n%s\n--- whole fold:\n%s", n, streamed, whole)
		}
	}
}

// The handout forgets each attempt it has written: after a call of 2 000
// attempts the fold holds none of them.
func TestHandoutForgetsWrittenAttempts(t *testing.T) {
	t0 := time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)
	var evs []history.Event
	add := func(e history.Event) {
		e.Seq, e.Run, e.Time = uint64(len(evs)+1), 1, t0.Add(time.Duration(len(evs))*time.Millisecond)
		evs = append(evs, e)
	}
	add(history.Event{Type: history.ExecutionStarted, Scenario: "long", Text: "keys"})
	add(history.Event{Type: history.WorkerStarted, PID: 7})
	add(history.Event{Type: history.ToolCallScheduled, Step: "s1", Tool: "send"})
	const n = 2000
	for i := 1; i <= n; i++ {
		add(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: i, Key: "k"})
		add(history.Event{Type: history.FaultInjected, Step: "s1", Attempt: i, Fault: "server-error"})
		add(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: i, Outcome: history.OutcomeError})
		add(history.Event{Type: history.RetryScheduled, Step: "s1", Attempt: i, Delay: time.Second})
	}
	add(history.Event{Type: history.ExecutionFailed})
	x := history.Execution{ID: "exec_L", Scenario: "long", Started: t0, Updated: evs[len(evs)-1].Time, Runs: 1}
	var buf bytes.Buffer
	m := &mdWriter{w: bufio.NewWriter(&buf), h: Handout{Execution: x}, start: t0, t: trace.New(x.ID)}
	held := 0
	if err := m.render(func(fn func(history.Event) error) error {
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
			if c := m.t.LastCall("s1"); c != nil {
				held = max(held, len(c.Attempts))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m.w.Flush()
	c := m.t.LastCall("s1")
	if held > 2 || c.Released != n {
		t.Errorf("the fold held up to %d attempts and let go of %d of %d", held, c.Released, n)
	}
	if got := bytes.Count(buf.Bytes(), []byte("retry in 1s")); got != n {
		t.Errorf("%d retry lines written, want %d", got, n)
	}
}
