package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/fixtures"
)

// slowNaive writes naive with a 60 s deadline beside db: its first attempt,
// whose response the mail API holds back, lasts long enough to quit in.
func slowNaive(t *testing.T, db string) string {
	t.Helper()
	naive, err := fixtures.FS.ReadFile("naive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(naive, []byte("timeout: 1s}")) {
		t.Fatal("naive.yaml no longer has a 1 s deadline")
	}
	slow := filepath.Join(filepath.Dir(db), "naive-slow.yaml")
	if err := os.WriteFile(slow, bytes.Replace(naive, []byte("timeout: 1s}"), []byte("timeout: 60s}"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	return slow
}

// quitsWithin waits for the explorer to exit 0.
func (s *screen) quitsWithin(what string, d time.Duration) {
	s.t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("%s: the explorer exited with %v\n%s", what, err, s.text())
		}
	case <-time.After(d):
		s.t.Fatalf("%s: the explorer did not quit; it shows:\n%s", what, s.text())
	}
}

// TestExplorerQuitKillsItsRun: q then y, typed in one burst, during a run
// the explorer started SIGKILLs its worker and records the kill before the
// explorer exits: it does not wait for the run as if "another retrylab"
// worked through it, and show says killed, ☠ in the trace. ctrl+c does the
// same.
func TestExplorerQuitKillsItsRun(t *testing.T) {
	t.Parallel()
	for _, keys := range []string{"qy", "\x03"} {
		db := filepath.Join(t.TempDir(), "retrylab.db")
		s := startScreen(t, bin, db, 160, 40, "--run", slowNaive(t, db))
		s.waitFor("the run started", "exec_7K2Q")
		until(t, "the first attempt", func() bool { return show(t, db, "exec_7K2Q").Execution.Status == "running" })
		s.press(keys)
		s.quitsWithin(strings.TrimSpace(keys), 20*time.Second)
		if text := s.text(); strings.Contains(text, "another retrylab") || strings.Contains(text, "waiting for") {
			t.Errorf("%q: the explorer waited for its own run:\n%s", keys, text)
		}
		if sh := show(t, db, "exec_7K2Q"); sh.Execution.Status != "killed" {
			t.Errorf("%q: exec_7K2Q after quitting: %+v, want killed", keys, sh.Execution)
		}
		has(t, ok(t, db, "show", "exec_7K2Q"), "killed  runs 1", "✖ killed (exit 137) — killed (SIGKILL) from outside")
		// The explorer opened again shows the kill in the trace.
		again := startScreen(t, bin, db, 160, 40)
		again.waitFor("the kill in the trace", "☠ worker killed (exit 137)")
		again.press("q")
		again.quitsWithin("q with nothing running", 20*time.Second)
	}
}
