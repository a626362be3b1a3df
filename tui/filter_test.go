package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestFilterDropsStaleAnswers: every key asks for the list at once, and an
// answer to text typed over since never replaces the one for the text now
// in the box, whatever order the answers land in.
func TestFilterDropsStaleAnswers(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 40)
	press(t, m, "/", "s")
	// The answers to "s" are in; "sa" and "saf" are typed, their answers
	// not yet in.
	_, cmdSa := m.Update(keyMsg("a"))
	_, cmdSaf := m.Update(keyMsg("f"))
	if m.filter.text != "saf" {
		t.Fatalf("the filter applies as typed: %q", m.filter.text)
	}
	drive(t, m, cmdSaf)
	if m.execs.total != 1 || m.selID != "exec_01H8" {
		t.Fatalf("saf: %d executions, selected %q", m.execs.total, m.selID)
	}
	// The answer to "sa" lands last: it is dropped.
	for _, msg := range collect(cmdSa) {
		m.Update(msg)
	}
	m.Update(execsMsg{filter: "sa", total: 3})
	if m.execs.total != 1 || m.selID != "exec_01H8" {
		t.Fatalf("a stale answer replaced the list: %d executions, selected %q", m.execs.total, m.selID)
	}
}

// collect runs a command and the batches it returns, without feeding the
// messages back.
func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, collect(c)...)
		}
		return out
	default:
		return []tea.Msg{msg}
	}
}

// TestFilterWorksFromEveryTab: at 80 columns / on the Trace tab shows the
// Executions tab while the box is open (the list it filters), esc goes
// back to the Trace, enter stays on the list filtered; the filter kept
// shows in the footer on every tab.
func TestFilterWorksFromEveryTab(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 80, 24)
	for i := 0; i < 4 && m.focus != paneTrace; i++ {
		press(t, m, "tab")
	}
	if m.focus != paneTrace {
		t.Fatalf("tab focuses %s", paneNames[m.focus])
	}
	press(t, m, "/", "saf")
	mustShow(t, m.View(), "the box over the list", "[ Executions ]", "/saf", "exec_01H8")
	press(t, m, "esc")
	if m.focus != paneTrace || m.filter.Text() != "" {
		t.Fatalf("esc: focus %s, filter %q", paneNames[m.focus], m.filter.Text())
	}
	press(t, m, "/", "saf", "enter")
	if m.focus != paneExecs || m.filter.Text() != "saf" {
		t.Fatalf("enter: focus %s, filter %q", paneNames[m.focus], m.filter.Text())
	}
	for i := 0; i < 3; i++ {
		press(t, m, "tab")
		v := m.View()
		footer := v[strings.LastIndex(v, "\n")+1:]
		if !strings.Contains(footer, "/saf") {
			t.Errorf("on the %s tab the footer does not say the filter: %q", paneNames[m.focus], footer)
		}
	}
}

// TestFilterCountsWhatItHides: executions that arrive (a run from another
// terminal) and that the filter does not match are counted in the footer,
// until the filter changes.
func TestFilterCountsWhatItHides(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 120, 35)
	press(t, m, "/", "saf", "enter")
	all := m.filter.all
	if all <= m.execs.total {
		t.Fatalf("the filter hides nothing: %d of %d", m.execs.total, all)
	}
	items := append([]execItem(nil), m.execs.items...)
	m.Update(execsMsg{filter: "saf", items: items, total: len(items), all: all + 3, sel: -1, moved: -1})
	mustShow(t, m.View(), "the count", "/saf (3 new, hidden by the filter)")
	// One more that matches is not counted.
	m.Update(execsMsg{filter: "saf", items: items, total: len(items) + 1, all: all + 4, sel: -1, moved: -1})
	if n := m.filter.Hidden(); n != 3 {
		t.Fatalf("a matching arrival counted: %d hidden", n)
	}
	press(t, m, "/", "x")
	if n := m.filter.Hidden(); n != 0 {
		t.Fatalf("another filter keeps the count: %d", n)
	}
}

// TestEraseForgetsFilterAndMark: E (confirmed) drops the filter and the
// mark, which would name executions that are gone; = on the marked
// execution says so rather than compare it with itself.
func TestEraseForgetsFilterAndMark(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 44)
	press(t, m, "m", "=")
	if m.cmp.Shown() || !strings.Contains(m.status.text, "is the marked execution") {
		t.Fatalf("= on the marked one: comparing %v, flash %q", m.cmp.Shown(), m.status.text)
	}
	press(t, m, "/", "saf", "enter", "E", "y")
	if m.filter.Text() != "" || m.cmp.Marked() != "" {
		t.Fatalf("after E y: filter %q, marked %q", m.filter.Text(), m.cmp.Marked())
	}
}
