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
