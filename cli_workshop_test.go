package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The command-line items of the "workshop-ready" issue: what a new user and
// a workshop teacher tripped on, each as the user sees it.

// Item 16: --keys and --journal state one default, the scenario's policy.
func TestCLIOnOffFlagsStateOneDefault(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, cmd := range []string{"run", "verify"} {
		r := ok(t, db, cmd, "--help")
		for _, flag := range []string{"--keys on|off", "--journal on|off"} {
			i := strings.Index(r.stdout, flag)
			if i < 0 {
				t.Fatalf("%s --help lacks %s\n%s", cmd, flag, r)
			}
			line := r.stdout[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if n := strings.Count(line, "(default"); n != 1 || !strings.Contains(line, "policy)") {
				t.Errorf("%s --help: %q states %d defaults, want the policy's only", cmd, line, n)
			}
		}
	}
}

// Item 22: a bad --db path is named for what is wrong with it.
func TestCLIBadDBPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		db   string
		want string
	}{
		{dir, "--db " + dir + " is a directory, not a database file; name a file in it, e.g. --db " + filepath.Join(dir, "retrylab.db")},
		{filepath.Join(dir, "missing", "x.db"), "directory " + filepath.Join(dir, "missing") + " does not exist (create it first: mkdir -p"},
		{"", "--db is empty: name a database file"},
		{filepath.Join(file, "x.db"), "a directory in that path is a file"},
	}
	for _, c := range cases {
		for _, cmd := range [][]string{{"show"}, {"run", "naive"}, {"check"}, {"outbox"}} {
			r := rl(t, filepath.Join(dir, "unused"), append([]string{"--db", c.db}, cmd...)...)
			msg := oneLineError(t, r)
			if !strings.Contains(msg, c.want) {
				t.Errorf("--db %q %v: %q, want it to say %q", c.db, cmd, msg, c.want)
			}
			if strings.Contains(msg, "corrupt") || strings.Contains(msg, "open : open") {
				t.Errorf("--db %q %v: %q", c.db, cmd, msg)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a bad path created a directory: %v", err)
	}
}

// Item 18: the chaos progress line and the summary count kills with the
// same words and the same numbers.
func TestCLIChaosProgressCountsAsTheSummary(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chaos.db")
	r := must(t, 0, db, "chaos", "--runs", "16", "--seed", "3", "--host-kills", "1")
	progress := regexp.MustCompile(`(?m)^\[16/16 runs · workers killed (\d+) · hosts killed (\d+) · 0 violations\]`).FindAllStringSubmatch(r.stdout, -1)
	if len(progress) == 0 {
		t.Fatalf("no final progress line\n%s", r)
	}
	last := progress[len(progress)-1]
	summary := regexp.MustCompile(`(?m)^workers killed: (\d+) \(`).FindStringSubmatch(r.stdout)
	if summary == nil || summary[1] != last[1] {
		t.Errorf("progress says workers killed %s, the summary %v\n%s", last[1], summary, r)
	}
	hosts := regexp.MustCompile(`(?m)^chaos: 16 runs in \S+ with \d+ hosts \(hosts killed (\d+)\)`).FindStringSubmatch(r.stdout)
	if hosts == nil || hosts[1] != last[2] {
		t.Errorf("progress says hosts killed %s, the summary %v\n%s", last[2], hosts, r)
	}
}

// Item 21: a database with a damaged page is refused before anything is
// written to it, and both run and check say so in our words, not bbolt's
// assertion.
func TestCLIDamagedPageRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "damaged.db")
	must(t, 0, db, "run", "naive")
	page := historyRoot(t, db, "exec_7K2Q")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, 4000), int64(page)*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("page %d is damaged (its header says it is page 4000)", page)
	for _, args := range [][]string{{"run", "safe"}, {"check"}, {"show", "exec_7K2Q"}} {
		r := rl(t, db, args...)
		msg := oneLineError(t, r)
		if !strings.Contains(msg, want) || !strings.Contains(msg, db) {
			t.Errorf("%v: %q, want the file named and %q", args, msg, want)
		}
		for _, bad := range []string{"panic", "assertion"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%v: %q says %q", args, msg, bad)
			}
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Fatalf("%v wrote to the damaged file\n%s", args, r)
		}
	}
}

// historyRoot is the page where an execution's history bucket starts.
func historyRoot(t *testing.T, path, exec string) uint64 {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var root uint64
	err = b.View(func(tx *bolt.Tx) error {
		h := tx.Bucket([]byte("histories")).Bucket([]byte(exec))
		if h == nil {
			return fmt.Errorf("no history bucket for %s", exec)
		}
		root = uint64(h.Root())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatalf("the history of %s is inline; the test needs it on a page of its own", exec)
	}
	return root
}
