package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
)

// fakeLessons walks the real path but plays a step's actions by reporting
// what its scenario expects: after an action that leaves more to do, the
// worker is killed with one message delivered (the state a crash lesson
// pauses on); after the last, one message per expected delivery.
type fakeLessons struct {
	path   []lesson.Step
	done   map[string]lesson.Feedback
	ran    []string
	step   lesson.Step
	acted  int
	begun  bool
	execID string
}

func newFakeLessons(t *testing.T) *fakeLessons {
	t.Helper()
	path, err := lesson.Path(scenario.NewCatalog(fixtures.FS))
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLessons{path: path, done: map[string]lesson.Feedback{}, execID: "exec_7K2Q"}
}

func (f *fakeLessons) Path() []lesson.Step { return f.path }

func (f *fakeLessons) Next() (lesson.Step, bool) {
	for _, s := range f.path {
		if _, ok := f.done[s.Name]; !ok {
			return s, true
		}
	}
	return lesson.Step{}, false
}

func (f *fakeLessons) Score() (done, right int) {
	for _, fb := range f.done {
		done++
		if fb.Correct {
			right++
		}
	}
	return done, right
}

func (f *fakeLessons) Begin(s lesson.Step) error {
	f.ran = append(f.ran, "begin "+s.Name)
	f.step, f.acted, f.begun = s, 0, true
	return nil
}

func (f *fakeLessons) Act(_ context.Context, s lesson.Step, i int) (string, error) {
	if !f.begun || s.Name != f.step.Name || i != f.acted {
		return "", fmt.Errorf("act %s %d out of turn", s.Name, i)
	}
	f.ran = append(f.ran, s.Name+":"+s.Actions[i].Verb)
	f.acted++
	return f.execID, nil
}

func (f *fakeLessons) Outcome() (verify.Outcome, error) {
	s := f.step
	if f.acted < len(s.Actions) {
		return verify.Outcome{Status: history.StatusKilled, Messages: []world.Message{{To: "jordan@acme.dev"}}}, nil
	}
	out := verify.Outcome{CRMRows: s.Expected, Status: history.StatusCompleted}
	for i := 0; i < s.Expected; i++ {
		out.Messages = append(out.Messages, world.Message{To: "jordan@acme.dev"})
	}
	return out, nil
}

func (f *fakeLessons) Record(s lesson.Step, fb lesson.Feedback) error {
	f.done[s.Name] = fb
	return nil
}

func (f *fakeLessons) Reset() error {
	f.ran = append(f.ran, "reset")
	clear(f.done)
	return nil
}

// lessonRoom opens lessons over their own recorded database.
func lessonRoom(t *testing.T, fl *fakeLessons) (func() (*LessonRoom, error), *snapshot) {
	t.Helper()
	src := record(t, []string{"naive", "run"})
	return func() (*LessonRoom, error) {
		return &LessonRoom{Lessons: fl, Source: src, Where: "/work/retrylab.lessons.db"}, nil
	}, src
}

// openWithLessons is open with lesson mode available.
func openWithLessons(t *testing.T, user Source, fl *fakeLessons, w, h int) *Model {
	t.Helper()
	openRoom, _ := lessonRoom(t, fl)
	m := New(Options{Source: user, Now: fixedNow, OpenLessons: openRoom})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	drive(t, m, cmd)
	return m
}

// TestLessonRunsInItsOwnDatabase: L shows the lessons' database, never
// acts on the user's, and esc brings the user's back.
func TestLessonRunsInItsOwnDatabase(t *testing.T) {
	t.Parallel()
	user := article(t)
	fl := newFakeLessons(t)
	m := openWithLessons(t, user, fl, 160, 44)
	if m.execs.total != 3 {
		t.Fatalf("the user's database has 3 executions, shown %d", m.execs.total)
	}
	press(t, m, "L")
	if !m.lesson.on || m.execs.total != 1 {
		t.Fatalf("L: lesson on=%v, %d executions shown, want the lessons' database's 1", m.lesson.on, m.execs.total)
	}
	mustShow(t, m.View(), "lesson view", "in /work/retrylab.lessons.db (your database is untouched")
	press(t, m, "2", "enter", "n")
	if m.lesson.phase != phaseFeedback {
		t.Fatalf("naive played: phase %d", m.lesson.phase)
	}
	if calls := user.Calls(); len(calls) != 0 {
		t.Fatalf("the lesson acted on the user's database: %v", calls)
	}
	press(t, m, "esc")
	if m.lesson.on || m.src != Source(user) || m.execs.total != 3 || m.selID != "exec_3C5R" {
		t.Fatalf("esc: lesson on=%v, %d executions, selected %q; want the user's 3 back", m.lesson.on, m.execs.total, m.selID)
	}
}

// TestLessonLeavesTheSelectionWhereItWas: esc from a lesson selects again
// the execution selected before L, by id, not the first of the list; the
// first when it is gone from the user's database meanwhile.
func TestLessonLeavesTheSelectionWhereItWas(t *testing.T) {
	t.Parallel()
	user := article(t)
	fl := newFakeLessons(t)
	m := openWithLessons(t, user, fl, 160, 44)
	press(t, m, "shift+tab", "j", "j")
	was := m.selID
	if was == "" || was == user.execs[0].ID {
		t.Fatalf("j j selected %q, want one below the first", was)
	}
	press(t, m, "L")
	if !m.lesson.on || m.src == Source(user) {
		t.Fatalf("L: lesson on=%v, the user's database still shown", m.lesson.on)
	}
	press(t, m, "esc")
	if m.lesson.on || m.src != Source(user) || m.selID != was || m.execs.sel != 2 {
		t.Fatalf("esc: lesson on=%v, selected %q at %d; want %q back", m.lesson.on, m.selID, m.execs.sel, was)
	}
	if m.trace.tr == nil || m.trace.tr.exec.ID != was {
		t.Fatalf("esc: the trace shown is not %s's", was)
	}
	mustShow(t, m.View(), "the user's explorer after the lesson", was)

	// The selected execution is gone when the lesson ends: the first.
	press(t, m, "k")
	gone := m.selID
	press(t, m, "L")
	user.mu.Lock()
	user.execs = append(user.execs[:1:1], user.execs[2:]...)
	user.mu.Unlock()
	press(t, m, "esc")
	if m.selID == gone || m.selID != user.execs[0].ID || m.execs.sel != 0 || m.execs.total != 2 {
		t.Fatalf("esc after %s went: selected %q at %d of %d; want the first, %s", gone, m.selID, m.execs.sel,
			m.execs.total, user.execs[0].ID)
	}
}

// TestLessonStepsOneKeyAtATime: the crash lesson waits for n, runs, pauses
// on the killed worker with one message in the outbox, then waits for r.
func TestLessonStepsOneKeyAtATime(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	fl.done["naive"] = lesson.Feedback{Correct: true}
	m := openWithLessons(t, article(t), fl, 160, 44)
	press(t, m, "L")
	if m.lesson.step.Name != "crash" {
		t.Fatalf("first unfinished lesson: %q", m.lesson.step.Name)
	}
	press(t, m, "1", "enter")
	if m.lesson.phase != phaseActing || strings.Join(fl.ran, "|") != "begin crash" {
		t.Fatalf("enter after the prediction waits for a key: phase %d, ran %v", m.lesson.phase, fl.ran)
	}
	mustShow(t, m.View(), "waiting for n", "▶ press n  Run the scenario", "r  Resume the killed execution")
	press(t, m, "r")
	if len(fl.ran) != 1 || !strings.Contains(m.status.text, "next key is n") {
		t.Fatalf("r before n: ran %v, flash %q", fl.ran, m.status.text)
	}
	press(t, m, "n")
	if m.lesson.phase != phaseActing || m.lesson.next != 1 {
		t.Fatalf("after n the lesson pauses: phase %d next %d", m.lesson.phase, m.lesson.next)
	}
	mustShow(t, m.View(), "paused on the crash", "✓ n  Run the scenario", "▶ press r  Resume the killed execution", "now: worker killed · 1 message in the outbox")
	press(t, m, "r")
	if m.lesson.phase != phaseFeedback || strings.Join(fl.ran, "|") != "begin crash|crash:run|crash:resume" {
		t.Fatalf("r finishes the lesson: phase %d ran %v", m.lesson.phase, fl.ran)
	}
	mustShow(t, m.View(), "feedback", "you said 1", "enter: next lesson")
}

// TestLessonPredictionRule: the explorer reads a prediction as `retrylab
// lesson` does: nothing is no prediction, a non-number is refused.
func TestLessonPredictionRule(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	m := openWithLessons(t, article(t), fl, 160, 44)
	press(t, m, "L", "x", "enter")
	if m.lesson.phase != phasePredict || len(fl.ran) != 0 {
		t.Fatalf("x is refused: phase %d ran %v", m.lesson.phase, fl.ran)
	}
	mustShow(t, m.View(), "refusal", `"x" is not a number of messages in the outbox: type a number, or nothing to skip`)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	drive(t, m, cmd)
	press(t, m, "enter", "n")
	if m.lesson.phase != phaseFeedback || m.lesson.guess != -1 {
		t.Fatalf("an empty prediction is none: phase %d guess %d", m.lesson.phase, m.lesson.guess)
	}
	mustShow(t, m.View(), "no prediction", "No prediction. Actual: 2 messages in the outbox.")
}

func TestLessonModeWalksSteps(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	m := openWithLessons(t, record(t, []string{"naive", "run"}), fl, 160, 44)
	press(t, m, "L")
	if !m.lesson.on || m.lesson.step.Name != "naive" || m.lesson.phase != phasePredict {
		t.Fatalf("L opens the first lesson: on=%v step=%q phase=%d", m.lesson.on, m.lesson.step.Name, m.lesson.phase)
	}
	// Typing goes to the prediction, not to the explorer's keys.
	press(t, m, "1", "enter", "n")
	if strings.Join(fl.ran, "|") != "begin naive|naive:run" {
		t.Fatalf("enter then n runs the step: %v", fl.ran)
	}
	if m.lesson.phase != phaseFeedback || m.lesson.feedback.Correct {
		t.Fatalf("a wrong prediction gets feedback: phase %d correct %v", m.lesson.phase, m.lesson.feedback.Correct)
	}
	mustShow(t, m.View(), "feedback", "Not quite: you said 1; actual: 2 messages in the outbox", "Why:", "enter: next lesson")
	// While reading feedback, the explorer's keys work again.
	press(t, m, "f")
	if !m.trace.finalOnly {
		t.Fatal("f works during feedback")
	}
	press(t, m, "enter")
	if m.lesson.step.Name != fl.path[1].Name || m.lesson.phase != phasePredict {
		t.Fatalf("enter moves to lesson 2: %q phase %d", m.lesson.step.Name, m.lesson.phase)
	}
	press(t, m, "esc")
	if m.lesson.on {
		t.Fatal("esc leaves lesson mode")
	}
}

func TestLessonModeNeedsLessons(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 160, 44)
	press(t, m, "L")
	if m.lesson.on || !strings.Contains(m.status.text, "lesson mode is not available") {
		t.Fatalf("without lessons L explains: on=%v flash=%q", m.lesson.on, m.status.text)
	}
}

func TestGoldenLessonStep(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	openRoom, _ := lessonRoom(t, fl)
	m := New(Options{Source: article(t), Now: fixedNow, OpenLessons: openRoom, Lesson: true})
	t.Cleanup(m.Close)
	// The lesson's text, its database's list and the selected execution's
	// trace and outbox come from separate reads: wait for all of them.
	v := viewModelOnce(t, m, 160, 44, []string{"Predict:", "exec_7K2Q", "duplicate send", "execution completed", "whole outbox:"})
	mustShow(t, v, "lesson view", "Lesson 1/", "naive", "Predict: How many invoices will jordan@acme.dev receive?", "your prediction >")
	golden.RequireEqual(t, []byte(v))
}

// TestLessonAt80x24ShowsTraceOutboxAndNextKey: in a narrow terminal a
// step's keys are played with the trace and outbox in view, the next key
// under them, then the verdict; the why is on the lesson's tab.
func TestLessonAt80x24ShowsTraceOutboxAndNextKey(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	fl.done["naive"] = lesson.Feedback{Correct: true}
	m := openWithLessons(t, article(t), fl, 80, 24)
	press(t, m, "L")
	mustShow(t, m.View(), "narrow lesson tab", "[ Lesson ]", "Predict:")
	press(t, m, "1", "enter", "n")
	v := m.View()
	mustShow(t, v, "narrow lesson paused on the crash", "[ Trace ]", "✓ execution completed", "2 messages ← duplicate send",
		"▶ press r  Resume the killed execution", "now: worker killed · 1 message in the outbox")
	if lines := strings.Split(v, "\n"); len(lines) != 24 {
		t.Fatalf("%d lines", len(lines))
	}
	press(t, m, "r")
	mustShow(t, m.View(), "narrow verdict beside the outbox", "[ Trace ]", "2 messages ← duplicate send", "Not quite: you said 1", "tab tab: why")
	press(t, m, "tab", "tab")
	mustShow(t, m.View(), "narrow feedback", "[ Lesson ]", "you said 1", "enter: next lesson")
	press(t, m, "shift+tab", "enter")
	mustShow(t, m.View(), "the next lesson asks on its tab", "[ Lesson ]", "Predict:", "your prediction >")
}

// TestLessonFixEndsWithDiffLine: a fix's step ends with its difference
// from its mistake, as `retrylab lesson` shows it; the room's Diff is told
// every finished step (the mistake's too, which it remembers).
func TestLessonFixEndsWithDiffLine(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	var fix lesson.Step
	for _, s := range fl.path {
		if s.Scenario != nil && s.Scenario.Fixes != "" {
			fix = s
			break
		}
		fl.done[s.Name] = lesson.Feedback{Correct: true}
	}
	if fix.Name == "" {
		t.Fatal("the lesson path has no fix")
	}
	var told []string
	src := record(t, []string{"naive", "run"})
	room := func() (*LessonRoom, error) {
		return &LessonRoom{Lessons: fl, Source: src, Where: "/work/retrylab.lessons.db",
			Diff: func(_ context.Context, s lesson.Step, out verify.Outcome) (string, error) {
				told = append(told, s.Name)
				if s.Scenario.Fixes == "" {
					return "", nil
				}
				return fmt.Sprintf("diff: %s: 2 messages; %s: %d", s.Scenario.Fixes, s.Name, len(out.Messages)), nil
			}}, nil
	}
	m := New(Options{Source: article(t), Now: fixedNow, OpenLessons: room})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 160, Height: 44})
	drive(t, m, cmd)
	press(t, m, "L")
	if m.lesson.step.Name != fix.Name {
		t.Fatalf("first unfinished lesson %q, want the fix %q", m.lesson.step.Name, fix.Name)
	}
	press(t, m, "1", "enter")
	for m.lesson.phase == phaseActing {
		press(t, m, lessonKeyFor(m.lesson.step.Actions[m.lesson.next].Verb))
	}
	if m.lesson.phase != phaseFeedback || strings.Join(told, ",") != fix.Name {
		t.Fatalf("after the fix's keys: phase %d, Diff told %v", m.lesson.phase, told)
	}
	want := fmt.Sprintf("diff: %s: 2 messages; %s: %d", fix.Scenario.Fixes, fix.Name, fix.Expected)
	mustShow(t, m.View(), "the fix's diff line", want)
	if _, ok := fl.done[fix.Name]; !ok {
		t.Fatal("the finished step was not recorded")
	}
}

// paneText is the text inside a view's boxes, the lines between the
// borders joined by single spaces: what a reader reads, however wrapped.
func paneText(v string) string {
	var parts []string
	for _, line := range strings.Split(v, "\n") {
		first, last := strings.Index(line, "│"), strings.LastIndex(line, "│")
		if first < 0 || last <= first {
			continue
		}
		parts = append(parts, strings.TrimSpace(line[first+len("│"):last]))
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// TestLessonTextWrapsAt80x24: on a projector at 80 columns every lesson's
// question and keys are read whole, wrapped, never cut with "…" (the
// journal-deleted question lost "in the outbox?", run-level-idempotency
// its keys).
func TestLessonTextWrapsAt80x24(t *testing.T) {
	t.Parallel()
	path := newFakeLessons(t).path
	for i, st := range path {
		fl := newFakeLessons(t)
		for _, done := range path[:i] {
			fl.done[done.Name] = lesson.Feedback{Correct: true}
		}
		m := openWithLessons(t, article(t), fl, 80, 24)
		press(t, m, "L")
		text := paneText(m.View())
		for _, want := range []string{"Predict: " + st.Predict, "what you will do: " + byHand(st),
			"your database is untouched; esc brings it back)"} {
			if want = strings.Join(strings.Fields(want), " "); !strings.Contains(text, want) {
				t.Errorf("lesson %d %s at 80×24: %q is not shown whole in\n%s", st.Number, st.Name, want, m.View())
			}
		}
	}
	// At the smallest size the explorer draws, the prediction's box is not
	// cut ("enter: s…"): the hint goes where it does not fit.
	m := openWithLessons(t, article(t), newFakeLessons(t), MinWidth, MinHeight)
	press(t, m, "L")
	if v := m.View(); !strings.Contains(v, "your prediction > a number, or nothing to skip ") || strings.Contains(v, "enter: s…") {
		t.Errorf("the prediction's line at %d×%d:\n%s", MinWidth, MinHeight, v)
	}
	fl := newFakeLessons(t)
	for _, done := range path {
		fl.done[done.Name] = lesson.Feedback{Correct: true}
	}
	m = openWithLessons(t, article(t), fl, 80, 24)
	press(t, m, "L")
	if want := "r starts the path over for the next workshop (as `retrylab lesson --reset` does): the progress is forgotten."; !strings.Contains(paneText(m.View()), want) {
		t.Errorf("the finished path at 80×24 does not show %q whole:\n%s", want, m.View())
	}
}

// TestLessonShowsWhatItCounts: a lesson that counts CRM rows
// (natural-idempotency, unsafe-escalates) shows the CRM beside the trace,
// not an empty outbox under a verdict of "1 CRM row"; the next lesson that
// counts messages shows the outbox again, and leaving puts the user's tab
// back.
func TestLessonShowsWhatItCounts(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	for _, s := range fl.path {
		if s.Name == "natural-idempotency" {
			break
		}
		fl.done[s.Name] = lesson.Feedback{Correct: true}
	}
	m := openWithLessons(t, article(t), fl, 80, 24)
	press(t, m, "L")
	if m.lesson.step.Name != "natural-idempotency" || m.lesson.step.Measure != lesson.MeasureCRMRows {
		t.Fatalf("first unfinished lesson %q counts %q", m.lesson.step.Name, m.lesson.step.Measure)
	}
	press(t, m, "1", "enter")
	mustShow(t, m.View(), "a CRM lesson's keys", "▶ press n", "CRM (provider's truth)")
	press(t, m, "n")
	mustShow(t, m.View(), "a CRM lesson's verdict", "Right: 1 CRM row", "CRM (provider's truth)")
	press(t, m, "enter")
	if m.lesson.step.Measure == lesson.MeasureCRMRows {
		t.Fatalf("the lesson after natural-idempotency (%s) counts CRM rows too", m.lesson.step.Name)
	}
	press(t, m, "1", "enter")
	mustShow(t, m.View(), "an outbox lesson after it", "▶ press n", "Outbox (provider's truth)")
	press(t, m, "esc")
	if m.outbox.crmTab {
		t.Fatal("leaving the lesson left the CRM shown; the user's pane showed the outbox")
	}
}

// TestPresenterSpacesParagraphsNotLines: --presenter puts a blank line
// between the lesson's paragraphs; a question wrapped at 80 columns stays
// one block (its second half was a paragraph of its own, two lines down).
func TestPresenterSpacesParagraphsNotLines(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	for _, s := range fl.path {
		if s.Name == "key-the-intent" {
			break
		}
		fl.done[s.Name] = lesson.Feedback{Correct: true}
	}
	openRoom, _ := lessonRoom(t, fl)
	m := New(Options{Source: article(t), Now: fixedNow, OpenLessons: openRoom, Presenter: true, HighContrast: true})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	drive(t, m, cmd)
	press(t, m, "L")
	v := m.View()
	lines := strings.Split(v, "\n")
	for i, line := range lines {
		if !strings.Contains(line, "Predict: ") {
			continue
		}
		if i+2 >= len(lines) || strings.TrimSpace(strings.Trim(lines[i+1], "┃║│ ")) == "" {
			t.Fatalf("the wrapped question is split by a blank line:\n%s", v)
		}
		if strings.TrimSpace(strings.Trim(lines[i+2], "┃║│ ")) != "" {
			t.Fatalf("no blank line after the question's paragraph:\n%s", v)
		}
		return
	}
	t.Fatalf("no question on screen:\n%s", v)
}

// TestLessonStartsOverFromTheEnd: after the last lesson r starts the path
// over in the explorer, as `retrylab lesson --reset` does, for the next
// workshop; enter still goes back to the user's database.
func TestLessonStartsOverFromTheEnd(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	for _, s := range fl.path {
		fl.done[s.Name] = lesson.Feedback{Correct: true}
	}
	m := openWithLessons(t, article(t), fl, 80, 24)
	press(t, m, "L")
	if m.lesson.phase != phaseFinished {
		t.Fatalf("every lesson done: phase %d", m.lesson.phase)
	}
	mustShow(t, m.View(), "the end of the path", "all done", "r: start over")
	mustShow(t, m.statusBar(), "the end's keys", "r start over", "enter back to your database")
	press(t, m, "r")
	if m.lesson.phase != phasePredict || m.lesson.step.Number != 1 || len(fl.done) != 0 || fl.ran[len(fl.ran)-1] != "reset" {
		t.Fatalf("r at the end: phase %d, lesson %d, %d done, ran %v", m.lesson.phase, m.lesson.step.Number, len(fl.done), fl.ran)
	}
	mustShow(t, m.View(), "the path from its start", "Lesson 1/22", "Predict:")
}

// TestLessonJumpsToLessonN: # opens a box for the lesson to go to, by
// number or name, in the footer too; enter asks that lesson's prediction
// (done or not), a lesson the path lacks is refused in the pane, and esc
// closes the box without leaving the lesson.
func TestLessonJumpsToLessonN(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	m := openWithLessons(t, article(t), fl, 160, 44)
	press(t, m, "L")
	if m.lesson.step.Name != "naive" {
		t.Fatalf("L starts at %s, want naive", m.lesson.step.Name)
	}
	mustShow(t, m.View(), "the footer while predicting", "# go to lesson")
	press(t, m, "#")
	if !m.lesson.jumping {
		t.Fatal("# did not open the box")
	}
	mustShow(t, m.View(), "the box", "go to lesson >", "enter go")
	press(t, m, "9", "9", "enter")
	if !m.lesson.jumping || m.lesson.step.Name != "naive" {
		t.Fatalf("lesson 99: jumping=%v, at %s", m.lesson.jumping, m.lesson.step.Name)
	}
	mustShow(t, m.View(), "the refusal", "no lesson 99: the lessons are numbered 1 to")
	press(t, m, "esc")
	if m.lesson.jumping || !m.lesson.on || m.lesson.phase != phasePredict {
		t.Fatalf("esc in the box: jumping=%v, lesson on=%v, phase %d", m.lesson.jumping, m.lesson.on, m.lesson.phase)
	}

	n := 0
	for _, s := range fl.path {
		if s.Name == "key-retention" {
			n = s.Number
		}
	}
	press(t, m, "#")
	for _, r := range fmt.Sprint(n) {
		press(t, m, string(r))
	}
	press(t, m, "enter")
	if m.lesson.jumping || m.lesson.step.Name != "key-retention" || m.lesson.phase != phasePredict {
		t.Fatalf("# %d enter: jumping=%v, at %s, phase %d", n, m.lesson.jumping, m.lesson.step.Name, m.lesson.phase)
	}
	mustShow(t, m.View(), "the lesson jumped to", fmt.Sprintf("Lesson %d/%d · key-retention", n, len(fl.path)))

	// By name, from a verdict: a done lesson is asked again.
	press(t, m, "2", "enter", "n", "A", "r")
	if m.lesson.phase != phaseFeedback {
		t.Fatalf("key-retention played: phase %d, ran %v", m.lesson.phase, fl.ran)
	}
	press(t, m, "#", "n", "a", "i", "v", "e", "enter")
	if m.lesson.step.Name != "naive" || m.lesson.phase != phasePredict {
		t.Fatalf("# naive: at %s, phase %d", m.lesson.step.Name, m.lesson.phase)
	}
}

// TestLessonKeysAreItsBindings: the lesson's footer and what it takes are
// one list: the key it waits for, esc and # are taken; ? and q are shown
// but left to the explorer (? opens the help); a prediction types every
// key its list does not name.
func TestLessonKeysAreItsBindings(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	fl.done["naive"] = lesson.Feedback{Correct: true}
	m := openWithLessons(t, article(t), fl, 160, 44)
	footer := func() string {
		var keys []string
		for _, b := range m.shortHelp() {
			keys = append(keys, b.Help().Key)
		}
		return strings.Join(keys, " ")
	}
	press(t, m, "L", "1", "q")
	if got := m.lesson.input.Value(); got != "1q" || m.modes.quitting {
		t.Fatalf("the prediction box typed %q (quitting %v), want 1q", got, m.modes.quitting)
	}
	if got := footer(); got != "enter esc # ctrl+c" {
		t.Errorf("predicting, the footer's keys are %q", got)
	}
	m.lesson.input.SetValue("1")
	press(t, m, "enter")
	if got := footer(); m.lesson.phase != phaseActing || got != "n esc # ? q" {
		t.Fatalf("acting (phase %d), the footer's keys are %q", m.lesson.phase, got)
	}
	press(t, m, "?")
	if !m.help.Shown() || m.lesson.phase != phaseActing {
		t.Fatalf("? while the lesson waits for n: help %v, phase %d", m.help.Shown(), m.lesson.phase)
	}
	press(t, m, "esc", "#")
	if got := footer(); !m.lesson.Jumping() || got != "enter esc ctrl+c" {
		t.Fatalf("# opens the box for the lesson to go to (%v), footer %q", m.lesson.Jumping(), got)
	}
	press(t, m, "esc")
	if m.lesson.Jumping() || !m.lesson.On() || m.lesson.phase != phaseActing {
		t.Errorf("esc in the box closes it only: jumping %v, on %v, phase %d", m.lesson.Jumping(), m.lesson.On(), m.lesson.phase)
	}
}

// TestLessonRefusesFaultAndPolicyKeys: in lesson 3 (safe), K K c before n
// armed a crash on the lessons' database and left the footer saying "keys
// off", while the run used the armed crash and keys+journal and the verdict
// spoke of a journal replay that never happened. The lesson sets its
// scenario: those keys are refused with one line, nothing is armed, the
// step still plays, and the footer says the policy the run uses.
func TestLessonRefusesFaultAndPolicyKeys(t *testing.T) {
	t.Parallel()
	fl := newFakeLessons(t)
	fl.done["naive"] = lesson.Feedback{Correct: true}
	fl.done["crash"] = lesson.Feedback{Correct: true}
	openRoom, lessons := lessonRoom(t, fl)
	m := New(Options{Source: article(t), Now: fixedNow, OpenLessons: openRoom})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	waitFor := func(want string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitFor("execution completed")
	for _, k := range []string{"K", "K", "L"} { // keys off for the user's own runs, then L
		tm.Send(keyMsg(k))
	}
	waitFor("Predict:")
	for _, k := range []string{"1", "enter"} {
		tm.Send(keyMsg(k))
	}
	waitFor("press n")
	for _, k := range []string{"K", "K", "c"} {
		tm.Send(keyMsg(k))
	}
	tm.Send(keyMsg("n"))
	waitFor("now: worker killed") // paused before the rerun
	tm.Send(keyMsg("n"))
	waitFor("Right: 1 message in the outbox")
	tm.Send(settleMsg{})
	tm.Quit()
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	var said []string
	for _, e := range fm.msgs.entries {
		said = append(said, e.text)
	}
	for _, k := range []string{"K", "c"} {
		want := k + ": not in lesson mode, the lesson sets the faults and the policy; esc leaves to try your own"
		if !slices.Contains(said, want) {
			t.Errorf("%s in lesson mode did not say %q; the messages: %q", k, want, said)
		}
	}
	for _, c := range lessons.Calls() {
		if strings.HasPrefix(c, "arm") {
			t.Fatalf("c armed a fault in lesson mode: %v", lessons.Calls())
		}
	}
	if strings.Join(fl.ran, "|") != "begin safe|safe:run|safe:run" {
		t.Fatalf("the step played: %v", fl.ran)
	}
	if keys, journal := fm.runPolicy(); keys != nil || journal != nil {
		t.Fatalf("lesson mode runs with overrides: keys %v journal %v", keys, journal)
	}
	v := fm.View()
	if lines := strings.Split(v, "\n"); len(lines) != 30 {
		t.Fatalf("%d lines at 100×30", len(lines))
	}
	footer := v[strings.LastIndex(v, "\n")+1:]
	mustShow(t, footer, "the footer: the lesson's policy", "keys on", "journal on", "armed —")
	if strings.Contains(footer, "keys off") {
		t.Fatalf("the footer says the policy K set before L, not the lesson's:\n%s", footer)
	}
}
