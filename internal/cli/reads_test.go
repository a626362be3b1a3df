package cli

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readCommands are the commands that only read the database.
var readCommands = [][]string{
	{"show"}, {"show", "--json"}, {"state", "--json"}, {"outbox"}, {"journal", "list"},
	{"audit", "--fail-on", "never"}, {"export", "--otlp", "-"}, {"check"},
	{"diff", "exec_TDTTNTKC", "exec_XEF16WG0"}, {"show", "--timeline"}, {"show", "--timeline", "exec_TDTTNTKC"},
	{"show", "--markdown", "exec_TDTTNTKC"}, {"clock"},
}

// Every read command leaves a clean file's bytes as they were, and reads a
// 0444 file the same, as another user who cannot write it (when the test
// runs as root, the commands run as nobody: root writes any file).
func TestReadCommandsNeverWrite(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "damaged", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(orig)
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean", "retrylab.db")
	locked := filepath.Join(dir, "locked", "retrylab.db")
	for _, p := range []string{clean, locked} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, orig, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(locked, 0o444); err != nil {
		t.Fatal(err)
	}
	asOther := otherUser(t, dir)
	for _, args := range readCommands {
		name := strings.Join(args, " ")
		r := rl(t, clean, args...)
		if r.code != 0 {
			t.Errorf("%s on a clean file:\n%s", name, r)
		}
		if got := fileSum(t, clean); got != want {
			t.Errorf("%s changed the clean file's bytes", name)
		}
		l := asOther(locked, args...)
		same := strings.ReplaceAll(l.stdout, locked, clean) == r.stdout
		if l.code != 0 || !same {
			t.Errorf("%s on a 0444 file of another user: exit %d, stdout same as on the clean file: %v\n%s", name, l.code, same, l)
		}
		if got := fileSum(t, locked); got != want {
			t.Errorf("%s changed the 0444 file's bytes", name)
		}
	}
}

// No read command creates a database where there is none. clock says
// the offset of a clock never moved, as it always did.
func TestReadCommandsCreateNoDatabase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	for _, args := range readCommands {
		r := rl(t, db, args...)
		if args[0] == "clock" {
			if r.code != 0 || !strings.Contains(r.stdout, "world clock +0h") {
				t.Errorf("clock: want exit 0 and the offset +0h; got\n%s", r)
			}
		} else if r.code != 1 || !strings.Contains(r.stderr, "no database at "+db+": `retrylab run naive` makes one") {
			t.Errorf("want exit 1 and \"no database at %s\"; got\n%s", db, r)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s created %s", strings.Join(args, " "), db)
		}
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// otherUser returns how to run the binary as a user other than the file's
// owner: as nobody (uid 65534) when the test runs as root, from a copy of
// the binary in dir that nobody can run; as this user otherwise (the file
// is then this user's, 0444, and not writable to it either).
func otherUser(t *testing.T, dir string) func(db string, args ...string) ran {
	t.Helper()
	if os.Geteuid() != 0 {
		return func(db string, args ...string) ran { return rl(t, db, args...) }
	}
	// t.TempDir's directories are 0700: nobody must reach the copy.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "retrylab")
	src, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return func(db string, args ...string) ran {
		cmd := exec.Command(exe, append([]string{"--db", db}, args...)...)
		cmd.Dir = filepath.Dir(db)
		cmd.Env = append(cliEnv(), "HOME="+filepath.Dir(db))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := ran{args: args, stdout: stdout.String(), stderr: stderr.String()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		default:
			t.Fatalf("retrylab %v as nobody: %v", args, err)
		}
		return r
	}
}
