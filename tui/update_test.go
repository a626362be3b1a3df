package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// article records the article's runs once per test binary run.
func article(t *testing.T) *snapshot {
	t.Helper()
	return record(t, []string{"naive", "run"}, []string{"safe", "run", "run"}, []string{"invoice-crm", "run", "resume"})
}

func TestFocusAndExecutionSelection(t *testing.T) {
	t.Parallel()
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
	if m.selID != "exec_01H8" || m.trace.tr == nil || m.trace.tr.exec.ID != "exec_01H8" {
		t.Fatalf("j: selected %q (trace of %v), want exec_01H8", m.selID, m.trace.tr != nil)
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

func TestCrossHighlightAttemptAndMessage(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 160, 36)
	// Select attempt #1 in the trace: the outbox highlights the message it caused.
	for i, r := range m.trace.rows {
		if k, ok := r.n.link(); ok && k.attempt == 1 {
			m.trace.sel = i
		}
	}
	l := m.selectedAttemptLink()
	if l == nil || l.step != "step-4" || l.attempt != 1 {
		t.Fatalf("selected attempt link = %+v, want step-4 #1", l)
	}
	// Select the second message in the outbox: the trace moves to attempt #2.
	press(t, m, "tab") // trace -> outbox
	if m.focus != paneOutbox {
		t.Fatalf("focus %s, want Outbox", paneNames[m.focus])
	}
	press(t, m, "j", "j")
	msg := m.selectedMessage()
	if msg == nil || msg.msg.Attribution.Attempt != 2 {
		t.Fatalf("selected message = %+v, want the one attempt 2 delivered", msg)
	}
	n := m.selectedRow()
	if k, ok := n.link(); !ok || k.attempt != 2 {
		t.Fatalf("trace selection follows the message: got %q, want attempt #2", n.text)
	}
	if got := m.linkedAttempt(); got == nil || got.attempt != 2 {
		t.Fatalf("linked attempt = %+v, want #2", got)
	}
	if d := strings.Join(m.detail.lines(150), "\n"); !strings.Contains(d, "caused by exec_7K2Q step-4 attempt 2") {
		t.Fatalf("detail of the selected message:\n%s", d)
	}
}

func TestTraceExpandCollapseAndFinalOnly(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 160, 36)
	all := len(m.trace.rows)
	press(t, m, "g") // the run row
	if m.selectedRow().kind != kindRun {
		t.Fatalf("g selects %q, want the run", m.selectedRow().text)
	}
	press(t, m, "h")
	if len(m.trace.rows) != 1 {
		t.Fatalf("collapsing the run leaves %d rows, want 1", len(m.trace.rows))
	}
	press(t, m, "l")
	if len(m.trace.rows) != all {
		t.Fatalf("expanding restores %d rows, want %d", len(m.trace.rows), all)
	}
	press(t, m, "enter")
	if len(m.trace.rows) != 1 {
		t.Fatalf("enter toggles: %d rows, want 1", len(m.trace.rows))
	}
	press(t, m, "enter", "f")
	if len(m.trace.rows) != all-1 || !m.trace.finalOnly {
		t.Fatalf("final-only hides one attempt: %d rows, want %d", len(m.trace.rows), all-1)
	}
	press(t, m, "f")
	if len(m.trace.rows) != all {
		t.Fatalf("every attempt again: %d rows, want %d", len(m.trace.rows), all)
	}
	press(t, m, "G")
	if m.trace.sel != len(m.trace.rows)-1 {
		t.Fatalf("G: selection %d, want the last row %d", m.trace.sel, len(m.trace.rows)-1)
	}
}

func TestHotkeysReachTheEngine(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"safe", "run", "run"})
	m := open(t, snap, 160, 36)
	press(t, m, "t", "T", "c", "C")
	if got := strings.Join(snap.Calls(), "|"); got != "arm timeout-after-effect|arm timeout-before-effect|arm crash-after-effect|arm crash-after-record" {
		t.Fatalf("fault keys: %s", got)
	}
	m.setFlash("", false) // a status message may take the state's place while it shows
	// One fault per attempt: the last armed (C) is the one armed and shown.
	if len(m.status.armed) != 1 || !strings.Contains(m.statusBar(), "armed: crash-after-record") {
		t.Fatalf("the last armed fault not shown alone: %v / %s", m.status.armed, m.statusBar())
	}
	press(t, m, "esc")
	if len(m.status.armed) != 0 || snap.Calls()[4] != "disarm" {
		t.Fatalf("esc disarms: %v %v", m.status.armed, snap.Calls())
	}
	press(t, m, "K", "J", "J")
	if m.runs.keysOn == nil || !*m.runs.keysOn || m.runs.journalOn == nil || *m.runs.journalOn {
		t.Fatalf("K once: keys on; J twice: journal off; got %s %s", tri(m.runs.keysOn), tri(m.runs.journalOn))
	}
	press(t, m, "n", "down", "down", "enter") // the third scenario in lesson order: safe
	calls := snap.Calls()
	if last := calls[len(calls)-1]; last != "start safe keys=on journal=off" {
		t.Fatalf("picker start: %s", last)
	}
	press(t, m, "r")
	if last := snap.Calls()[len(snap.Calls())-1]; last != "resume exec_01H8" {
		t.Fatalf("r: %s", last)
	}
	press(t, m, "x")
	if last := snap.Calls()[len(snap.Calls())-1]; last != "kill exec_01H8" {
		t.Fatalf("x: %s", last)
	}
	// D needs a step: select the replay row.
	for i, r := range m.trace.rows {
		if r.n.kind == kindReplay {
			m.trace.sel = i
		}
	}
	press(t, m, "D", "y", "A", "R", "y")
	got := snap.Calls()[len(snap.Calls())-3:]
	want := []string{"delete-journal exec_01H8 step-4", "advance 25h0m0s", "reset-world"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("D A R: %v, want %v", got, want)
	}
	press(t, m, "o")
	if !m.outbox.crmTab || !strings.Contains(m.View(), "CRM (provider's truth)") {
		t.Fatal("o shows the CRM tab")
	}
	press(t, m, "?")
	if !m.help.open || !strings.Contains(m.View(), "Faults") {
		t.Fatal("? shows grouped help")
	}
	press(t, m, "x") // any key closes help without acting
	if m.help.open || snap.Calls()[len(snap.Calls())-1] != "reset-world" {
		t.Fatal("a key closes help and does nothing else")
	}
	press(t, m, "q") // nothing runs: it quits without asking
	if !m.modes.quitting {
		t.Fatal("q quits")
	}
}

func TestFilterExecutions(t *testing.T) {
	t.Parallel()
	snap := article(t)
	m := open(t, snap, 160, 40)
	press(t, m, "/", "s", "a", "f", "e", "enter")
	if m.execs.total != 1 || m.selID != "exec_01H8" {
		t.Fatalf("filter 'safe': %d executions, selected %q", m.execs.total, m.selID)
	}
	press(t, m, "esc")
	if m.execs.total != 3 {
		t.Fatalf("esc clears the filter: %d executions, want 3", m.execs.total)
	}
}

func TestMouseSelectsAndScrolls(t *testing.T) {
	t.Parallel()
	snap := article(t)
	m := open(t, snap, 160, 40)
	// Click the second execution (rows 1-2 are the first, 3-4 the second).
	_, cmd := m.Update(tea.MouseMsg{X: 5, Y: 3, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	drive(t, m, cmd)
	if m.focus != paneExecs || m.selID != "exec_01H8" {
		t.Fatalf("click: focus %s, selected %q", paneNames[m.focus], m.selID)
	}
	_, cmd = m.Update(tea.MouseMsg{X: 5, Y: 3, Action: tea.MouseActionPress, Button: tea.MouseButtonWheelDown})
	drive(t, m, cmd)
	if m.selID != "exec_7K2Q" {
		t.Fatalf("wheel down: selected %q", m.selID)
	}
}

func TestResizeAtAnyTime(t *testing.T) {
	t.Parallel()
	snap := article(t)
	m := open(t, snap, 160, 40)
	for _, size := range [][2]int{{80, 24}, {0, 0}, {10, 3}, {200, 60}, {60, 16}} {
		_, cmd := m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		drive(t, m, cmd)
		v := m.View()
		if size[0] >= MinWidth && size[1] >= MinHeight {
			lines := strings.Split(v, "\n")
			if len(lines) != size[1] {
				t.Errorf("%dx%d: %d lines drawn", size[0], size[1], len(lines))
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w > size[0] {
					t.Errorf("%dx%d: line %d is %d wide", size[0], size[1], i, w)
				}
			}
		}
	}
}

// TestStartCleanAsksThenErasesExecutions: E erases the executions as well
// as the world (R keeps the histories), only once y confirms.
func TestStartCleanAsksThenErasesExecutions(t *testing.T) {
	t.Parallel()
	snap := article(t)
	m := open(t, snap, 160, 44)
	if m.execs.total == 0 {
		t.Fatal("the article's database has executions")
	}
	press(t, m, "E")
	mustShow(t, m.View(), "the question", "Erase all executions, histories, journals and the world? y: erase")
	press(t, m, "j")
	if calls := snap.Calls(); len(calls) != 0 || m.execs.total == 0 || !strings.Contains(m.status.text, "cancelled") {
		t.Fatalf("another key keeps everything: calls %v, %d executions, flash %q", calls, m.execs.total, m.status.text)
	}
	press(t, m, "E", "y")
	if calls := snap.Calls(); strings.Join(calls, "|") != "reset" {
		t.Fatalf("E y: calls %v", calls)
	}
	if m.execs.total != 0 || m.selID != "" || m.trace.tr != nil {
		t.Fatalf("after E y: %d executions, selected %q", m.execs.total, m.selID)
	}
	mustShow(t, m.View(), "a clean screen", "erased: no executions, an empty world")
}

// A says how far it moved the world clock as a person writes it (25h, not
// Go's 25h0m0s), and how far ahead it is in all.
func TestAdvanceClockSaysHours(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"safe", "run"})
	m := open(t, snap, 200, 36)
	press(t, m, "A")
	v := m.View()
	if !strings.Contains(v, "world clock advanced 25h: now +25h; keys older") || strings.Contains(v, "0m0s") {
		t.Fatalf("after A the footer does not say 25h:\n%s", v)
	}
	// A second A says the total: the clock is 50 h ahead now.
	press(t, m, "A")
	if v := m.View(); !strings.Contains(v, "world clock advanced 25h: now +50h") {
		t.Fatalf("after a second A the footer does not say the total:\n%s", v)
	}
	// The footer's state says the total too, once the message is gone.
	if m.status.worldOffset != 50*time.Hour {
		t.Fatalf("after two A the footer read the offset %s, want 50h", m.status.worldOffset)
	}
	m.status.text = ""
	if bar := m.statusBar(); !strings.Contains(bar, "world clock +50h") {
		t.Fatalf("after two A the footer's state lacks the total:\n%s", bar)
	}
}

// A move of the world clock is on the trace where it happened, with the
// key it expired: the cause of key-retention's second invoice. Its detail
// says which event it is and what it means for a late retry.
func TestTraceShowsClockMoveAndExpiredKey(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"key-retention", "run", "advance", "advance", "resume"})
	m := open(t, snap, 160, 44)
	v := m.View()
	mustShow(t, v, "the trace of key-retention", "⏰ world clock +25h · now +25h", "⏰ world clock +25h · now +50h",
		"expired (step-4, kept 24h)")
	if strings.Index(v, "now +25h") > strings.Index(v, "expired (step-4") || strings.Index(v, "expired (step-4") > strings.Index(v, "now +50h") {
		t.Errorf("the key expires with the first move, not the second:\n%s", v)
	}
	found := false
	for i, r := range m.trace.rows {
		if strings.Contains(r.n.text, "expired (step-4") {
			m.trace.sel, found = i, true
		}
	}
	if !found {
		t.Fatal("no row of the expired key")
	}
	mustShow(t, strings.Join(m.detail.lines(156), "\n"), "the expired key's detail", "KeyExpired at", "a retry with one executes again")
}

// pacedSource is a recorded source that takes slow motion, as a host does.
type pacedSource struct {
	*snapshot
	pace time.Duration
}

func (p *pacedSource) SetPace(d time.Duration) {
	p.log("pace %s", d)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pace = d
}

func (p *pacedSource) Pace() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pace
}

// S turns slow motion on for the runs to come and off again; the footer
// says it while it is on.
func TestSlowMotionKeyToggles(t *testing.T) {
	t.Parallel()
	src := &pacedSource{snapshot: record(t, []string{"naive", "run"})}
	m := open(t, src, 200, 36)
	press(t, m, "S")
	if src.Pace() != 2*time.Second {
		t.Fatalf("S: the source's pace is %s, want 2s", src.Pace())
	}
	mustShow(t, m.View(), "the footer after S", "slow motion: each attempt of the next runs waits 2s first")
	m.status.text = ""
	if bar := m.statusBar(); !strings.Contains(bar, "slow motion 2s") {
		t.Fatalf("the footer's state lacks slow motion:\n%s", bar)
	}
	press(t, m, "S")
	if src.Pace() != 0 || strings.Contains(m.statusBar(), "slow motion 2s") {
		t.Fatalf("a second S: pace %s, footer %q", src.Pace(), m.statusBar())
	}
	if calls := strings.Join(src.Calls(), "|"); calls != "pace 2s|pace 0s" {
		t.Errorf("calls %q", calls)
	}
}
