package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
)

// damagedSource is a snapshot whose history of one execution cannot be
// read, as a damaged history chunk reads from the store.
type damagedSource struct {
	*snapshot
	bad string
}

func (d *damagedSource) Events(id string, from uint64, limit int) ([]history.Event, error) {
	if id == d.bad {
		return nil, errors.New("history chunk 000000010101 of " + id + ": database file is corrupt or not a retrylab database")
	}
	return d.snapshot.Events(id, from, limit)
}

// Selecting an execution whose history cannot be read says so, and shows
// no other execution's trace or outbox beside it.
func TestDamagedHistoryShowsNoOtherTrace(t *testing.T) {
	t.Parallel()
	src := &damagedSource{snapshot: article(t), bad: "exec_01H8"}
	m := open(t, src, 160, 40)
	if v := m.View(); !strings.Contains(v, "Trace  exec_3C5R") {
		t.Fatalf("the newest execution's trace first\n%s", v)
	}
	press(t, m, "shift+tab", "j")
	v := m.View()
	if m.selID != "exec_01H8" {
		t.Fatalf("j selected %q, want exec_01H8", m.selID)
	}
	for _, stale := range []string{"exec_3C5R ·", "Recording the invoice in the CRM", "inv_0611"} {
		if strings.Contains(v, stale) {
			t.Errorf("exec_01H8 selected, its history unreadable, yet the screen shows %q of exec_3C5R\n%s", stale, v)
		}
	}
	if !strings.Contains(v, "Trace  exec_01H8") || !strings.Contains(v, "its history cannot be read:") {
		t.Errorf("the trace pane does not say the selected history is unreadable\n%s", v)
	}
	if !strings.Contains(v, "history chunk 000000010101 of exec_01H8") {
		t.Errorf("the status line does not say why\n%s", v)
	}
	// At 80 columns the status line cuts the error short: the pane says
	// it whole.
	narrow := open(t, src, 80, 24)
	press(t, narrow, "shift+tab", "j", "tab")
	if v := narrow.View(); !strings.Contains(v, "Trace  exec_01H8") || !strings.Contains(v, "database file is corrupt or not a") {
		t.Errorf("at 80x24 the trace pane does not say why\n%s", v)
	}
	press(t, m, "j")
	if v := m.View(); !strings.Contains(v, "Trace  exec_9F1Z") && !strings.Contains(v, "Trace  exec_7K2Q") {
		t.Errorf("the next readable execution shows its trace again\n%s", v)
	}
}

// unlistable is a snapshot whose executions cannot be listed, as a damaged
// page under the executions reads from the store.
type unlistable struct{ *snapshot }

func (unlistable) Executions(int, int) ([]history.Execution, int, error) {
	return nil, 0, errors.New("read retrylab.db: database file is corrupt or not a retrylab database: page 11 is damaged (its header says it is page 0)")
}

// A list of executions that cannot be read says so in the pane, whole, not
// "none yet: press n" as if the database were empty.
func TestUnreadableExecutionsAreNotNone(t *testing.T) {
	t.Parallel()
	m := open(t, unlistable{article(t)}, 120, 30)
	v := m.View()
	if strings.Contains(v, "none yet") || !strings.Contains(v, "Executions ?") || !strings.Contains(v, "they cannot be read:") {
		t.Errorf("the executions pane does not say the list cannot be read\n%s", v)
	}
	// The pane wraps the error whole; the status line may cut it.
	for _, part := range []string{"page 11", "is damaged (its header", "says it is page 0)"} {
		if !strings.Contains(v, part) {
			t.Errorf("the pane does not hold the whole error (%q)\n%s", part, v)
		}
	}
}
