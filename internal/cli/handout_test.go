package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handout writes the session: each lesson done with what it teaches, the
// prediction and the outcome, and a fix's diff line as the lesson showed
// it; with no lesson done, it says how to start.
func TestCLIHandout(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	has(t, ok(t, db, "handout"), "# Workshop handout", "No lesson is done yet")

	ok(t, db, "lesson", "--from", "key-the-intent", "--answers", "1,1", "--quiet")
	file := filepath.Join(t.TempDir(), "workshop.md")
	has(t, ok(t, db, "handout", "-o", file), "wrote the handout of 2 lesson(s) to "+file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	for _, want := range []string{
		"2 of ", " lessons done, 1 predicted right.",
		"## Lesson 6 · key-the-intent — ", "What goes wrong.",
		"- predicted: 1 message in the outbox\n- outcome: 2 messages in the outbox · ✗ not quite",
		"## Lesson 7 · key-the-intent-fixed — ",
		"- outcome: 1 message in the outbox · ✓ right\n- diff: key-the-intent: 2 messages to jordan@acme.dev; key-the-intent-fixed: 1",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the handout lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "## Lesson 6") > strings.Index(md, "## Lesson 7") {
		t.Errorf("the lessons are not in the order they were done:\n%s", md)
	}
	fails(t, 2, db, "handout", "-o", t.TempDir())
}

// The teacher's handout beside a room has the class's tally of each
// lesson: two participants walk the first lesson, one predicting 2 (right:
// naive delivers twice), the other 1.
func TestCLIHandoutHasTheClassTally(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	roomDB := filepath.Join(dir, "room.db")
	rm := startRoom(t, roomDB)
	for name, answer := range map[string]string{"ada": "2", "bo": "1"} {
		db := filepath.Join(dir, name+".db")
		ok(t, db, "join", rm.url, "--code", rm.code, "--name", name)
		ok(t, db, "lesson", "--answers", answer, "--quiet", "--no-pause")
	}
	out := ok(t, roomDB, "handout").stdout
	for _, want := range []string{"Room " + rm.url + ": 2 participant(s).",
		"Each lesson, as the class predicted it:\n\n- naive: 1 of 2 right; 1 said 1, 1 said 2; it was 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the handout lacks %q:\n%s", want, out)
		}
	}
}
