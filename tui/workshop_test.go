package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/trace"
)

// TestKeysInOneBurstAllCount: the reader hands keys typed together over as
// one message with several runes; each must act.
func TestKeysInOneBurstAllCount(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 40)
	press(t, m, "shift+tab")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	drive(t, m, cmd)
	if m.selID != "exec_7K2Q" {
		t.Fatalf("jj in one burst: selected %q, want the third execution exec_7K2Q", m.selID)
	}
	// A burst that opens the filter types the rest into it.
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/safe")})
	drive(t, m, cmd)
	if !m.filter.open || m.filter.input.Value() != "safe" {
		t.Fatalf("/safe in one burst: filtering=%v value %q", m.filter.open, m.filter.input.Value())
	}
}

// restarting is a snapshot whose Start restarts an existing execution, as
// running a scenario with a fixed execution id does, and keeps its worker
// running.
type restarting struct {
	*snapshot
	id      string
	running []string
}

func (r *restarting) Start(name string, o engine.RunOptions) (*engine.Run, error) {
	r.snapshot.log("start %s", name)
	r.running = []string{r.id}
	return &engine.Run{Execution: r.id, Number: 2}, nil
}

func (r *restarting) Running() []string { return r.running }

// Kill ends the worker at once, as the host does once it has recorded the
// kill.
func (r *restarting) Kill(id string) error {
	r.snapshot.log("kill %s", id)
	r.running = slices.DeleteFunc(r.running, func(s string) bool { return s == id })
	return nil
}

// TestRerunFollowsTheRunItStarted: running the scenario of an older
// execution restarts that execution; the explorer selects it (not the
// newest), and x kills its worker.
func TestRerunFollowsTheRunItStarted(t *testing.T) {
	t.Parallel()
	src := &restarting{snapshot: article(t), id: "exec_7K2Q"}
	m := open(t, src, 160, 40)
	if m.selID != "exec_3C5R" {
		t.Fatalf("starts on the newest: %q", m.selID)
	}
	press(t, m, "n", "enter") // naive, first in lesson order
	if m.selID != "exec_7K2Q" || m.trace.tr == nil || m.trace.tr.exec.ID != "exec_7K2Q" {
		t.Fatalf("after restarting exec_7K2Q the explorer shows %q", m.selID)
	}
	if m.trace.sel != len(m.trace.rows)-1 {
		t.Fatalf("the trace follows the run's tail: row %d of %d selected", m.trace.sel, len(m.trace.rows))
	}
	if !strings.Contains(m.status.text, "run 2 of exec_7K2Q") {
		t.Fatalf("flash: %q", m.status.text)
	}
	press(t, m, "x")
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" {
		t.Fatalf("x after the restart: %v", calls)
	}
}

// TestStatusMessagesExpire: a status message goes after FlashFor; an old
// message's expiry does not clear a newer one.
func TestStatusMessagesExpire(t *testing.T) {
	t.Parallel()
	m := New(Options{Source: article(t), Now: fixedNow, FlashFor: time.Millisecond})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(t, m, cmd)
	press(t, m, "K")
	if m.status.text != "" || m.runs.keysOn == nil {
		t.Fatalf("the status message outlived FlashFor: %q", m.status.text)
	}
	m.status.after = 0 // messages stay: expire by hand
	press(t, m, "K")
	old := m.status.seq
	press(t, m, "J")
	_, _ = m.Update(flashExpiredMsg{seq: old})
	if !strings.Contains(m.status.text, "journal") {
		t.Fatalf("an older message's expiry cleared the newer one: %q", m.status.text)
	}
	_, _ = m.Update(flashExpiredMsg{seq: m.status.seq})
	if m.status.text != "" {
		t.Fatalf("flash stayed: %q", m.status.text)
	}
}

// TestFooterKeepsKeyHints: a long status message never pushes the key
// hints off the footer, at 80 columns or 160.
func TestFooterKeepsKeyHints(t *testing.T) {
	t.Parallel()
	for _, w := range []int{80, 160} {
		m := open(t, article(t), w, 24)
		m.setFlash("showing each step's final attempt only — what many engines record, and a good deal more text", false)
		bar := m.statusBar()
		if lipgloss.Width(bar) != w {
			t.Errorf("%d columns: footer is %d wide", w, lipgloss.Width(bar))
		}
		mustShow(t, bar, fmt.Sprintf("footer at %d", w), "n run", "c crash", "r resume", "? help", "q quit", "showing each step's final")
		m.setFlash("", false)
		mustShow(t, m.statusBar(), fmt.Sprintf("footer at %d without a message", w), "armed", "? help")
	}
}

// TestFooterSaysWhatIsArmedAt80: at 80 columns, on the projector, t says
// which fault it armed, and once its message goes the footer still names
// it whole ("armed timeou…" before: the policy took the room).
func TestFooterSaysWhatIsArmedAt80(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"safe", "run", "run"}), 80, 24)
	press(t, m, "t")
	bar := m.statusBar()
	mustShow(t, bar, "t's message at 80", "timeout after the effect", "n run", "? help", "q quit")
	m.setFlash("", false)
	bar = m.statusBar()
	mustShow(t, bar, "the armed fault at 80", "armed timeout-after-effect", "+0h", "n run", "? help", "q quit")
	if lipgloss.Width(bar) != 80 {
		t.Errorf("footer is %d wide", lipgloss.Width(bar))
	}
	press(t, m, "esc")
	m.setFlash("", false)
	mustShow(t, m.statusBar(), "nothing armed at 80", "keys scn", "armed —")
}

// erasable is a snapshot that E can erase, as a host is.
type erasable struct{ *snapshot }

func (s erasable) Reset() error { s.log("reset"); return nil }

// TestDestructiveKeysAskFirst: D, E and R ask, and act only on y; the
// question fits the footer at 80 columns.
func TestDestructiveKeysAskFirst(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"safe", "run", "run"})
	m := open(t, erasable{snap}, 80, 24)
	for i, r := range m.trace.rows {
		if r.n.kind == kindReplay {
			m.trace.sel = i
		}
	}
	press(t, m, "D")
	if len(snap.Calls()) != 0 || m.modes.confirm == nil {
		t.Fatalf("D acted at once: %v", snap.Calls())
	}
	mustShow(t, m.statusBar(), "D's question", "Delete the journal record of exec_01H8 step-4? y: delete · else: keep")
	press(t, m, "n")
	if len(snap.Calls()) != 0 || m.modes.confirm != nil || m.picker.open {
		t.Fatalf("n answers no and does nothing else: calls %v picking %v", snap.Calls(), m.picker.open)
	}
	// Whole at 80 columns, the answer keys included ('y: eras…' was cut).
	press(t, m, "E")
	mustShow(t, m.statusBar(), "E's question", "Erase all executions, histories, journals and the world? y: erase · else: keep")
	press(t, m, "n")
	press(t, m, "R")
	mustShow(t, m.statusBar(), "R's question", "Reset the world (outbox, keys, CRM; histories stay)? y: reset · else: keep")
	press(t, m, "y")
	if calls := snap.Calls(); strings.Join(calls, "|") != "reset-world" {
		t.Fatalf("R y: %v", calls)
	}
}

// TestQuitDuringARunAsks: q with a run started here running asks; y kills
// its worker and quits once the kill is recorded, w waits for the run to
// end, other keys stay. Without a run of its own q quits at once: a run of
// another process is not the explorer's to kill.
func TestQuitDuringARunAsks(t *testing.T) {
	t.Parallel()
	src := &restarting{snapshot: article(t), id: "exec_7K2Q"}
	m := open(t, src, 80, 24)
	press(t, m, "n", "enter")
	press(t, m, "q")
	if m.modes.quitting || m.modes.confirm == nil {
		t.Fatalf("q during a run quit at once")
	}
	mustShow(t, m.statusBar(), "q's question", "exec_7K2Q is running · y: quit, killing it · w: quit when it ends · else: stay")
	press(t, m, "j")
	if m.modes.quitting || m.modes.confirm != nil {
		t.Fatal("another key stays")
	}
	press(t, m, "q", "y")
	if !m.modes.quitting {
		t.Fatal("q y quits")
	}
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" {
		t.Fatalf("q y did not kill the run started here: %v", calls)
	}

	src.running = []string{"exec_7K2Q"}
	m = open(t, src, 80, 24)
	press(t, m, "q")
	if !m.modes.quitting {
		t.Fatal("q with only another process's run running quits at once")
	}
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" || len(src.running) == 0 {
		t.Fatalf("q killed another process's run: %v", calls)
	}

	m = open(t, src, 80, 24)
	press(t, m, "n", "enter", "q")
	src.running = nil // the run ends while the question shows
	press(t, m, "w")
	if !m.modes.quitting {
		t.Fatal("q w quits once the run has ended")
	}
	m = open(t, article(t), 80, 24)
	press(t, m, "q")
	if !m.modes.quitting {
		t.Fatal("q with nothing running quits at once")
	}
}

// TestQuitTypedAhead: q y in one burst kills and quits (the y came before
// the question and was lost), ctrl+c during a run started here kills it
// too, and q's question follows the run: once it has ended, the footer
// says so instead of offering to kill it.
func TestQuitTypedAhead(t *testing.T) {
	t.Parallel()
	src := &restarting{snapshot: article(t), id: "exec_7K2Q"}
	m := open(t, src, 80, 24)
	press(t, m, "n", "enter", "qy")
	if !m.modes.quitting {
		t.Fatal("q y in one burst did not quit")
	}
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" {
		t.Fatalf("q y in one burst: %v", calls)
	}

	m = open(t, src, 80, 24)
	press(t, m, "n", "enter", "ctrl+c")
	if !m.modes.quitting {
		t.Fatal("ctrl+c did not quit")
	}
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" || len(src.running) != 0 {
		t.Fatalf("ctrl+c during a run started here: %v", calls)
	}

	m = open(t, src, 80, 24)
	press(t, m, "n", "enter", "q")
	mustShow(t, m.statusBar(), "q's question", "exec_7K2Q is running · y: quit, killing it")
	src.running = nil
	_, cmd := m.Update(noticesMsg{})
	drive(t, m, cmd)
	mustShow(t, m.statusBar(), "the question after the run ended", "exec_7K2Q has ended · y: quit · else: stay")
	if strings.Contains(m.statusBar(), "killing") {
		t.Fatalf("the footer still offers to kill an ended run: %q", m.statusBar())
	}
	before := len(src.Calls())
	press(t, m, "y")
	if !m.modes.quitting || len(src.Calls()) != before {
		t.Fatalf("y after the run ended: quitting %v, calls %v", m.modes.quitting, src.Calls()[before:])
	}
}

// TestHelpFitsAt80x24: every key and marker is on some page of the help,
// whole, at 80×24 and at 160×36; nothing is cut.
func TestHelpFitsAt80x24(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {160, 36}} {
		m := open(t, article(t), size[0], size[1])
		press(t, m, "?")
		var seen strings.Builder
		for page := 0; page < 10 && m.help.open; page++ {
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != size[1] {
				t.Errorf("%v: help page %d is %d lines", size, page, len(lines))
			}
			for _, l := range lines {
				if lipgloss.Width(l) > size[0] {
					t.Errorf("%v: a help line is %d wide", size, lipgloss.Width(l))
				}
			}
			if strings.Contains(v, "…") {
				t.Errorf("%v: help page %d cuts a line:\n%s", size, page, v)
			}
			seen.WriteString(v)
			if !strings.Contains(v, "next page") {
				break
			}
			press(t, m, "j")
		}
		all := seen.String()
		for _, g := range m.helpColumns() {
			for _, b := range g {
				mustShow(t, all, fmt.Sprintf("help at %v", size), b.Help().Desc)
			}
		}
		for _, mk := range legendEntries() {
			mustShow(t, all, fmt.Sprintf("help at %v", size), mk[0], mk[1])
		}
		press(t, m, "x")
		if m.help.open {
			t.Errorf("%v: x closes help", size)
		}
	}
}

// TestTraceAndOutboxTogetherWhenNarrow: at 80×24 and 100×30 the outbox
// sits under the trace, so a duplicate shows beside the run that sent it.
func TestTraceAndOutboxTogetherWhenNarrow(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {100, 30}} {
		m := open(t, record(t, []string{"naive", "run"}), size[0], size[1])
		for _, focus := range []string{"trace", "outbox"} {
			v := m.View()
			mustShow(t, v, fmt.Sprintf("%v with the %s focused", size, focus), "✓ execution completed", "2 messages ← duplicate send")
			if lines := strings.Split(v, "\n"); len(lines) != size[1] {
				t.Errorf("%v: %d lines", size, len(lines))
			}
			press(t, m, "tab")
		}
		if m.focus != paneDetail {
			t.Fatalf("%v: tab from the outbox goes to %s", size, paneNames[m.focus])
		}
	}
}

// TestPanesShareWidthInProportion: the columns grow with the terminal.
func TestPanesShareWidthInProportion(t *testing.T) {
	t.Parallel()
	prev := [3]int{}
	for w := wideWidth; w < threeColumnWidth; w++ {
		if e, tr, o := columnWidths(w); o != 0 || e+tr != w || tr < 70 {
			t.Errorf("%d columns, the outbox under the trace: executions %d, trace %d, outbox %d", w, e, tr, o)
		}
	}
	for _, w := range []int{threeColumnWidth, 160, 200, 240} {
		e, tr, o := columnWidths(w)
		if e+tr+o != w || e < execsRoom || o < outboxLeast || tr < e || tr < o || tr < 70 {
			t.Errorf("%d columns: executions %d, trace %d, outbox %d", w, e, tr, o)
		}
		if e < prev[0] || tr <= prev[1] || o < prev[2] {
			t.Errorf("%d columns: a pane shrank: %v -> %v", w, prev, [3]int{e, tr, o})
		}
		prev = [3]int{e, tr, o}
	}
	if _, tr, _ := columnWidths(160); tr < traceRoom {
		t.Errorf("the trace is %d wide at 160 columns: its widest rows need %d", tr, traceRoom)
	}
	if _, _, o := columnWidths(240); o <= 40 {
		t.Errorf("the outbox stays %d wide at 240 columns", o)
	}
}

// TestFocusMarkedInText: without colour (the tests' profile, as NO_COLOR)
// exactly one pane title carries the focus mark, the focused one.
func TestFocusMarkedInText(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{160, 40}, {80, 24}} {
		m := open(t, article(t), size[0], size[1])
		for i := 0; i < 3; i++ {
			v := m.View()
			if n := strings.Count(v, focusMark); n != 1 {
				t.Errorf("%v focus %s: %d focus marks", size, paneNames[m.focus], n)
			}
			mustShow(t, v, "focused title", focusMark+paneNames[m.focus])
			press(t, m, "tab")
		}
	}
}

// TestPickerFilters: / then a few letters finds one-send, the last of 23
// scenarios, without 22 presses of j.
func TestPickerFilters(t *testing.T) {
	t.Parallel()
	snap := article(t)
	m := open(t, snap, 80, 24)
	press(t, m, "n", "/", "one-s", "enter")
	mustShow(t, m.View(), "filtered picker", "one-send", "One send: the base of the fault matrix")
	press(t, m, "enter")
	if calls := snap.Calls(); len(calls) != 1 || calls[0] != "start one-send keys=as the scenario says journal=as the scenario says" {
		t.Fatalf("picked: %v", calls)
	}
	if m.picker.open {
		t.Fatal("the picker stays open after a run starts")
	}
	// The list pages: pgdown moves a page, not a row.
	press(t, m, "n", "pgdown")
	if it := m.picker.list.SelectedItem().(scenarioItem); it.s.Name == "crash" || m.picker.list.Index() < 3 {
		t.Fatalf("pgdown selected %q (index %d)", it.s.Name, m.picker.list.Index())
	}
	press(t, m, "esc")
	if m.picker.open {
		t.Fatal("esc closes the picker")
	}
}

// TestScenarioPurposeAndKeys: the picker and the detail pane say what a
// scenario teaches and the keys it needs.
func TestScenarioPurposeAndKeys(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 80, 24)
	press(t, m, "n", "/", "key-retention", "enter")
	if it := m.picker.list.SelectedItem().(scenarioItem); it.s.Name != "key-retention" {
		press(t, m, "down") // the filter may rank key-retention-fixed first
	}
	v := m.View()
	mustShow(t, v, "picker on key-retention", "teaches: What goes wrong.",
		"keys: n (run the scenario) → A (advance the world clock by 25h) → r (resume", "the killed execution)")
	press(t, m, "esc", "esc")
	m = open(t, record(t, []string{"naive", "run"}), 160, 40)
	press(t, m, "g") // the run row
	mustShow(t, strings.Join(m.detail.lines(156), "\n"), "detail of the run", "naive — Window 1: the response is lost", "teaches:", "keys: n (run the scenario)")
}

// TestExecutionsFilterAsYouTypeAndByMarker: the list narrows while the
// filter is typed, and a marker (or "dup" for ⚠) finds executions by badge.
func TestExecutionsFilterAsYouTypeAndByMarker(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 40)
	press(t, m, "/", "s", "a", "f")
	if !m.filter.open || m.execs.total != 1 || m.selID != "exec_01H8" {
		t.Fatalf("typing saf: filtering=%v, %d executions, selected %q", m.filter.open, m.execs.total, m.selID)
	}
	press(t, m, "esc")
	if m.filter.open || m.execs.total != 3 {
		t.Fatalf("esc restores the filter the box opened with: %d executions", m.execs.total)
	}
	press(t, m, "/", "dup", "enter")
	if m.execs.total != 1 || m.selID != "exec_7K2Q" {
		t.Fatalf("dup finds the ⚠ execution: %d, selected %q", m.execs.total, m.selID)
	}
	mustShow(t, m.View(), "filtered list", "Executions /dup 1", "⚠ exec_7K2Q")
	press(t, m, "esc", "/", "⚠", "enter")
	if m.execs.total != 1 || m.selID != "exec_7K2Q" {
		t.Fatalf("⚠ finds the execution with duplicates: %d, selected %q", m.execs.total, m.selID)
	}
	press(t, m, "esc", "/", "✓", "enter")
	if m.execs.total != 2 {
		t.Fatalf("✓ finds the executions the list marks ✓ (not the ⚠ one): %d", m.execs.total)
	}
}

// TestFooterShowsThePaneAndModeKeys: the footer's short help is the keys
// that work now: the focused pane's, the filter box's while it is open,
// and no q while a prediction is typed (q types a q).
func TestFooterShowsThePaneAndModeKeys(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	m := openWithLessons(t, article(t), fl, 160, 44)
	mustShow(t, m.statusBar(), "trace", "t timeout", "f final-only", "q quit")
	press(t, m, "shift+tab")
	mustShow(t, m.statusBar(), "executions", "/ filter", "m mark", "= compare", "q quit")
	press(t, m, "tab", "tab")
	mustShow(t, m.statusBar(), "outbox", "o outbox/CRM", "q quit")
	press(t, m, "/")
	bar := m.statusBar()
	mustShow(t, bar, "filter box", "enter keep", "esc undo")
	if strings.Contains(bar, "q quit") {
		t.Fatalf("q types into the filter, the footer offers it: %s", bar)
	}
	press(t, m, "esc", "L")
	bar = m.statusBar()
	mustShow(t, bar, "prediction", "enter start", "esc leave lesson")
	if strings.Contains(bar, "q quit") || strings.Contains(bar, "n run") {
		t.Fatalf("while a prediction is typed the footer offers explorer keys: %s", bar)
	}
	press(t, m, "2", "enter")
	mustShow(t, m.statusBar(), "the lesson's next key", "n run", "esc leave lesson", "q quit")
}

// TestRunKeyBeforeTheCatalogueArrives: n pressed before the catalogue's
// answer (a user quick on the first key) opens the picker once it comes;
// the key is neither dropped nor answered "no scenarios".
func TestRunKeyBeforeTheCatalogueArrives(t *testing.T) {
	t.Parallel()
	m := New(Options{Source: article(t), Now: fixedNow})
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m.Update(keyMsg("n"))
	if m.picker.open || strings.Contains(m.status.text, "no scenarios") {
		t.Fatalf("before the catalogue: picker open %v, flash %q", m.picker.open, m.status.text)
	}
	drive(t, m, m.loadScenarios())
	if !m.picker.open {
		t.Fatalf("the catalogue came, the n pressed before it did not open the picker (flash %q)", m.status.text)
	}
}

// startingSource is a snapshot whose Start and Resume succeed, as a host's
// do, without running anything.
type startingSource struct{ *snapshot }

func (s startingSource) Start(name string, _ engine.RunOptions) (*engine.Run, error) {
	s.log("start %s", name)
	return &engine.Run{Execution: "exec_7K2Q", Number: 2}, nil
}

func (s startingSource) Resume(id string) (*engine.Run, error) {
	s.log("resume %s", id)
	return &engine.Run{Execution: id, Number: 2}, nil
}

// TestNarrowRunComesToTheFront: where the panes are tabs (80×24), n or r
// pressed on the Executions or Detail tab brings the trace, with the
// outbox under it, to the front: the room watches the run, not the list.
// In a wide terminal every pane shows and the focus stays.
func TestNarrowRunComesToTheFront(t *testing.T) {
	t.Parallel()
	src := startingSource{record(t, []string{"naive", "run"})}
	for _, keys := range [][]string{{"n", "enter"}, {"r"}} {
		m := open(t, src, 80, 24)
		press(t, m, "shift+tab")
		if m.focus != paneExecs {
			t.Fatalf("shift+tab: focus %s", paneNames[m.focus])
		}
		press(t, m, keys...)
		if m.focus != paneTrace {
			t.Errorf("%v on the Executions tab at 80×24: focus stays on %s", keys, paneNames[m.focus])
		}
		mustShow(t, m.View(), fmt.Sprintf("after %v at 80×24", keys), "[ Trace ]", "Outbox (provider's truth)", "2 messages ← duplicate send")

		m = open(t, src, 160, 40)
		press(t, m, "shift+tab")
		press(t, m, keys...)
		if m.focus != paneExecs {
			t.Errorf("%v at 160×40 moved the focus to %s", keys, paneNames[m.focus])
		}
	}
}

// TestFaultNamedOnceOnItsRows: t armed on the attempt whose scenario plan
// times it out too is injected twice; the run's and the attempt's rows
// name it once (they read 'timeout-after-effect,timeout-after-effect').
func TestFaultNamedOnceOnItsRows(t *testing.T) {
	t.Parallel()
	twice := []string{"timeout-after-effect", "timeout-after-effect", "slow-response"}
	tr := trace.New("exec_7K2Q")
	r := &trace.Run{Number: 1, PID: 7, Policy: "none", Faults: twice}
	tr.Runs = []*trace.Run{r}
	if got := runLine(r, tr, false); !strings.Contains(got, "⚡timeout-after-effect,slow-response") || strings.Count(got, "timeout-after-effect") != 1 {
		t.Errorf("run row %q", got)
	}
	a := &trace.Attempt{N: 1, Finished: true, Outcome: trace.OutcomeTimeout, Duration: time.Second, Faults: twice}
	if _, got := attemptLine(a); !strings.Contains(got, "⚡timeout-after-effect,slow-response") || strings.Count(got, "timeout-after-effect") != 1 {
		t.Errorf("attempt row %q", got)
	}
}
