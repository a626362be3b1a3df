package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/trace"
)

func TestGoldenHelpAt80x24(t *testing.T) {
	t.Parallel()
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "execution completed", "?")
	mustShow(t, v, "help at 80×24", "Help · page 1 of 2", "Move", "Run", "next page")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenHelpAt80x24SecondPage(t *testing.T) {
	t.Parallel()
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "execution completed", "?", "j")
	mustShow(t, v, "help page 2 at 80×24", "Help · page 2 of 2", "Markers", "Faults", "◆       unknown to caller; delivered")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenTraceWithOutboxAt100x30(t *testing.T) {
	t.Parallel()
	v := viewOutbox(t, record(t, []string{"naive", "run"}), 100, 30, "duplicate send")
	mustShow(t, v, "100×30", "▶ Trace", "◆ timeout", "2 messages ← duplicate send")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenPickerAt80x24(t *testing.T) {
	t.Parallel()
	m := New(Options{Source: record(t, []string{"naive", "run"}), Now: fixedNow})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	waitFor := func(want string) {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitFor("execution completed")
	for _, k := range []string{"n", "/", "retention", "enter"} {
		tm.Send(keyMsg(k))
	}
	waitFor("“retention” 2 items") // the list filters in a command of its own
	tm.Send(settleMsg{})
	tm.Quit()
	v := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View()
	mustShow(t, v, "picker", "Run which scenario?", "key-retention", "teaches:", "keys: n (run the scenario) → A")
	golden.RequireEqual(t, []byte(v))
}

// TestGoldenLessonPausedOnTheCrashAt80x24: the crash lesson after n, at
// 80×24: the killed run, its one message, and the next key.
func TestGoldenLessonPausedOnTheCrashAt80x24(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	fl.done["naive"] = lesson.Feedback{Correct: true}
	m := openWithLessons(t, article(t), fl, 80, 24)
	press(t, m, "L", "1", "enter", "n")
	v := m.View()
	mustShow(t, v, "paused lesson", "▶ press r  Resume the killed execution", "now: worker killed · 1 message in the outbox")
	golden.RequireEqual(t, []byte(v))
}

// The picker's filter ranks what a user means first: names that begin
// with the text, then names that hold it, then titles (those that begin
// with it first); scattered letters only when nothing else matches.
// bubbles' fuzzy filter alone put safe (whose title ends "a journal")
// above journal-deleted for "jour", and "safe" found reads-are-free.
func TestPickerFilterRanksNamesFirst(t *testing.T) {
	t.Parallel()
	m := New(Options{Source: record(t, []string{"naive", "run"}), Now: fixedNow})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 40))
	waitFor := func(want string) {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitFor("execution completed")
	for _, k := range []string{"n", "/", "jour", "enter"} {
		tm.Send(keyMsg(k))
	}
	waitFor("“jour” 4 items")
	tm.Send(settleMsg{})
	tm.Quit()
	v := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View()
	var names []string
	for _, l := range strings.Split(v, "\n") {
		f := strings.Fields(strings.Trim(l, "│ "))
		if len(f) == 1 && strings.Contains(f[0], "-") || len(f) == 1 && (f[0] == "safe" || f[0] == "naive") {
			names = append(names, f[0])
		}
	}
	if want := []string{"journal-deleted", "regenerated-args-fixed", "safe", "invoice-crm"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("the picker lists %v for “jour”, want %v:\n%s", names, want, v)
	}
}

// TestHelpExplainsEveryMarkTheTraceShows: every glyph of the one mark
// table that the article's executions put on screen (naive's ⚡ on the
// lost response, invoice-crm's ┆ before the resumed run, …) has its line
// in the help's legend: an audience asks what ⚡ means.
func TestHelpExplainsEveryMarkTheTraceShows(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 44)
	press(t, m, "shift+tab")
	screens := ""
	for i := 0; i < 3; i++ {
		screens += m.View()
		press(t, m, "j")
	}
	explained := map[string]bool{}
	for _, e := range legendEntries() {
		explained[e[0]] = true
	}
	for mk := trace.MarkOK; mk <= trace.MarkGap; mk++ {
		if mk == trace.MarkRunning {
			continue // … is also where a long line is cut
		}
		if g := mk.Glyph(); strings.Contains(screens, g) && !explained[g] {
			t.Errorf("the trace shows %s (%s) but the help's legend does not explain it", g, mk.Word())
		}
	}
	for _, g := range []string{"⚡", "┆", "✂", "↻"} {
		if !explained[g] {
			t.Errorf("the legend lacks %s", g)
		}
	}
	// Its words start in one column, whatever the glyph's width (⚡ is two
	// cells).
	for _, e := range legendEntries() {
		press(t, m, "?")
		v := m.View()
		press(t, m, "esc")
		for _, line := range strings.Split(v, "\n") {
			if i := strings.Index(line, e[0]+" "); i >= 0 && strings.Contains(line, e[1]) {
				at := lipgloss.Width(line[:strings.Index(line, e[1])]) - lipgloss.Width(line[:i])
				if at != helpKeyWidth {
					t.Errorf("%s's words start %d cells after it, want %d:\n%s", e[0], at, helpKeyWidth, line)
				}
			}
		}
	}
}

// TestHelpShowsEveryLineAtEverySize: paging through the help shows every
// key and every marker of the legend, whatever the terminal's size down to
// the minimum; at 60×16 the legend ran off the bottom of the last page.
func TestHelpShowsEveryLineAtEverySize(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 80, 24)
	var wants []string
	for _, g := range m.helpColumns() {
		for _, b := range g {
			wants = append(wants, b.Help().Desc)
		}
	}
	for _, e := range legendEntries() {
		wants = append(wants, e[1])
	}
	for _, size := range [][2]int{{60, 16}, {60, 18}, {60, 20}, {80, 16}, {80, 24}, {100, 20}, {160, 16}} {
		_, cmd := m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		drive(t, m, cmd)
		press(t, m, "?")
		seen := ""
		for i := 0; i < 10; i++ {
			v := m.View()
			if n := len(strings.Split(v, "\n")); n != size[1] {
				t.Fatalf("help at %d×%d is %d lines:\n%s", size[0], size[1], n, v)
			}
			seen += v
			if !strings.Contains(v, "next page") || strings.Contains(v, fmt.Sprintf("page %d of %d", i+1, i+1)) {
				break
			}
			press(t, m, "j")
		}
		press(t, m, "esc")
		for _, w := range wants {
			if !strings.Contains(seen, w) {
				t.Errorf("help at %d×%d never shows %q", size[0], size[1], w)
			}
		}
	}
}

// TestPickerFitsTheMinimumWidth: from 60 columns up the picker's list
// fits its box; below 66 its title was wider than the box, and every line
// of the list, padded to the title, ended in "…".
func TestPickerFitsTheMinimumWidth(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 80, 24)
	for w := MinWidth; w <= 80; w++ {
		_, cmd := m.Update(tea.WindowSizeMsg{Width: w, Height: 16})
		drive(t, m, cmd)
		press(t, m, "n")
		v := m.View()
		press(t, m, "esc")
		mustShow(t, v, fmt.Sprintf("picker at %d×16", w), "Run which scenario?", "naive", "Window 1: the response is lost")
		for _, line := range strings.Split(v, "\n") {
			// " …" ends a teaching cut between words, on purpose.
			if strings.HasSuffix(line, "…│") && !strings.HasSuffix(line, " …│") && !strings.Contains(line, "teaches:") && !strings.Contains(line, "retry") {
				t.Errorf("picker at %d×16: a line is cut: %q\n%s", w, line, v)
				break
			}
		}
	}
}

// TestPickerRanksAsAPersonReads: the ranking tiers on the catalogue's
// names and titles: the name itself, a name's prefix, a word of a name,
// a name that holds the text, then titles; letters in order only for a
// text that matches nothing else (a typo).
func TestPickerRanksAsAPersonReads(t *testing.T) {
	t.Parallel()
	targets := []string{
		"reads-are-free Reads are free to retry",
		"unsafe-escalates An unsafe tool stops and escalates",
		"natural-idempotency Natural idempotency: an upsert is safe to repeat",
		"safe Both defences: an idempotency key and a journal",
		"key-retention-fixed Key retention sized",
		"key-retention Key retention vs a human pause",
		"naive Window 1: the response is lost",
	}
	for _, c := range []struct{ term, want string }{
		{"safe", "safe unsafe-escalates natural-idempotency"},
		{"key-retention", "key-retention key-retention-fixed"},
		{"retention", "key-retention-fixed key-retention"},
		{"window", "naive"},
		{"nave", "naive"},
	} {
		var got []string
		for _, r := range rankScenarios(c.term, targets) {
			name, _, _ := strings.Cut(targets[r.Index], " ")
			got = append(got, name)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q ranks %v, want %s", c.term, got, c.want)
		}
	}
}

// TestPickerSaysItsPage: at 80×24 the catalogue takes pages, and the
// picker says which one shows, of how many.
func TestPickerSaysItsPage(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 80, 24)
	press(t, m, "n")
	mustShow(t, m.View(), "picker at 80×24", "page 1 of ")
	press(t, m, "pgdown")
	mustShow(t, m.View(), "picker's second page", "page 2 of ")
}

// TestPickerFilterEnterKeepsThenRuns: in the picker, / and a text, then
// enter keeps the filter (the footer says so while it is typed) and a
// second enter runs the scenario selected, as the docs say.
func TestPickerFilterEnterKeepsThenRuns(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := New(Options{Source: snap, Now: fixedNow})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	waitFor := func(want string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitFor("execution completed")
	for _, k := range []string{"n", "/", "retention"} {
		tm.Send(keyMsg(k))
	}
	waitFor("enter: keep the filter, then enter: run")
	tm.Send(keyMsg("enter"))
	waitFor("“retention” 2 items")
	tm.Send(keyMsg("enter"))
	waitFor("snapshot: not started") // the start's answer, in the footer
	tm.Send(settleMsg{})
	tm.Quit()
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	if fm.picker.Shown() {
		t.Fatal("the second enter did not run: the picker is still open")
	}
	var started []string
	for _, c := range snap.Calls() {
		if strings.HasPrefix(c, "start") {
			started = append(started, c)
		}
	}
	if len(started) != 1 || !strings.Contains(started[0], "key-retention") {
		t.Fatalf("the second enter started %v, want key-retention", started)
	}
}
