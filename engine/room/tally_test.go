package room_test

import (
	"testing"

	"github.com/retrylab/retrylab/engine/room"
)

// The tally of a class: per lesson in the order walked, who answered, who
// was right, what each said, and what the runs produced (the count most
// saw when one participant's run differed).
func TestTally(t *testing.T) {
	t.Parallel()
	ada := []room.Answer{{Lesson: "naive", Predicted: 1, Actual: 2}, {Lesson: "crash", Predicted: 2, Actual: 2, Correct: true}}
	bob := []room.Answer{{Lesson: "naive", Predicted: 2, Actual: 2, Correct: true}}
	cy := []room.Answer{{Lesson: "naive", Predicted: -1, Actual: 2}, {Lesson: "crash", Predicted: 1, Actual: 1, Correct: true},
		{Lesson: "safe", Predicted: 1, Actual: 1, Correct: true}}
	dee := []room.Answer{{Lesson: "naive", Predicted: 1, Actual: 2}, {Lesson: "crash", Predicted: 2, Actual: 2, Correct: true}}
	got := room.Tally(ada, bob, cy, dee)
	want := []room.LessonTally{
		{Lesson: "naive", Asked: 4, Right: 1, Answers: map[string]int{"1": 2, "2": 1, room.NoPrediction: 1}, Actual: 2},
		{Lesson: "crash", Asked: 3, Right: 3, Answers: map[string]int{"1": 1, "2": 2}, Actual: 2},
		{Lesson: "safe", Asked: 1, Right: 1, Answers: map[string]int{"1": 1}, Actual: 1},
	}
	if gj, wj := mustJSON(t, got), mustJSON(t, want); gj != wj {
		t.Errorf("tally:\ngot  %s\nwant %s", gj, wj)
	}
	if n := got[0].Said(1); n != 2 {
		t.Errorf("naive: %d said 1, want 2", n)
	}
	if n := got[0].Said(-1); n != 1 {
		t.Errorf("naive: %d gave none, want 1", n)
	}
	if s := got[0].Summary(); s != "naive: 1 of 4 right; 2 said 1, 1 said 2, 1 gave none; it was 2" {
		t.Errorf("naive's summary: %q", s)
	}
	if len(room.Tally()) != 0 {
		t.Errorf("no answers: %+v, want none", room.Tally())
	}
}
