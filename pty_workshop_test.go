package main

import (
	"os/exec"
	"path/filepath"
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
	bin := buildBinary(t)
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
