package tui

import (
	"slices"
	"strings"
	"testing"
)

// N, between two groups of a workshop: it asks first; y erases the
// database shown, starts the lessons over (opening their database when L
// has not) and forgets the mark; L then starts at the first lesson.
func TestNextGroupErasesAndStartsTheLessonsOver(t *testing.T) {
	t.Parallel()
	user := article(t)
	fl := newFakeLessons(t)
	fl.done[fl.path[0].Name] = fl.done[""] // the first group did lesson 1
	m := openWithLessons(t, user, fl, 160, 44)
	press(t, m, "m")
	if m.cmp.Marked() == "" {
		t.Fatal("m marks nothing")
	}
	press(t, m, "N")
	mustShow(t, m.View(), "the question", "Next group: erase everything and start the lessons over? y: erase · else: keep")
	press(t, m, "j")
	if calls := user.Calls(); len(calls) != 0 || len(fl.ran) != 0 {
		t.Fatalf("another key keeps everything: calls %v, lessons %v", calls, fl.ran)
	}
	press(t, m, "N", "y")
	if calls := user.Calls(); strings.Join(calls, "|") != "reset" {
		t.Fatalf("N y: calls %v", calls)
	}
	if !slices.Equal(fl.ran, []string{"reset"}) || len(fl.done) != 0 {
		t.Fatalf("N y: lessons ran %v, %d done", fl.ran, len(fl.done))
	}
	if m.execs.total != 0 || m.cmp.Marked() != "" || !m.lesson.Ready() {
		t.Fatalf("after N y: %d executions, mark %q, lessons open %v", m.execs.total, m.cmp.Marked(), m.lesson.Ready())
	}
	mustShow(t, m.View(), "the flash", "next group: no executions, an empty world, the lessons from the first")
	press(t, m, "L")
	if !m.lesson.On() || m.lesson.step.Name != fl.path[0].Name {
		t.Errorf("L after the next group: on %v at %q, want the first lesson %q", m.lesson.On(), m.lesson.step.Name, fl.path[0].Name)
	}
}

// At 80 columns the question fits whole, its answer keys included.
func TestNextGroupAsksWholeAt80x24(t *testing.T) {
	t.Parallel()
	m := openWithLessons(t, article(t), newFakeLessons(t), 80, 24)
	press(t, m, "N")
	mustShow(t, m.View(), "the question", "Next group: erase everything and start the lessons over? y: erase · else: keep")
}
