package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// repoRoot is the module's root, from this package's directory: the
// command's main package, the fixtures and the shared testdata are there.
const repoRoot = "../.."

// bin is the real retrylab binary, built once for the CLI tests, which run
// it as a user would: in a temporary directory, with --db.
var bin string

func TestMain(m *testing.M) {
	// Tests that open a host in-process (to inspect a database) might start
	// workers: this binary must then be one.
	agent.MainForTests()
	if proto := os.Getenv(loadgenEnv); proto != "" { // a benchmark's exporters (receivers_bench_test.go)
		os.Exit(loadgenMain(proto))
	}
	testrun.WaitBound(16)
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "retrylab-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "retrylab")
	build := exec.Command("go", "build", "-o", bin, repoRoot)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build retrylab:", err)
		return 1
	}
	return m.Run()
}

// cliEnv is the environment of the binary: no RETRYLAB_DB from outside.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RETRYLAB_") {
			env = append(env, kv)
		}
	}
	return env
}

// ran is what a command printed and how it exited.
type ran struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r ran) String() string {
	return fmt.Sprintf("retrylab %s: exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// rl runs `retrylab --db db args...` in db's directory and waits for it.
func rl(t *testing.T, db string, args ...string) ran {
	t.Helper()
	return rlIn(t, db, nil, args...)
}

// must runs a command that must exit with code.
func must(t *testing.T, code int, db string, args ...string) ran {
	t.Helper()
	r := rl(t, db, args...)
	if r.code != code {
		t.Fatalf("want exit %d\n%s", code, r)
	}
	return r
}

// ok runs a command that must succeed quietly on stderr.
func ok(t *testing.T, db string, args ...string) ran {
	t.Helper()
	r := must(t, 0, db, args...)
	if r.stderr != "" {
		t.Errorf("stderr not empty\n%s", r)
	}
	return r
}

// oneLineError checks a failed command's stderr: one line, "retrylab: ...".
func oneLineError(t *testing.T, r ran) string {
	t.Helper()
	if r.code == 0 {
		t.Errorf("succeeded, want an error\n%s", r)
	}
	msg, found := strings.CutSuffix(r.stderr, "\n")
	if !found || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "retrylab: ") {
		t.Errorf("stderr is not one 'retrylab: ...' line\n%s", r)
	}
	for _, bad := range []string{"panic:", "goroutine ", "Usage:"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr contains %q\n%s", bad, r)
		}
	}
	return msg
}

// fails runs a command that must fail with exit code: one 'retrylab: ...'
// line on stderr, nothing on stdout. It returns that line.
func fails(t *testing.T, code int, db string, args ...string) string {
	t.Helper()
	r := rl(t, db, args...)
	msg := oneLineError(t, r)
	if r.code != code {
		t.Errorf("want exit %d\n%s", code, r)
	}
	if r.stdout != "" {
		t.Errorf("an error printed on stdout\n%s", r)
	}
	return msg
}

func has(t *testing.T, r ran, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q\n%s", w, r)
		}
	}
}

func hasNot(t *testing.T, r ran, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(r.stdout, w) {
			t.Errorf("stdout contains %q\n%s", w, r)
		}
	}
}

func count(s, sub string) int { return strings.Count(s, sub) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// newDB names a database in a fresh directory. Whatever the commands left
// in it must pass bbolt's consistency check at the end of the test.
func newDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	t.Cleanup(func() {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		db, err := store.Open(path, store.Options{ReadOnly: true})
		if err != nil {
			t.Errorf("open %s at the end: %v", path, err)
			return
		}
		if err := db.Check(); err != nil {
			t.Errorf("check %s: %v", path, err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close %s: %v", path, err)
		}
	})
	return path
}

// cliState is `retrylab state --json`.
type cliState struct {
	Outbox []struct {
		ID          string `json:"id"`
		To          string `json:"to"`
		Attribution struct {
			Execution string `json:"execution"`
			Step      string `json:"step"`
			Attempt   int    `json:"attempt"`
			Key       string `json:"key"`
		} `json:"attribution"`
	} `json:"outbox"`
	Keys []struct {
		Key string `json:"key"`
		Ref string `json:"ref"`
	} `json:"keys"`
	Journal []struct {
		Execution string          `json:"execution"`
		Step      string          `json:"step"`
		Run       int             `json:"run"`
		Result    json.RawMessage `json:"result"`
	} `json:"journal"`
	CRM []struct {
		ID     string         `json:"id"`
		Fields map[string]any `json:"fields"`
	} `json:"crm"`
}

func state(t *testing.T, db string) cliState {
	t.Helper()
	r := ok(t, db, "state", "--json")
	var s cliState
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("state --json: %v\n%s", err, r)
	}
	return s
}

// shown is `retrylab show --json`.
type shown struct {
	Execution struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Runs   int    `json:"runs"`
	} `json:"execution"`
	Events []struct {
		Seq     uint64 `json:"seq"`
		Type    string `json:"type"`
		Run     int    `json:"run"`
		Step    string `json:"step"`
		Attempt int    `json:"attempt"`
		Key     string `json:"key"`
		Time    string `json:"time"`
	} `json:"events"`
}

func show(t *testing.T, db, exec string) shown {
	t.Helper()
	r := ok(t, db, "show", exec, "--json")
	var s shown
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("show --json: %v\n%s", err, r)
	}
	return s
}

// countEvents counts events of a type, in a run (0: any), of a step ("": any).
func (s shown) countEvents(typ string, run int, step string) int {
	n := 0
	for _, ev := range s.Events {
		if ev.Type == typ && (run == 0 || ev.Run == run) && (step == "" || ev.Step == step) {
			n++
		}
	}
	return n
}
