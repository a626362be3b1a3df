package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
)

// fakeLessons walks the real path but "runs" a step by reporting the
// outcome its scenario expects, with one message per expected delivery.
type fakeLessons struct {
	path []lesson.Step
	done map[string]lesson.Feedback
	ran  []string
}

func newFakeLessons(t *testing.T) *fakeLessons {
	t.Helper()
	path, err := lesson.Path(scenario.NewCatalog(fixtures.FS))
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLessons{path: path, done: map[string]lesson.Feedback{}}
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

func (f *fakeLessons) Run(_ context.Context, s lesson.Step) (verify.Outcome, error) {
	f.ran = append(f.ran, s.Name)
	out := verify.Outcome{CRMRows: s.Expected}
	for i := 0; i < s.Expected; i++ {
		out.Messages = append(out.Messages, world.Message{To: "jordan@acme.dev"})
	}
	return out, nil
}

func (f *fakeLessons) Record(s lesson.Step, fb lesson.Feedback) error {
	f.done[s.Name] = fb
	return nil
}

func TestLessonModeWalksSteps(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	fl := newFakeLessons(t)
	m := open(t, snap, 160, 44)
	m.lessons = fl
	press(t, m, "L")
	if !m.lesson.on || m.lesson.step.Name != "naive" || m.lesson.phase != phasePredict {
		t.Fatalf("L opens the first lesson: on=%v step=%q phase=%d", m.lesson.on, m.lesson.step.Name, m.lesson.phase)
	}
	// Typing goes to the prediction, not to the explorer's keys.
	press(t, m, "1", "enter")
	if len(fl.ran) != 1 || fl.ran[0] != "naive" {
		t.Fatalf("enter runs the step: %v", fl.ran)
	}
	if m.lesson.phase != phaseFeedback || m.lesson.feedback.Correct {
		t.Fatalf("a wrong prediction gets feedback: phase %d correct %v", m.lesson.phase, m.lesson.feedback.Correct)
	}
	v := m.View()
	for _, want := range []string{"Not quite: you said 1; actual: 2 messages in the outbox", "Why:", "enter: next lesson"} {
		if !strings.Contains(v, want) {
			t.Errorf("feedback lacks %q:\n%s", want, v)
		}
	}
	// While reading feedback, the explorer's keys work again.
	press(t, m, "f")
	if !m.finalOnly {
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
	if m.lesson.on || !strings.Contains(m.flash, "lesson mode needs") {
		t.Fatalf("without lessons L explains: on=%v flash=%q", m.lesson.on, m.flash)
	}
}

func TestGoldenLessonStep(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := New(Options{Source: snap, Now: fixedNow, Lessons: newFakeLessons(t), Lesson: true})
	t.Cleanup(m.Close)
	v := viewModel(t, m, 160, 44, "Predict:")
	mustShow(t, v, "lesson view", "Lesson 1/", "naive", "Predict: How many invoices will jordan@acme.dev receive?", "your prediction >")
	golden.RequireEqual(t, []byte(v))
}
