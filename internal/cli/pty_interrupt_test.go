package cli

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The explorer is quit while an import works through its host, so it waits
// for the import before closing; Ctrl-C then closes it at once. It exits
// 130, as a command interrupted by Ctrl-C does (it exited 0, as if it had
// waited), and the import fails in one line and keeps nothing: the file
// imported again afterwards is all there, once.
func TestExplorerInterruptedWhileAnImportWaits(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := startScreen(t, bin, db, 200, 30)
	s.waitFor("empty database", "Executions 0")

	file, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "otlp", "openinference-charge.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(doc), "\n")
	imp := exec.Command(bin, "--db", db, "import", "-")
	imp.Dir, imp.Env = filepath.Dir(db), cliEnv()
	in, err := imp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	imp.Stdout, imp.Stderr = &stdout, &stderr
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := io.WriteString(in, first+"\n"); err != nil {
		t.Fatal(err)
	}
	until(t, "the explorer's host importing", func() bool { return rl(t, db, "reset").code == 1 })

	s.press("q")
	s.waitFor("the wait for the import", "(1 attached); waiting for it to end or quit")
	s.press("\x03") // the screen has closed: the terminal turns it into SIGINT
	select {
	case err := <-s.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("explorer interrupted in its wait: %v, want exit 130\n%s", err, s.text())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Ctrl-C did not end the explorer's wait:\n%s", s.text())
	}
	s.waitFor("the interruption said", "retrylab: interrupted: closed ", "without waiting; the work attached to it was cut short")

	// The import's request is cut; it says so once it next reads its
	// standard input (a file would be read on at once).
	_, _ = io.WriteString(in, rest)
	in.Close()
	err = imp.Wait()
	r := ran{args: []string{"import", "-"}, stdout: stdout.String(), stderr: stderr.String(), code: imp.ProcessState.ExitCode()}
	msg := oneLineError(t, r)
	if err == nil || r.code != 1 || r.stdout != "" || !strings.Contains(msg, "closed before it answered") {
		t.Errorf("the import cut short:\n%s", r)
	}
	// Nothing of it was kept; the whole file imports afterwards, once.
	if msg := oneLineError(t, must(t, 1, db, "show", "otlp-conv-sess-oi-7")); msg != "retrylab: no such execution: otlp-conv-sess-oi-7" {
		t.Errorf("after the cut import: %q", msg)
	}
	has(t, ok(t, db, "import", file), "6 spans imported")
	has(t, ok(t, db, "show", "otlp-conv-sess-oi-7"), "spans 6")
}

// A SIGINT from outside while the screen is up (the ctrl+c key is the
// explorer's own quit, exit 0) is an interruption: exit 130 and one line,
// not exit 1 and Bubble Tea's "program was interrupted".
func TestExplorerSIGINTExits130(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := startScreen(t, bin, db, 120, 30)
	s.waitFor("empty database", "Executions 0")
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("explorer after SIGINT: %v, want exit 130\n%s", err, s.text())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("SIGINT did not end the explorer:\n%s", s.text())
	}
	s.waitFor("the interruption said", "retrylab: interrupted")
	if strings.Contains(s.text(), "program was interrupted") {
		t.Errorf("the explorer speaks Bubble Tea's words:\n%s", s.text())
	}
}
