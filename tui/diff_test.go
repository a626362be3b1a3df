package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	xdiff "github.com/retrylab/retrylab/engine/diff"
)

// compareKeys select naive (listed under the newer safe), mark it, go back
// to safe and compare: A naive, B safe.
var compareKeys = []string{"shift+tab", "j", "m", "k", "="}

// compareView runs the explorer in a teatest program, presses the keys once
// the list shows, and returns the frame once the comparison is in.
func compareView(t *testing.T, src Source, w, h int, keys ...string) string {
	t.Helper()
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	wait := func(want string) {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	wait("exec_01H8")
	for _, k := range keys {
		tm.Send(keyMsg(k))
	}
	wait("effects")
	tm.Send(settleMsg{})
	tm.Quit()
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View()
}

func TestGoldenCompareWide(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"}, []string{"safe", "run", "run"})
	v := compareView(t, snap, 160, 45, compareKeys...)
	mustShow(t, v, "compare view", "Compare  A exec_7K2Q  ⇄  B exec_01H8",
		"A  exec_7K2Q naive · none", "B  exec_01H8 safe · keys+journal",
		"›≠ r1 t1 step-4 send_invoice_email  #1 ◆+1 #2 ✓+1", "#1 ◆+1 #2 ↺",
		"⟲ step-4 replayed from journal (run 1)", " > — ",
		"effects  naive: 2 messages to jordan@acme.dev; safe: 1", "esc/= close")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenCompareNarrow(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"}, []string{"safe", "run", "run"})
	v := compareView(t, snap, 80, 24, compareKeys...)
	mustShow(t, v, "stacked compare view", "›≠ A r1 t1 step-4 send_invoice_email  #1 ◆+1 #2 ✓+1",
		"   B r1 t1 step-4 send_invoice_email  #1 ◆+1 #2 ↺", "effects  naive: 2 messages to jordan@acme.dev; safe: 1")
	for i, l := range strings.Split(v, "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("line %d is %d columns wide: %q", i, w, l)
		}
	}
	if n := strings.Count(v, "\n") + 1; n != 24 {
		t.Errorf("%d lines, want 24", n)
	}
	golden.RequireEqual(t, []byte(v))
}

// Both sides scroll together; the rows that differ carry their marker in
// text; esc closes; = without a mark says what to do.
func TestCompareKeys(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"}, []string{"safe", "run", "run"})
	m := open(t, snap, 160, 45)
	press(t, m, "=")
	if m.cmp.open || !strings.Contains(m.status.text, "press m on an execution first") {
		t.Fatalf("= without a mark: open %v, flash %q", m.cmp.open, m.status.text)
	}
	press(t, m, compareKeys[:3]...)
	if v := m.View(); !strings.Contains(v, "│ A none  ") || strings.Count(v, "│ A ") != 1 {
		t.Errorf("the marked execution is not tagged once in the list:\n%s", v)
	}
	press(t, m, compareKeys[3:]...)
	if !m.cmp.open || m.cmp.res == nil || m.cmp.a != "exec_7K2Q" || m.cmp.b != "exec_01H8" {
		t.Fatalf("compare not open on naive vs safe: %+v", m.cmp)
	}
	var markers []string
	for _, r := range m.cmp.res.Rows {
		markers = append(markers, r.Marker())
	}
	if got := strings.Join(markers, ""); got != "≠=>>" {
		t.Errorf("row markers %q, want ≠=>>", got)
	}
	press(t, m, "down", "down")
	v := m.View()
	if m.cmp.sel != 2 || !strings.Contains(v, "›> — ") || !strings.Contains(v, "row 3 > only in B") {
		t.Errorf("down twice should select row 3 on both sides at once (sel %d)\n%s", m.cmp.sel, v)
	}
	press(t, m, "G")
	if m.cmp.sel != 3 {
		t.Errorf("G: row %d, want the last (3)", m.cmp.sel)
	}
	press(t, m, "esc")
	if m.cmp.open || strings.Contains(m.View(), "Compare  A") {
		t.Errorf("esc did not close the comparison")
	}
	if m.cmp.marked != "exec_7K2Q" {
		t.Errorf("the mark is kept after closing: %q", m.cmp.marked)
	}
}

// A marked execution that is gone (the database was reset) closes the
// comparison with a one-line message.
func TestCompareMarkedGone(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 80, 24)
	m.cmp.marked = "exec_GONE"
	press(t, m, "=")
	if m.cmp.open || !strings.Contains(m.status.text, "compare: no such execution: exec_GONE") || !m.status.bad {
		t.Errorf("open %v, flash %q", m.cmp.open, m.status.text)
	}
}

// Imported executions compare too: their events are the importer's
// translation (ImportedEvents), not a history, and their effects are the
// audit's inferred ones.
func TestCompareImported(t *testing.T) {
	t.Parallel()
	path := importedDB(t, "../fixtures/otlp/openinference-charge.jsonl", "../fixtures/otlp/adk-send-twice.json")
	h := openHost(t, path)
	defer h.Close()
	// A host's notices never end: run the explorer as the runtime would.
	m, r, _ := openExplorer(t, h, 160, 45)
	defer m.Close()
	for _, k := range compareKeys {
		r.send(keyMsg(k))
		r.settle(t)
	}
	if !m.cmp.open || m.cmp.res == nil || m.cmp.a == m.cmp.b {
		t.Fatalf("compare not open on the two imported executions: %+v (flash %q)", m.cmp, m.status.text)
	}
	ids := map[string]bool{m.cmp.a: true, m.cmp.b: true}
	if !ids["otlp-conv-sess-oi-7"] || !ids["otlp-conv-sess-adk-mail-1"] {
		t.Fatalf("compared %s and %s", m.cmp.a, m.cmp.b)
	}
	if r := m.cmp.res; r.A.Calls == 0 || r.B.Calls == 0 || !r.A.Effects.Inferred || !r.B.Effects.Inferred {
		t.Errorf("an imported side was folded empty or its effects not inferred: A %+v B %+v", r.A, r.B)
	}
	// The view does not contradict itself: a row paired as ≠ is a call the
	// two have in common, so none pairs calls of different tools, and
	// "nothing in common" comes only with no call paired.
	for _, row := range m.cmp.res.Rows {
		if row.A != nil && row.B != nil && row.A.Kind == xdiff.KindCall && row.A.Tool != row.B.Tool {
			t.Errorf("%s paired with %s (%s) beside %q", row.A.Name(), row.B.Name(), row.Why, m.cmp.res.Parting)
		}
	}
	v := ansi.Strip(m.View())
	mustShow(t, v, "imported compare view", "Compare  A otlp-conv-sess-", "charge_card", "send_email", "nothing in common",
		"effects  billing_agent: 1 charge_card call took effect (inferred)",
		"effects  billing_agent: 0 send_email calls took effect (inferred); invoke_workflow mail_agent: 2")
	if t.Failed() {
		t.Logf("view:\n%s", v)
	}
}
