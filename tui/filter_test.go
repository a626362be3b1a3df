package tui

import (
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
