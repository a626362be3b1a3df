package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
)

// timelineSizes are the sizes the Timeline view is held to.
var timelineSizes = [][2]int{{80, 24}, {120, 35}, {160, 45}}

// importedOTLP is the fixture ADK trace that sends twice, as the explorer
// gets it from a host: its record and its translated events.
func importedOTLP(t *testing.T) (history.Execution, []trace.Event) {
	t.Helper()
	h := openHost(t, importedDB(t, "../fixtures/otlp/adk-send-twice.json"))
	defer h.Close()
	xs, _, err := h.Executions(0, 0)
	if err != nil || len(xs) == 0 {
		t.Fatalf("imported executions: %v (%d)", err, len(xs))
	}
	evs, err := h.ImportedEvents(xs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return xs[0], evs
}

// timelineOf opens the explorer over a recording at a size, shows the
// imported trace instead when x is set, and presses w then keys.
func timelineOf(t *testing.T, scripts [][]string, x *history.Execution, evs []trace.Event, w, h int, keys ...string) (*Model, string) {
	t.Helper()
	m := open(t, record(t, scripts...), w, h)
	if x != nil {
		m.trace.Update(traceMsg{id: x.ID, x: *x, imported: evs})
	}
	press(t, m, append([]string{"w"}, keys...)...)
	if !m.timeline.Shown() {
		t.Fatal("w does not open the timeline")
	}
	return m, m.View()
}

// checkFrame fails for a frame not exactly w×h.
func checkFrame(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("frame is %d lines, not %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got > w {
			t.Errorf("line %d is %d wide, more than %d: %q", i, got, w, l)
		}
	}
}

func TestGoldenTimeline(t *testing.T) {
	t.Parallel()
	otlpX, otlpEvs := importedOTLP(t)
	tempX, tempEvs := orderRun(t)
	cases := []struct {
		name    string
		scripts [][]string
		x       *history.Execution
		evs     []trace.Event
		wants   []string
	}{
		{"Naive", [][]string{{"naive", "run"}}, nil, nil, []string{"send_invoice_e", "mail", "◆", "⏱", "●#1", "•#2", "┄", "mail delivered msg_3def2b (step-4 #1)"}},
		{"CrashResume", [][]string{{"invoice-crm", "run", "resume"}}, nil, nil, []string{"record_invoice", "☠", "░", "⟲", "workers"}},
		{"ImportedOTLP", [][]string{{"naive", "run"}}, &otlpX, otlpEvs, []string{"inferred", "•#"}},
		{"TemporalNotKept", [][]string{{"naive", "run"}}, &tempX, tempEvs, []string{"⋯#1"}},
	}
	for _, c := range cases {
		for _, sz := range timelineSizes {
			t.Run(fmt.Sprintf("%s%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				_, v := timelineOf(t, c.scripts, c.x, c.evs, sz[0], sz[1])
				checkFrame(t, v, sz[0], sz[1])
				mustShow(t, v, "timeline", append([]string{"Timeline", "attempt 1/"}, c.wants...)...)
				golden.RequireEqual(t, []byte(v))
			})
		}
	}
}

// Zoom, scroll and the cursor move the picture; enter selects the attempt
// under the cursor in the trace and closes the timeline.
func TestTimelineKeys(t *testing.T) {
	t.Parallel()
	m, whole := timelineOf(t, [][]string{{"naive", "run"}}, nil, nil, 120, 35)
	press(t, m, "+", "+")
	if zoomed := m.View(); zoomed == whole || m.timeline.fitted {
		t.Error("+ does not zoom in")
	}
	win := m.timeline.win
	press(t, m, "l")
	if m.timeline.win == win {
		t.Error("→ does not scroll")
	}
	press(t, m, "0")
	if m.View() != whole {
		t.Error("0 does not show the whole again")
	}
	press(t, m, "j")
	if v := m.View(); !strings.Contains(v, "attempt 2/2") || !strings.Contains(v, "step-4 #2") {
		t.Errorf("↓ does not move to attempt 2:\n%s", v)
	}
	press(t, m, "enter")
	if m.timeline.Shown() {
		t.Fatal("enter leaves the timeline open")
	}
	if n := m.trace.selected(); n == nil || !strings.HasPrefix(n.text, "#2") {
		t.Errorf("enter selects attempt #2 in the trace, not %+v", n)
	}
	press(t, m, "w", "esc")
	if m.timeline.Shown() {
		t.Error("esc does not close the timeline")
	}
}
