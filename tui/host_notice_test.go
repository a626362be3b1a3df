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
