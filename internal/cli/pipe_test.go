package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A reader that leaves (retrylab run naive | head -1) stops the run as
// Ctrl-C does: the worker is killed and recorded, the database is left
// with no host file and no execution shown as running, and the exit is
// 141 (SIGPIPE's) with one line to resume it. Before, the process died of
// the signal mid-run.
func TestRunWhoseReaderLeaves(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	cmd := exec.Command(bin, "--db", db, "run", "naive")
	cmd.Dir, cmd.Env = filepath.Dir(db), cliEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(first, "started") {
		t.Fatalf("first line %q, %v", first, err)
	}
	out.Close() // head -1 exits
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 141 {
		t.Fatalf("exit %v, want 141\nstderr: %s", err, stderr.String())
	}
	if got := strings.TrimSpace(stderr.String()); !strings.HasPrefix(got, "retrylab: the output was closed: worker of exec_7K2Q killed; resume it with") || strings.Contains(got, "\n") {
		t.Errorf("stderr %q, want one line saying the output was closed", got)
	}
	if _, err := os.Stat(db + ".host"); err == nil {
		t.Errorf("the run left %s.host behind", db)
	}
	r := ok(t, db, "show")
	if !strings.Contains(r.stdout, "killed") || strings.Contains(r.stderr, "running") {
		t.Errorf("the execution after its reader left:\n%s", r)
	}
}
