package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// seed runs scenarios headless on db, as a workshop's earlier commands would.
func seed(t *testing.T, bin, db string, scenarios ...string) {
	t.Helper()
	for _, s := range scenarios {
		if out, err := exec.Command(bin, "--db", db, "run", s).CombinedOutput(); err != nil {
			t.Fatalf("run %s: %v\n%s", s, err, out)
		}
	}
}

// TestExplorerKeysInOneBurst types keys in one write, as tmux send-keys -l
// jjj or a fast typist does: the terminal reader hands them over as one
// message, and every key must still count.
func TestExplorerKeysInOneBurst(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	seed(t, bin, db, "naive", "safe", "one-send")
	s := startScreen(t, bin, db, 160, 40)
	s.waitFor("three executions", "Executions 3")
	s.press("\x1b[Z") // shift+tab: the executions pane
	s.waitFor("executions focused", "›✓ exec_M4TX")
	s.press("jj")
	s.waitFor("two rows down in one burst", "›⚠ exec_7K2Q")
	s.press("k")
	s.waitFor("one row up", "›✓ exec_01H8")
	s.press("q")
	<-s.done
}

// TestLessonLeavesTheUsersDatabase: L runs the lessons in a database of
// their own beside the user's; the user's executions are all there during
// and after the lesson.
func TestLessonLeavesTheUsersDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")
	seed(t, bin, db, "safe", "one-send")
	s := startScreen(t, bin, db, 160, 40)
	s.waitFor("the user's executions", "Executions 2", "exec_M4TX", "exec_01H8")
	s.press("L")
	s.waitFor("the first lesson", "Lesson 1/", "Predict:", filepath.Join(dir, "retrylab.lessons.db"))
	s.press("2\r")
	s.waitFor("waiting for the key", "▶ press n")
	s.press("n")
	s.waitFor("the lesson ran in its own database", "Executions 1", "exec_7K2Q", "Right: 2 messages in the outbox")
	s.press("\x1b") // esc: back to the user's database
	s.waitFor("the user's database is back", "Executions 2", "exec_M4TX", "exec_01H8")
	s.press("q")
	<-s.done
	out, err := exec.Command(bin, "--db", db, "show", "exec_01H8").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "execution completed") {
		t.Fatalf("the user's execution after the lesson: %v\n%s", err, out)
	}
}

// TestExplorerLessonFixEndsWithDiffLine: in the explorer's lesson mode a
// fix's step ends with its diff line, as `retrylab lesson` shows it; the
// mistake (naive, done headless before) is run on a scratch database.
func TestExplorerLessonFixEndsWithDiffLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	if out, err := exec.Command(bin, "--db", db, "lesson", "--answers", "2,1", "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("the first two lessons: %v\n%s", err, out)
	}
	s := startScreen(t, bin, db, 160, 40)
	s.waitFor("the explorer", "Executions 0")
	s.press("L")
	s.waitFor("the fix's lesson", "Lesson 3/", "safe", "Predict:")
	s.press("1\r")
	s.waitFor("waiting for the key", "▶ press n")
	s.press("n")
	s.waitFor("the second run's key", "✓ n", "▶ press n")
	s.press("n")
	s.waitFor("the verdict and the diff line", "Right: 1", "diff: naive: 2 messages to jordan@acme.dev; safe: 1")
	s.press("\x1b") // esc: back to the user's database
	s.waitFor("the user's database is back", "left the lesson")
	s.press("q")
	<-s.done
}

// TestExplorerStartsClean: E, once y confirms, empties the database:
// executions and histories as well as the world, which R keeps.
func TestExplorerStartsClean(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	seed(t, bin, db, "naive", "safe")
	s := startScreen(t, bin, db, 160, 40)
	s.waitFor("two executions", "Executions 2")
	s.press("E")
	s.waitFor("the question", "Erase all executions, histories, journals and the world? y: erase")
	s.press("y")
	s.waitFor("a clean database", "Executions 0", "none yet: press n", "erased: no executions")
	s.press("q")
	<-s.done
	out, err := exec.Command(bin, "--db", db, "show").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no executions yet") {
		t.Fatalf("show after E y: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--db", db, "state").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"outbox": []`) || !strings.Contains(string(out), `"journal": []`) {
		t.Fatalf("state after E y: %v\n%s", err, out)
	}
}
