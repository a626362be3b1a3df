package tui

import (
	"strings"
	"testing"
)

// TestPaneKeysAreTheirBindings: the panes' keys are their declared
// bindings: the help's Move column is built from them (each key once,
// then the explorer's own moves), their Update takes no key, and the
// focused pane's list is what moves its selection.
func TestPaneKeysAreTheirBindings(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 45)
	var move []string
	for _, b := range m.helpColumns()[0] {
		move = append(move, b.Help().Key)
	}
	if got, want := strings.Join(move, " "), "↑/k ↓/j pgup/^u pgdn/^d g/home G/end →/l ←/h enter tab S-tab / ]/["; got != want {
		t.Errorf("the help's Move column is %q, want %q", got, want)
	}

	for _, p := range []pane{paneExecs, paneTrace, paneOutbox} {
		if len(m.paneBindings(p)) < 6 {
			t.Errorf("%s declares %d bindings, want at least its six moves", paneNames[p], len(m.paneBindings(p)))
		}
	}
	_, sel, _ := m.execs.Window()
	m.execs.Update(keyMsg("j"))
	m.trace.Update(keyMsg("g"))
	m.outbox.Update(keyMsg("o"))
	if _, now, _ := m.execs.Window(); now != sel || m.trace.sel == 0 || m.outbox.CRM() {
		t.Fatalf("a pane's Update took a key: list %d→%d, trace row %d, CRM %v", sel, now, m.trace.sel, m.outbox.CRM())
	}

	// The focused pane's bindings move its selection: the trace's g goes
	// to its first row, the list's j to the next execution.
	press(t, m, "g")
	if m.trace.sel != 0 {
		t.Errorf("g on the trace leaves row %d selected", m.trace.sel)
	}
	press(t, m, "shift+tab", "j")
	if m.selID != "exec_01H8" {
		t.Errorf("j on the list selects %s, want exec_01H8", m.selID)
	}
	press(t, m, "tab", "tab", "j")
	if m.focus != paneOutbox || m.outbox.sel != 1 {
		t.Errorf("j on the outbox (focus %s) selects row %d, want 1", paneNames[m.focus], m.outbox.sel)
	}
	// Another execution's outbox (or inferred effects) shows from its
	// top, its first heading in view, not where the last one was left.
	m.outbox.top = 1
	press(t, m, "shift+tab", "shift+tab", "k")
	if m.selID == "exec_01H8" || m.outbox.sel != 0 || m.outbox.top != 0 {
		t.Errorf("another execution (%s) selected: its outbox at row %d, scrolled %d, want 0 and 0", m.selID, m.outbox.sel, m.outbox.top)
	}
}
