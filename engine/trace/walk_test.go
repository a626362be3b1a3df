package trace_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/engine/trace"
)

// walkLog writes down what a Walk hands it, each node as it stands then.
type walkLog struct {
	lines  []string
	forget bool
}

func (l *walkLog) add(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *walkLog) Enter(parent, f *trace.Frame[string]) {
	var name string
	switch n := f.Node.(type) {
	case *trace.Run:
		name = fmt.Sprintf("run %d", n.Number)
	case *trace.Turn:
		name = fmt.Sprintf("turn %d (at %d)", n.Number, f.TurnAt)
	case *trace.Call:
		name = "call " + n.ID()
	}
	f.Data = parent.Data + "/" + name
	l.add("enter %s", f.Data)
}

func (l *walkLog) Leave(f *trace.Frame[string]) { l.add("leave %s", f.Data) }

func (l *walkLog) Attempt(f *trace.Frame[string], a *trace.Attempt, _ bool) (bool, bool) {
	l.add("%s attempt %d: %s finished %t crashed %t retry %s effects %d", f.Data, a.N, a.Outcome, a.Finished, a.Crashed,
		a.Retry, len(a.Effects))
	return true, l.forget
}

func (l *walkLog) Other(f *trace.Frame[string], n trace.Node) { l.add("%s %T", f.Data, n) }

func (l *walkLog) Failed() bool { return false }

// walkBoth walks a history streamed (pumped after each event, forgetting
// each attempt handed over) and from the whole fold.
func walkBoth(evs []history.Event) (streamed, whole string, released int) {
	s := trace.New("exec_W")
	s.Stream()
	sl := &walkLog{forget: true}
	sw := trace.NewWalk[string](s, sl)
	for _, ev := range evs {
		history.Apply(s, ev)
		sw.Pump(false)
	}
	sw.Pump(true)
	for _, r := range s.Runs {
		for _, n := range r.Nodes {
			if tn, ok := n.(*trace.Turn); ok {
				for _, c := range tn.Nodes {
					if c, ok := c.(*trace.Call); ok {
						released += c.Released
					}
				}
			}
		}
	}

	w := trace.New("exec_W")
	wl := &walkLog{}
	for _, ev := range evs {
		history.Apply(w, ev)
	}
	trace.NewWalk[string](w, wl).Pump(true)
	return strings.Join(sl.lines, "\n"), strings.Join(wl.lines, "\n"), released
}

// A walk pumped while the history is read hands over the same nodes, in
// the same order and as they stand at the end, as a walk of the whole
// fold: for every prefix of a history whose events interleave. And it lets
// go of the attempts it handed over.
func TestWalkStreamsAsTheWholeFold(t *testing.T) {
	evs, _, _ := tracetest.Interleaved()
	for n := 0; n <= len(evs); n++ {
		streamed, whole, _ := walkBoth(evs[:n])
		if streamed != whole {
			t.Fatalf("after %d events the streamed walk differs:\n%s\n--- whole fold:\n%s", n, streamed, whole)
		}
	}
	// The same with the next call (s3) scheduled while s4's last attempt
	// so far waits for its retry: s4 is not closed, its retry still to
	// come.
	moved := retryAfterNextCall(t, evs)
	for n := 0; n <= len(moved); n++ {
		streamed, whole, _ := walkBoth(moved[:n])
		if streamed != whole {
			t.Fatalf("after %d events the streamed walk differs:\n%s\n--- whole fold:\n%s", n, streamed, whole)
		}
	}
	streamed, _, released := walkBoth(evs)
	for _, want := range []string{"enter /run 1", "/run 1/turn 1 (at 0)/call run1/s1 attempt 3: ok", "*trace.Replay",
		"/run 2/turn 2 (at 1)/call run2/s4 attempt 3: ok", "leave /run 2"} {
		if !strings.Contains(streamed, want) {
			t.Errorf("the walk never handed over %q:\n%s", want, streamed)
		}
	}
	if released < 8 {
		t.Errorf("the streamed walk let go of %d attempts", released)
	}
}

// retryAfterNextCall moves the scheduling of s3 in evs before the retry
// (attempt 3) of s4 starts, renumbering the events.
func retryAfterNextCall(t *testing.T, evs []history.Event) []history.Event {
	t.Helper()
	var out []history.Event
	var s3 history.Event
	for _, ev := range evs {
		if ev.Type == history.ToolCallScheduled && ev.Step == "s3" {
			s3 = ev
		}
	}
	if s3.Step == "" {
		t.Fatal("the history schedules no s3")
	}
	for _, ev := range evs {
		switch {
		case ev.Type == history.ToolCallScheduled && ev.Step == "s3":
			continue
		case ev.Type == history.AttemptStarted && ev.Step == "s4" && ev.Attempt == 3:
			out = append(out, s3)
		}
		out = append(out, ev)
	}
	for i := range out {
		out[i].Seq = uint64(i + 1)
	}
	return out
}
