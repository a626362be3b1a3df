package lesson_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/lesson"
)

// TestParsePredictionOneRule: the walk and the explorer read a prediction
// the same way: nothing skips, a number counts, anything else is refused.
func TestParsePredictionOneRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		bad  bool
	}{{"", -1, false}, {"  ", -1, false}, {"2", 2, false}, {" 0 ", 0, false}, {"x", 0, true}, {"-1", 0, true}, {"2x", 0, true}} {
		got, err := lesson.ParsePrediction(c.in, lesson.MeasureOutbox)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParsePrediction(%q) = %d, %v; want %d, refused %v", c.in, got, err, c.want, c.bad)
		}
		if c.bad && err != nil && !strings.Contains(err.Error(), "not a number of messages in the outbox") {
			t.Errorf("ParsePrediction(%q) error says: %v", c.in, err)
		}
	}
}

func TestDBPathIsBesideTheUsersDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"retrylab.db":       "retrylab.lessons.db",
		"/srv/work/shop.db": "/srv/work/shop.lessons.db",
		"/srv/work/data":    "/srv/work/data.lessons.db",
		"a/":                "a/retrylab.lessons.db",
	} {
		if got := lesson.DBPath(in); got != want {
			t.Errorf("DBPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestActOneActionAtATime plays the crash lesson a key at a time: after
// the first action the worker is killed with one message in the outbox,
// the state the lesson pauses on; the resume then finishes it.
func TestActOneActionAtATime(t *testing.T) {
	h := openHost(t, filepath.Join(t.TempDir(), "lessons.db"))
	s, err := lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	var step lesson.Step
	for _, st := range s.Path() {
		if st.Name == "crash" {
			step = st
		}
	}
	if len(step.Actions) != 2 || step.Actions[0].Verb != "run" || step.Actions[1].Verb != "resume" {
		t.Fatalf("crash lesson actions: %+v", step.Actions)
	}
	if _, err := s.Act(context.Background(), step, 0); err == nil {
		t.Fatal("Act before Begin must fail")
	}
	if err := s.Begin(step); err != nil {
		t.Fatal(err)
	}
	id, err := s.Act(context.Background(), step, 0)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := s.Outcome()
	if err != nil {
		t.Fatal(err)
	}
	if mid.Execution != id || mid.Status != history.StatusKilled || mid.OutboxTotal() != 1 {
		t.Fatalf("after the run: %s %s with %d messages, want killed with 1", mid.Execution, mid.Status, mid.OutboxTotal())
	}
	if _, err := s.Act(context.Background(), step, 1); err != nil {
		t.Fatal(err)
	}
	end, err := s.Outcome()
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != history.StatusCompleted || end.OutboxTotal() != step.Expected {
		t.Fatalf("after the resume: %s with %d messages, want completed with %d", end.Status, end.OutboxTotal(), step.Expected)
	}
}

// TestSessionScoreWhileRecording: the explorer reads Score and Next in its
// View while a command records a finished step (or resets the path) on
// another goroutine; under -race this is where they met unguarded.
func TestSessionScoreWhileRecording(t *testing.T) {
	h := openHost(t, filepath.Join(t.TempDir(), "lessons.db"))
	s, err := lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	done := make(chan error, 1)
	go func() {
		for _, st := range path[:3] {
			if err := s.Record(st, lesson.Feedback{Correct: true, Predicted: 1, Actual: 1}); err != nil {
				done <- err
				return
			}
		}
		done <- s.Reset()
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
			s.Score()
			s.Next()
		}
	}
	if d, _ := s.Score(); d != 0 {
		t.Fatalf("after Reset %d steps done", d)
	}
}
