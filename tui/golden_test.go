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
	"github.com/muesli/termenv"
)

func init() {
	// Golden views are plain text: no colour codes, whatever the terminal.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
}

// view runs the explorer over src in a teatest program at a fixed size,
// presses keys once want appears, and returns the final frame.
func view(t *testing.T, src Source, w, h int, want string, keys ...string) string {
	t.Helper()
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	return viewModel(t, m, w, h, want, keys...)
}

// viewOutbox is view for a screen that shows the outbox pane: it waits
// for the whole outbox's size too, which its own read brings (the
// selected execution's deliveries come earlier, with its trace).
func viewOutbox(t *testing.T, src Source, w, h int, want string, keys ...string) string {
	t.Helper()
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	return viewModelOnce(t, m, w, h, []string{want, "whole outbox:"}, keys...)
}

// viewModel is view for a model built by the caller.
func viewModel(t *testing.T, m *Model, w, h int, want string, keys ...string) string {
	t.Helper()
	return viewModelOnce(t, m, w, h, []string{want}, keys...)
}

// viewModelOnce is viewModel that waits until the output has shown every
// one of wants, for views whose parts arrive from separate reads.
func viewModelOnce(t *testing.T, m *Model, w, h int, wants []string, keys ...string) string {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	for _, k := range keys {
		tm.Send(keyMsg(k))
	}
	tm.Send(settleMsg{})
	tm.Quit()
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	return final.View()
}

// mustShow fails the test for each text the view lacks.
func mustShow(t *testing.T, v, what string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(v, want) {
			t.Errorf("%s lacks %q", what, want)
		}
	}
}

// settleMsg is sent after the keys, so the final model has seen them all.
type settleMsg struct{}

func TestGoldenNaiveDuplicateInOutbox(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	v := viewOutbox(t, snap, 160, 36, "duplicate send")
	mustShow(t, v, "naive view", "2 messages ← duplicate send", "◆ timeout", "✓ 200", "⚠ exec_7K2Q")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenNaiveFinalAttemptOnly(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	v := viewOutbox(t, snap, 160, 36, "duplicate send", "f")
	if strings.Contains(v, "#1 ◆") || !strings.Contains(v, "#2 ✓") || !strings.Contains(v, "2 messages ← duplicate send") {
		t.Errorf("final-only view should hide attempt #1 but keep #2 and the outbox's duplicate:\n%s", v)
	}
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenSafeDedupAndReplay(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"safe", "run", "run"})
	v := viewOutbox(t, snap, 160, 36, "replayed from journal")
	mustShow(t, v, "safe view", "↺ deduplicated by key", "ik_a94a0b1d", "⟲ send_invoice_email", "1 message ✓")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenInvoiceCRMCrashAndResume(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"invoice-crm", "run", "resume"})
	v := viewOutbox(t, snap, 160, 36, "replayed from journal")
	mustShow(t, v, "invoice-crm view", "☠ worker killed (exit 137)", "┆ 53.1s with no worker running", "⟲ send_invoice_email  step-4  replayed", "1 message ✓")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenHelp(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	v := view(t, snap, 160, 36, "duplicate send", "?")
	mustShow(t, v, "help", "Faults", "arm: crash, effect unrecorded", "kill the worker now")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenNarrow(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	// The trace's title, not the tab bar's "Trace": the list and the
	// selected execution's trace arrive by reads of their own, and the
	// outbox's total could come first.
	v := viewOutbox(t, snap, 80, 24, "exec_7K2Q · naive", "tab")
	if !strings.Contains(v, "[ Outbox ]") || !strings.Contains(v, "2 messages ← duplicate send") {
		t.Errorf("narrow layout should tab to the outbox:\n%s", v)
	}
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenTooSmall(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	v := view(t, snap, 50, 10, "needs a terminal")
	if !strings.Contains(v, "at least 60×16") || !strings.Contains(v, "50×10") || !strings.Contains(v, "retrylab --help") {
		t.Errorf("too-small message:\n%s", v)
	}
	golden.RequireEqual(t, []byte(v))
}

var _ tea.Msg = settleMsg{}

// An empty database at 80×24: the one pane on screen says how to begin.
func TestGoldenEmptyNarrow(t *testing.T) {
	t.Parallel()
	v := viewOutbox(t, &snapshot{}, 80, 24, "n runs a scenario")
	if !strings.Contains(v, "whole outbox: 0 messages") {
		t.Errorf("empty database at 80×24:\n%s", v)
	}
	golden.RequireEqual(t, []byte(v))
}

// TestTooSmallNeverBreaksAWord: at every width below the minimum the
// message breaks at spaces: "--help" was cut into "-" and "-help" at 59.
func TestTooSmallNeverBreaksAWord(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 80, 24)
	for w := 24; w < MinWidth; w++ {
		_, cmd := m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
		drive(t, m, cmd)
		v := m.View()
		if !strings.Contains(v, "--help).") || !strings.Contains(v, "headless") {
			t.Errorf("at %d×30 the message breaks a word:\n%s", w, v)
		}
		for _, line := range strings.Split(v, "\n") {
			if lipgloss.Width(line) > w {
				t.Errorf("at %d×30 a line is %d wide: %q", w, lipgloss.Width(line), line)
			}
		}
	}
}

// layoutSizes are the sizes a new user tries: the tabs at 80×24, the
// trace with the outbox under it at 120×35, three columns at 160×45.
var layoutSizes = [][2]int{{80, 24}, {120, 35}, {160, 45}}

// TestGoldenLayouts: the main view over the article's executions at each
// width, and the filter box open on each tab (each focusable pane): the
// list it filters is on screen, whichever tab it was opened from.
func TestGoldenLayouts(t *testing.T) {
	t.Parallel()
	for _, size := range layoutSizes {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m := open(t, article(t), size[0], size[1])
			v := m.View()
			if lines := strings.Split(v, "\n"); len(lines) != size[1] {
				t.Fatalf("%d lines", len(lines))
			}
			mustShow(t, v, "main view", "Trace", "Outbox", "Executions")
			golden.RequireEqual(t, []byte(v))
		})
		seen := map[pane]bool{}
		for i := 0; i < 4; i++ {
			m := open(t, article(t), size[0], size[1])
			for j := 0; j < i; j++ {
				press(t, m, "tab")
			}
			if seen[m.focus] { // wide: the Detail pane takes no focus
				continue
			}
			seen[m.focus] = true
			from := paneNames[m.focus]
			t.Run(fmt.Sprintf("%dx%dFilterFrom%s", size[0], size[1], from), func(t *testing.T) {
				press(t, m, "/", "saf")
				v := m.View()
				mustShow(t, v, "the filter from "+from, "/saf", "exec_01H8  safe", "enter keep")
				golden.RequireEqual(t, []byte(v))
			})
		}
	}
}

// TestDetailWrapsAndScrolls: at 80×24 the Detail tab wraps an attempt's
// request body instead of cutting it (`body {"body":"…","subject":"Y…`),
// and ] and [ scroll what does not fit.
func TestDetailWrapsAndScrolls(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 80, 24)
	press(t, m, "k", "k")
	if n := m.trace.selected(); n == nil || n.kind != kindAttempt {
		t.Fatalf("k k selects %v", n)
	}
	for m.focus != paneDetail {
		press(t, m, "tab")
	}
	v := m.View()
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", "").Replace(v)), "")
	if !strings.Contains(flat, `"subject":"YourJuneinvoice"`) {
		t.Errorf("the body is cut:\n%s", v)
	}
	for _, l := range strings.Split(v, "\n") {
		if strings.HasSuffix(l, "…│") {
			t.Errorf("a line is cut: %q", l)
		}
	}
	// In a pane of 4 lines the text takes more: Scroll (] and [) moves it,
	// and the title says which lines show.
	d := m.detail
	d.SetSize(40, 6)
	first := d.View()
	mustShow(t, first, "the Detail's title", "Detail · lines 1-4 of ")
	d.Scroll(3)
	if v := d.View(); v == first || !strings.Contains(v, "lines 4-7 of 7") {
		t.Errorf("Scroll does not scroll:\n%s\n%s", first, v)
	}
	d.Scroll(-3)
	if d.View() != first {
		t.Errorf("Scroll does not scroll back:\n%s", d.View())
	}
}

// TestRunRowKeepsItsOutcome: a run's row too wide for the pane cuts its
// policy and faults, not how it ended.
func TestRunRowKeepsItsOutcome(t *testing.T) {
	t.Parallel()
	row := "run 1 · pid 4001 · policy keys+journal · ⚡timeout-after-effect,crash-after-effect · ✓ completed"
	for _, w := range []int{40, 60, 76} {
		got := keepOutcome(row, w)
		if lipgloss.Width(got) > w || !strings.HasSuffix(got, " · ✓ completed") || !strings.HasPrefix(got, "run 1") {
			t.Errorf("%d cells: %q", w, got)
		}
	}
	if got := keepOutcome("run 1 · ✓ completed", 76); got != "run 1 · ✓ completed" {
		t.Errorf("a row that fits changed: %q", got)
	}
}

// TestGoldenNaiveFaultAt160x45: at 160 columns the naive run's first
// attempt shows its fault whole, "⚡timeout-after-effect" (it was cut by
// its last characters): the trace takes the columns it needs from the
// list and the outbox, and the retry after the fault goes first.
func TestGoldenNaiveFaultAt160x45(t *testing.T) {
	t.Parallel()
	m := open(t, article(t), 160, 45)
	press(t, m, "shift+tab", "G")
	if m.selID != "exec_7K2Q" {
		t.Fatalf("selected %s, want the naive run", m.selID)
	}
	v := m.View()
	mustShow(t, v, "the naive run at 160×45", "provider delivered msg_3def2b  ⚡timeout-after-effect│", "2 messages ← duplicate send")
	golden.RequireEqual(t, []byte(v))
}
