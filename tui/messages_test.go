package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestLongMessagesWrapAndStayInTheLog: a status message too long for the
// footer's line takes a second line while it shows (the panes give it
// the row: the screen keeps its height), and M lists every message whole.
func TestLongMessagesWrapAndStayInTheLog(t *testing.T) {
	t.Parallel()
	long := "execution otlp-4bf92f3577b34da6a3ce929d0e0e4736 was imported from a file: it has no worker to resume, and its effects are inferred from its spans"
	for _, size := range [][2]int{{80, 24}, {120, 35}, {160, 45}} {
		m := open(t, article(t), size[0], size[1])
		m.setFlash("marked exec_01H8 (safe): select another execution and press = to compare", false)
		m.setFlash(long, true)
		v := m.View()
		lines := strings.Split(v, "\n")
		if len(lines) != size[1] {
			t.Fatalf("%v: %d lines on screen", size, len(lines))
		}
		for _, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%v: a line of %d cells: %q", size, w, l)
			}
		}
		footer := strings.Join(lines[len(lines)-2:], " ")
		for _, word := range []string{"otlp-4bf92f3577b34da6a3ce929d0e0e4736", "was imported"} {
			if !strings.Contains(footer, word) {
				t.Errorf("%v: the footer's two lines lack %q:\n%s", size, word, footer)
			}
		}
		press(t, m, "M")
		v = m.View()
		flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ").Replace(v)), " ")
		for _, whole := range []string{long, "marked exec_01H8 (safe): select another execution and press = to compare"} {
			if !strings.Contains(flat, whole) {
				t.Errorf("%v: the log lacks %q:\n%s", size, whole, v)
			}
		}
		press(t, m, "x") // any other key closes
		if m.msgs.Shown() {
			t.Fatalf("%v: a key does not close the log", size)
		}
	}
}

// TestLongMessageKeepsTheState: after T at 80×24 the message ("timeout
// before the effect … armed for the next tool call") took the footer's
// line, and the state (policy, what is armed, the clock) was gone until it
// faded. The message now has a line of its own; the state stays under it.
func TestLongMessageKeepsTheState(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {100, 30}} {
		m := open(t, article(t), size[0], size[1])
		press(t, m, "T")
		if m.status.text == "" {
			t.Fatalf("%v: T says nothing", size)
		}
		lines := strings.Split(m.View(), "\n")
		if len(lines) != size[1] {
			t.Fatalf("%v: %d lines on screen", size, len(lines))
		}
		msg, state := lines[len(lines)-2], lines[len(lines)-1]
		if !strings.Contains(msg, "armed for the next tool call") {
			t.Errorf("%v: the message's line: %q", size, msg)
		}
		for _, want := range []string{"timeout-before-effect", "+0h"} {
			if !strings.Contains(state, want) {
				t.Errorf("%v: the footer's state lacks %q while the message shows: %q", size, want, state)
			}
		}
	}
}
