package room

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Answer is one lesson prediction of a participant, as the room keeps it:
// the lesson (its scenario's name), the number the participant said (-1:
// none), what the run produced, and whether they matched.
type Answer struct {
	Lesson    string `json:"lesson"`
	Predicted int    `json:"predicted"`
	Actual    int    `json:"actual"`
	Correct   bool   `json:"correct"`
}

// NoPrediction is the LessonTally.Answers key of the participants who
// finished a lesson without saying a number.
const NoPrediction = "none"

// LessonTally is the class's predictions in one lesson: how many
// participants answered it and how many were right, how many said each
// number ("1": 8, "2": 14; NoPrediction for none), and what the runs
// produced (the count most of them saw, the smaller on a tie: the lesson's
// scenario behaves the same for everyone unless the engine misbehaved).
type LessonTally struct {
	Lesson  string         `json:"lesson"`
	Asked   int            `json:"asked"`
	Right   int            `json:"right"`
	Answers map[string]int `json:"answers"`
	Actual  int            `json:"actual"`
}

// Summary is the tally in a line, for the projector and the terminal:
// "naive: 14 of 22 right; 8 said 1, 14 said 2; it was 2".
func (t LessonTally) Summary() string {
	var said []string
	nums := make([]int, 0, len(t.Answers))
	for k := range t.Answers {
		if n, err := strconv.Atoi(k); err == nil {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		said = append(said, fmt.Sprintf("%d said %d", t.Answers[answerKey(n)], n))
	}
	if k := t.Answers[NoPrediction]; k > 0 {
		said = append(said, fmt.Sprintf("%d gave none", k))
	}
	return fmt.Sprintf("%s: %d of %d right; %s; it was %d", t.Lesson, t.Right, t.Asked, strings.Join(said, ", "), t.Actual)
}

// Said is how many participants said n (-1: gave no number).
func (t LessonTally) Said(n int) int { return t.Answers[answerKey(n)] }

func answerKey(n int) string {
	if n < 0 {
		return NoPrediction
	}
	return strconv.Itoa(n)
}

// Tally is the class's tally per lesson of each participant's answers (one
// list per participant, in the order they finished the lessons), the
// lessons in the order the class walks them: by the earliest place any
// participant finished it, then by name. Status.Lessons is it; a handout
// made from the room's status reads it there.
func Tally(answers ...[]Answer) []LessonTally {
	type acc struct {
		t      LessonTally
		rank   int
		actual map[int]int
	}
	by := map[string]*acc{}
	for _, list := range answers {
		for i, a := range list {
			c := by[a.Lesson]
			if c == nil {
				c = &acc{t: LessonTally{Lesson: a.Lesson, Answers: map[string]int{}}, rank: i, actual: map[int]int{}}
				by[a.Lesson] = c
			}
			c.rank = min(c.rank, i)
			c.t.Asked++
			if a.Correct {
				c.t.Right++
			}
			c.t.Answers[answerKey(a.Predicted)]++
			c.actual[a.Actual]++
		}
	}
	out := make([]LessonTally, 0, len(by))
	ranks := map[string]int{}
	for name, c := range by {
		best := -1
		for n, k := range c.actual {
			if best < 0 || k > c.actual[best] || (k == c.actual[best] && n < best) {
				best = n
			}
		}
		c.t.Actual = max(best, 0)
		out = append(out, c.t)
		ranks[name] = c.rank
	}
	slices.SortFunc(out, func(a, b LessonTally) int {
		return cmp.Or(cmp.Compare(ranks[a.Lesson], ranks[b.Lesson]), cmp.Compare(a.Lesson, b.Lesson))
	})
	return out
}
