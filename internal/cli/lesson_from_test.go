package cli

import (
	"strings"
	"testing"
)

// lesson --from starts a room at a lesson, by name or number, whatever
// the progress says, and goes on along the path from there; a name it does
// not know is one line naming the nearest, exit 2, before anything runs.
func TestCLILessonFrom(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, "lesson", "--from", "key-retention-fixed", "--answers", "1", "--quiet")
	has(t, r, "Starting at lesson 17 of", "Lesson 17 of", "· key-retention-fixed", "✓ Right: 1 message",
		"Run `retrylab lesson --from natural-idempotency` to continue.")
	hasNot(t, r, "Lesson 1 of", "Lesson 16 of")

	r = ok(t, db, "lesson", "--from", "1", "--answers", "2", "--quiet")
	has(t, r, "Starting at lesson 1 of", "Lesson 1 of")

	msg := fails(t, 2, db, "lesson", "--from", "key-retnetion")
	if want := `retrylab: lesson --from: no lesson "key-retnetion" (did you mean key-retention?)`; msg != want {
		t.Errorf("unknown lesson: %q, want %q", msg, want)
	}
	msg = fails(t, 2, db, "lesson", "--from", "0")
	if want := "retrylab: lesson --from: no lesson 0: the lessons are numbered 1 to "; !strings.HasPrefix(msg, want) {
		t.Errorf("lesson 0: %q, want %q…", msg, want)
	}
}

// Lesson 21 said "The second start was deduplicated" under a narration
// that shows one start and nothing about a second: its text now says what
// the run shows, one start, the second having started nothing.
func TestCLILessonRunLevelSaysWhatItShows(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, "lesson", "--from", "run-level-idempotency", "--answers", "1")
	if n := strings.Count(r.stdout, "started: scenario run-level-idempotency"); n != 1 {
		t.Fatalf("the narration shows %d starts, want 1:\n%s", n, r.stdout)
	}
	has(t, r, "Watch how many starts the trace shows", "One start shows, not two", "started nothing")
	hasNot(t, r, "The second start was deduplicated")
}
