package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIGen(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, "gen", "--executions", "30", "--attempts-per-step", "3", "--seed", "4", "--batch-events", "200")
	has(t, r, "gen: 30/30 executions", "wrote 30 executions", "shapes: ", "status: ", "retrylab check --db")
	// The file was compacted into a new one: still 0600, nothing beside it.
	if info, err := os.Stat(db); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("after gen: %v, %v", info, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(db)); len(entries) != 1 {
		t.Errorf("beside the database after gen: %v", entries)
	}
	r = ok(t, db, "check")
	has(t, r, "30 executions", "verdict: PASS")
	r = ok(t, db, "show")
	has(t, r, "scenario gen-", "attempt 1")

	// The same seed again would overwrite histories: refused.
	msg := oneLineError(t, must(t, 1, db, "gen", "--executions", "5", "--seed", "4"))
	if !strings.Contains(msg, "already exists") {
		t.Errorf("regenerating a seed: %q", msg)
	}
	ok(t, db, "gen", "--executions", "5", "--seed", "5")
	has(t, ok(t, db, "check"), "35 executions")

	for _, args := range [][]string{
		{"gen", "--executions", "0"},
		{"gen", "--attempts-per-step", "0"},
		{"gen", "--batch-events", "0"},
		{"gen", "--batch-events", "-5"},
		{"gen", "--executions", "many"},
	} {
		oneLineError(t, must(t, 2, db, args...))
	}
}
