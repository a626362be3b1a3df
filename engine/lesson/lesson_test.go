package lesson_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// TestMain lets the test binary double as the worker the hosts start.
func TestMain(m *testing.M) {
	agent.MainForTests()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

func openHost(t *testing.T, path string) *engine.Host {
	t.Helper()
	return openHostWith(t, path, testrun.QuickTimeouts(t, fixtures.FS))
}

func openHostWith(t *testing.T, path string, scenarios fs.FS) *engine.Host {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: path, Scenarios: scenarios, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestPath(t *testing.T) {
	path, err := lesson.Path(scenario.NewCatalog(testrun.QuickTimeouts(t, fixtures.FS)))
	if err != nil {
		t.Fatal(err)
	}
	if len(path) < 20 {
		t.Fatalf("path has %d steps; the catalogue teaches more", len(path))
	}
	if path[0].Name != "naive" || path[1].Name != "crash" || path[2].Name != "safe" || path[3].Name != "invoice-crm" {
		t.Errorf("the path starts %s, %s, %s, %s; want the article's four first", path[0].Name, path[1].Name, path[2].Name, path[3].Name)
	}
	for i, st := range path {
		if st.Number != i+1 || st.Of != len(path) {
			t.Errorf("%s is %d of %d", st.Name, st.Number, st.Of)
		}
		if st.Scenario.Order == 0 {
			t.Errorf("%s has order 0 but is in the path", st.Name)
		}
		if i > 0 && st.Scenario.Order <= path[i-1].Scenario.Order {
			t.Errorf("%s comes after %s but its order is not higher", st.Name, path[i-1].Name)
		}
		if st.Intro == "" || st.Predict == "" || st.Outro == "" || st.Teaches == "" || len(st.Actions) == 0 {
			t.Errorf("%s lacks intro, prediction, outro, explanation or actions: %+v", st.Name, st)
		}
	}
	byName := map[string]lesson.Step{}
	for _, st := range path {
		byName[st.Name] = st
	}
	if st := byName["crash"]; st.Do() != "retrylab run crash → retrylab resume" || st.Expected != 2 || st.Measure != lesson.MeasureOutbox {
		t.Errorf("crash: do %q, expected %d %s", st.Do(), st.Expected, st.Measure)
	}
	if st := byName["natural-idempotency"]; st.Measure != lesson.MeasureCRMRows || st.Expected != 1 {
		t.Errorf("natural-idempotency measures %s, expects %d; want 1 CRM row", st.Measure, st.Expected)
	}
	if st := byName["journal-deleted"]; !strings.Contains(st.Do(), "retrylab journal delete exec_01HA step-4") {
		t.Errorf("journal-deleted: do %q", st.Do())
	}
}

func TestEmptyPath(t *testing.T) {
	fsys := fstest.MapFS{"x.yaml": {Data: []byte(`name: x
tools: {send: {service: mail, op: send, kind: keyed}}
turns: [{text: hi, calls: [{step: s, tool: send, args: {to: a@b.c, subject: s}}]}]
`)}}
	if _, err := lesson.Path(scenario.NewCatalog(fsys)); err != lesson.ErrEmptyPath {
		t.Errorf("Path of a catalogue without lessons: %v, want ErrEmptyPath", err)
	}
}

func TestCheck(t *testing.T) {
	path, err := lesson.Path(scenario.NewCatalog(testrun.QuickTimeouts(t, fixtures.FS)))
	if err != nil {
		t.Fatal(err)
	}
	naive := path[0]
	two := verify.Outcome{Outbox: map[string]int{"jordan@acme.dev": 2}, Messages: make([]world.Message, 2)}
	fb := lesson.Check(naive, 2, two)
	if !fb.Correct || fb.Actual != 2 || !strings.HasPrefix(fb.Text, "✓ Right: 2 messages in the outbox.") ||
		!strings.Contains(fb.Text, naive.Outro) || strings.Contains(fb.Text, "Why:") {
		t.Errorf("right prediction: %+v", fb)
	}
	fb = lesson.Check(naive, 1, two)
	if fb.Correct || !strings.HasPrefix(fb.Text, "✗ Not quite: you said 1; actual: 2 messages in the outbox.") ||
		!strings.Contains(fb.Text, "Why: The mail API delivers the invoice") {
		t.Errorf("wrong prediction: %+v", fb)
	}
	fb = lesson.Check(naive, -1, verify.Outcome{Messages: make([]world.Message, 1)})
	if fb.Correct || !strings.HasPrefix(fb.Text, "No prediction. Actual: 1 message in the outbox.") ||
		!strings.Contains(fb.Text, "⚠ The scenario expects 2 messages in the outbox, but this run produced 1") {
		t.Errorf("no prediction, unexpected outcome: %+v", fb)
	}
}

// walkFS is a catalogue of six lessons for the walk's tests: the article's
// four, and two later ones. Each lesson whose response is lost waits out a
// real client timeout (testrun.QuickTimeout); only naive and safe do here.
// (Every lesson of the whole catalogue is run by
// TestEveryLessonHasItsOutcome.)
func walkFS(t *testing.T) fs.FS {
	t.Helper()
	quick := testrun.QuickTimeouts(t, fixtures.FS)
	out := fstest.MapFS{}
	for _, name := range []string{"naive", "crash", "safe", "invoice-crm", "regenerated-args", "key-retention"} {
		data, err := fs.ReadFile(quick, name+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		out[name+".yaml"] = &fstest.MapFile{Data: data}
	}
	return out
}

// TestWalkWholePath walks a lesson path headlessly with scripted answers,
// stopping half way and resuming on a reopened host, and checks that the
// progress persists in the database.
func TestWalkWholePath(t *testing.T) {
	t.Parallel()
	lessons := walkFS(t)
	db := filepath.Join(t.TempDir(), "workshop.db")
	h := openHostWith(t, db, lessons)
	s, err := lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	half := len(path) / 2
	// Right answers for the first half, except the second lesson.
	var first []int
	for i, st := range path[:half] {
		n := st.Expected
		if i == 1 {
			n++
		}
		first = append(first, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := lesson.Walk(ctx, s, lesson.WalkOptions{Out: &out, Answers: first}); err != nil {
		t.Fatalf("walk: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"Lesson 1 of " + itoa(len(path)) + " · naive",
		"✓ Right: 2 messages in the outbox.",
		"✗ Not quite: you said 3; actual: 2 messages in the outbox.",
		"Stopped at lesson " + itoa(half+1) + " of " + itoa(len(path)) + "; progress saved (" + itoa(half) + " done).",
		// Each fix is shown as a difference from its mistake.
		// (Every other pair's line is checked by TestEveryLessonHasItsOutcome.)
		"diff: naive: 2 messages to jordan@acme.dev; safe: 1 — they part at row 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("walk output lacks %q:\n%s", want, text)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// The workshop resumes on a new host over the same database.
	h = openHostWith(t, db, lessons)
	defer h.Close()
	s, err = lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	done, right := s.Score()
	if done != half || right != half-1 {
		t.Fatalf("after reopening: %d done, %d right; want %d and %d", done, right, half, half-1)
	}
	next, ok := s.Next()
	if !ok || next.Number != half+1 {
		t.Fatalf("next step %d (%v), want %d", next.Number, ok, half+1)
	}
	// The rest, answered from "stdin", with one blank answer.
	var in strings.Builder
	for i, st := range path[half:] {
		if i == 0 {
			in.WriteString("\n")
			continue
		}
		in.WriteString(itoa(st.Expected) + "\n")
	}
	out.Reset()
	if err := lesson.Walk(ctx, s, lesson.WalkOptions{In: strings.NewReader(in.String()), Out: &out, Presenter: true}); err != nil {
		t.Fatalf("walk: %v\n%s", err, out.String())
	}
	text = out.String()
	if !strings.Contains(text, "Resuming at lesson "+itoa(half+1)) || !strings.Contains(text, "No prediction.") ||
		!strings.Contains(text, "You have finished the path: "+itoa(len(path))+" lessons, "+itoa(len(path)-2)+" predicted right.") {
		t.Errorf("second walk:\n%s", text)
	}
	if strings.Contains(text, "⚠ The scenario expects") {
		t.Errorf("a lesson produced another outcome than its scenario expects:\n%s", text)
	}
	st, err := lesson.LoadProgress(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Done) != len(path) || st.Updated.IsZero() {
		t.Fatalf("saved progress: %d done, updated %v", len(st.Done), st.Updated)
	}
	for i, a := range st.Done {
		if a.Scenario != path[i].Name || a.Actual != path[i].Expected {
			t.Errorf("progress %d: %+v, want %s with %d", i, a, path[i].Name, path[i].Expected)
		}
	}
	// Reset starts over.
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if next, ok := s.Next(); !ok || next.Number != 1 {
		t.Errorf("after Reset the next step is %d (%v)", next.Number, ok)
	}
	if st, _ := lesson.LoadProgress(h); len(st.Done) != 0 {
		t.Errorf("after Reset %d steps are still done", len(st.Done))
	}
}

// TestEveryLessonHasItsOutcome runs every lesson of the catalogue as the
// walk does (on one host per group, each lesson after a ResetKeeping of
// what the one before it left) and checks the outcome a right prediction
// expects: no lesson says "⚠ The scenario expects". The groups run at once;
// their lessons mostly wait on client timeouts.
func TestEveryLessonHasItsOutcome(t *testing.T) {
	t.Parallel()
	quick := testrun.QuickTimeouts(t, fixtures.FS) // one catalogue for every group
	path, err := lesson.Path(scenario.NewCatalog(quick))
	if err != nil {
		t.Fatal(err)
	}
	const groups = 8
	for g := range groups {
		t.Run(strconv.Itoa(g), func(t *testing.T) {
			t.Parallel()
			h := openHostWith(t, filepath.Join(t.TempDir(), "lessons.db"), quick)
			defer h.Close()
			s, err := lesson.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// A fix's mistake runs in another group: the pair's line runs it
			// again on a scratch database, as a workshop resumed at the fix.
			pairs := lesson.NewPairs(h, verify.Scratch(engine.Config{Scenarios: quick, NoSync: true}))
			for i := g; i < len(path); i += groups {
				step := path[i]
				out, err := s.Run(ctx, step)
				if err != nil {
					t.Fatalf("%s: %v", step.Name, err)
				}
				line, err := pairs.Line(ctx, step, out)
				if err != nil {
					t.Fatalf("%s: diff line: %v", step.Name, err)
				}
				if step.Scenario != nil && step.Scenario.Fixes != "" {
					// Each fix is shown as a difference from its mistake.
					want := "diff: " + step.Scenario.Fixes + ": 2 messages to jordan@acme.dev; " + step.Name + ": 1 — they part at row "
					if !strings.HasPrefix(line, want) {
						t.Errorf("%s: diff line %q, want it to start %q", step.Name, line, want)
					}
				}
				fb := lesson.Check(step, step.Expected, out)
				if !fb.Correct || fb.Actual != step.Expected || strings.Contains(fb.Text, "⚠") {
					t.Errorf("%s: expected %d, got %+v", step.Name, step.Expected, fb)
				}
			}
		})
	}
}

// TestResetKeepingKeepsProgress: a lesson wipes the executions and the
// world before it runs, but not the progress.
func TestResetKeepingKeepsProgress(t *testing.T) {
	h := openHost(t, filepath.Join(t.TempDir(), "w.db"))
	defer h.Close()
	want := lesson.State{Done: []lesson.Answer{{Scenario: "naive", Predicted: 2, Actual: 2, Correct: true}}}
	if err := lesson.SaveProgress(h, want); err != nil {
		t.Fatal(err)
	}
	r, err := h.Start("one-send", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Reset(lesson.Bucket); err != nil {
		t.Fatal(err)
	}
	if xs, n, _ := h.Executions(0, 0); n != 0 || len(xs) != 0 {
		t.Errorf("%d executions after ResetKeeping", n)
	}
	if msgs, _ := h.Providers().Outbox(); len(msgs) != 0 {
		t.Errorf("%d messages after ResetKeeping", len(msgs))
	}
	got, err := lesson.LoadProgress(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Done) != 1 || got.Done[0] != want.Done[0] {
		t.Errorf("progress after ResetKeeping: %+v", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestWalkPausesBetweenLessons: with Pause the walk waits for Enter after a
// lesson's answer, so it stays on a projector; q there stops before the
// next lesson starts, and the progress keeps the lesson done.
func TestWalkPausesBetweenLessons(t *testing.T) {
	t.Parallel()
	h := openHostWith(t, filepath.Join(t.TempDir(), "workshop.db"), walkFS(t))
	s, err := lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	of := itoa(len(s.Path()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	in := strings.NewReader(itoa(s.Path()[0].Expected) + "\nq\n")
	if err := lesson.Walk(ctx, s, lesson.WalkOptions{Out: &out, In: in, Pause: true}); err != nil {
		t.Fatalf("walk: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"✓ Right", "Press Enter for lesson 2 of " + of + " (q to stop): ",
		"Stopped at lesson 2 of " + of + "; progress saved (1 done)."} {
		if !strings.Contains(text, want) {
			t.Errorf("walk output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Lesson 2 of") {
		t.Errorf("lesson 2 began before Enter:\n%s", text)
	}
}
