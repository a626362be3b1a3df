package tui

import (
	"strings"
	"testing"
)

// article records the article's runs once per test binary run.
func article(t *testing.T) *snapshot {
	t.Helper()
	return record(t, []string{"naive", "run"}, []string{"safe", "run", "run"}, []string{"invoice-crm", "run", "resume"})
}

func TestFocusAndExecutionSelection(t *testing.T) {
	snap := article(t)
	m := open(t, snap, 160, 40)
	if m.focus != paneTrace {
		t.Fatalf("focus starts on %s, want Trace", paneNames[m.focus])
	}
	if m.selID != "exec_3C5R" {
		t.Fatalf("newest execution selected first: got %q, want exec_3C5R", m.selID)
	}
	press(t, m, "shift+tab")
	if m.focus != paneExecs {
		t.Fatalf("shift+tab: focus %s, want Executions", paneNames[m.focus])
	}
	press(t, m, "j")
	if m.selID != "exec_01H8" || m.tr == nil || m.tr.exec.ID != "exec_01H8" {
		t.Fatalf("j: selected %q (trace of %v), want exec_01H8", m.selID, m.tr != nil)
	}
	press(t, m, "j", "j", "j")
	if m.selID != "exec_7K2Q" {
		t.Fatalf("j past the end: selected %q, want the last, exec_7K2Q", m.selID)
	}
	press(t, m, "g")
	if m.selID != "exec_3C5R" {
		t.Fatalf("g: selected %q, want the first", m.selID)
	}
	press(t, m, "tab", "tab")
	if m.focus != paneOutbox {
		t.Fatalf("tab tab from Executions: focus %s, want Outbox (Detail is not a stop in wide layouts)", paneNames[m.focus])
	}
	press(t, m, "tab")
	if m.focus != paneExecs {
		t.Fatalf("tab wraps: focus %s, want Executions", paneNames[m.focus])
	}
	if !strings.Contains(m.View(), "exec_3C5R") {
		t.Fatal("view lacks the selected execution")
	}
}
