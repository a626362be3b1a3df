package tui

import (
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/notice"
)

// The host's word (an import committed after its client went away) is
// shown in the explorer's status line.
func TestHostNoticeIsShown(t *testing.T) {
	snap := record(t, []string{"naive"})
	m := open(t, snap, 160, 36)
	const say = "the import of big.jsonl was committed (3 executions) after the retrylab that sent it went away: its command said nothing"
	_, cmd := m.Update(noticesMsg{batch: []notice.Notice{{Host: say}}})
	settleAll(t, m, cmd)
	if m.status.text != say || !m.status.bad {
		t.Fatalf("status %q (bad %v), want %q", m.status.text, m.status.bad, say)
	}
	if !strings.Contains(m.View(), "the import of big.jsonl was committed") {
		t.Fatalf("the view does not show it:\n%s", m.View())
	}
}

// TestResetElsewhereEmptiesTheList: after `retrylab reset` in another
// terminal, a second explorer's footer said "no such execution: exec_7K2Q":
// the selected execution's trace was read again (the reset's Lagged notice)
// and found it gone. A reset elsewhere is followed like a run elsewhere:
// the list empties, the trace and outbox go, and no error is shown.
func TestResetElsewhereEmptiesTheList(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 80, 24)
	if m.selID == "" || m.execs.total != 1 {
		t.Fatalf("before: selected %q of %d", m.selID, m.execs.total)
	}
	gone := m.selID
	if err := snap.Reset(); err != nil {
		t.Fatal(err)
	}
	// The trace's read answers before the list's: the order that showed
	// the error.
	drive(t, m, m.loadTrace(gone))
	_, cmd := m.Update(noticesMsg{batch: []notice.Notice{{Lagged: true}}, closed: true})
	settleAll(t, m, cmd)
	if m.status.bad || strings.Contains(m.status.text, "no such execution") {
		t.Fatalf("the reset elsewhere shows an error: %q", m.status.text)
	}
	if m.selID != "" || m.execs.total != 0 {
		t.Fatalf("after the reset: selected %q of %d, want an empty list", m.selID, m.execs.total)
	}
	v := m.View()
	if strings.Contains(v, gone) || strings.Contains(v, "no such execution") {
		t.Fatalf("the view still shows %s or an error:\n%s", gone, v)
	}
}
