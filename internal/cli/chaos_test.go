package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIChaos200 is the acceptance run of `retrylab chaos --runs 200`: real
// worker processes killed by crash faults and from outside, the host process
// killed with SIGKILL five times and started again on the same database,
// then the checker. It must pass, and `retrylab check` on the database it
// leaves must agree.
func TestCLIChaos200(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chaos.db")
	// How long it takes is BENCHMARKS.md's 14.6, not this test's.
	r := rl(t, db, "chaos", "--runs", "200", "--seed", "1", "--concurrency", "8")
	if r.code != 0 {
		t.Fatalf("chaos failed\n%s", r)
	}
	t.Logf("%s", r.stdout)
	has(t, r, "chaos: 200 runs, seed 1, concurrency 8, policy all", "200 executions",
		"hosts: 6 started, 5 killed with SIGKILL at random moments; consistency check passed at 6 of 6 opens and at the end",
		"every acknowledged event and status survived: true", "verdict: PASS")
	for _, p := range []string{"none ", "keys ", "journal ", "keys+journal "} {
		has(t, r, "\n"+p)
	}
	c := rl(t, db, "check")
	if c.code != 0 {
		t.Fatalf("check disagrees\n%s", c)
	}
	has(t, c, "200 executions", "verdict: PASS", "fault matrix (docs/FAULTS.md)")
}

// TestCLIChaosCatchesABrokenEngine plants a bug (every key derived with the
// attempt number) under keys+journal: the chaos run and a later check both
// report duplicated operations and exit 1.
func TestCLIChaosCatchesABrokenEngine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "broken.db")
	r := rl(t, db, "chaos", "--runs", "60", "--seed", "6", "--policy", "keys+journal", "--host-kills", "0",
		"--break", "key-from-attempt")
	if r.code != 1 {
		t.Fatalf("want exit 1\n%s", r)
	}
	has(t, r, "verdict: FAIL", "duplicated  exec_s6_r")
	if msg := oneLineError(t, r); !strings.Contains(msg, "the check found") {
		t.Errorf("stderr: %q", msg)
	}
	c := rl(t, db, "check")
	if c.code != 1 || !strings.Contains(c.stdout, "duplicated  exec_s6_r") {
		t.Fatalf("check does not catch it\n%s", c)
	}
	t.Logf("%s", c.stdout)
}

func TestCLIChaosAndCheckErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	used := filepath.Join(dir, "used.db")
	must(t, 0, used, "run", "naive")
	r := rl(t, used, "chaos", "--runs", "5")
	if msg := oneLineError(t, r); !strings.Contains(msg, "chaos needs a database without executions") {
		t.Errorf("chaos on a used database: %q", msg)
	}
	// check reads any database: the article's naive run duplicates, as the
	// model predicts for no key and no journal.
	c := rl(t, used, "check")
	if c.code != 0 {
		t.Fatalf("check of a naive run\n%s", c)
	}
	has(t, c, "verdict: PASS", "2 timeout after effect")
	r = rl(t, filepath.Join(dir, "missing.db"), "check")
	if msg := oneLineError(t, r); !strings.Contains(msg, "missing.db") {
		t.Errorf("check of a missing file: %q", msg)
	}
	r = rl(t, filepath.Join(dir, "x.db"), "chaos", "--runs", "5", "--policy", "sometimes")
	if msg := oneLineError(t, r); !strings.Contains(msg, `unknown policy "sometimes"`) {
		t.Errorf("bad policy: %q", msg)
	}
}
