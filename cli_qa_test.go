package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'export --otlp retrylab.db' (the database named where --db was meant)
// must not replace the database with the export, with or without a host
// holding it: it is refused in one line, and the database still opens with
// its executions. Another retrylab database is refused the same way.
func TestCLIExportRefusesADatabase(t *testing.T) {
	t.Parallel()
	for _, hosted := range []bool{false, true} {
		db := newDB(t)
		ok(t, db, "run", "naive")
		other := filepath.Join(filepath.Dir(db), "other.db")
		ok(t, other, "reset")
		if hosted {
			serve := background(t, db, "serve")
			serve.banner(t)
			defer func() {
				if err := serve.cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
				if s := serve.wait(t); s.code != 0 {
					t.Errorf("serve\n%s", s)
				}
				has(t, ok(t, db, "show"), "exec_7K2Q")
			}()
		}
		for _, dest := range []string{"retrylab.db", db, "other.db"} {
			msg := fails(t, 1, db, "export", "--otlp", dest)
			if !strings.Contains(msg, dest+" is a retrylab database") {
				t.Errorf("hosted %v: export --otlp %s: %q", hosted, dest, msg)
			}
		}
		has(t, ok(t, db, "show"), "exec_7K2Q")
		ok(t, other, "outbox")
	}
}

// import of a directory says it is one, not "empty file: no spans", with or
// without a host, and imports nothing.
func TestCLIImportDirectory(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("fixtures", "otlp"))
	if err != nil {
		t.Fatal(err)
	}
	want := "retrylab: import " + dir + " is a directory; name the files in it: retrylab import " + filepath.Join(dir, "*")
	for _, hosted := range []bool{false, true} {
		db := newDB(t)
		ok(t, db, "reset")
		if hosted {
			serve := background(t, db, "serve")
			serve.banner(t)
			defer func() {
				_ = serve.cmd.Process.Signal(os.Interrupt)
				serve.wait(t)
			}()
		}
		if msg := fails(t, 1, db, "import", dir); msg != want {
			t.Errorf("hosted %v: import DIR said %q, want %q", hosted, msg, want)
		}
	}
}

// A missing execution is named once, in the same words, whether the
// command works on the file alone or through a host ("no such execution:
// no such execution: nope" through one, before).
func TestCLIMissingExecutionThroughAHost(t *testing.T) {
	t.Parallel()
	alone, hosted := newDB(t), newDB(t)
	ok(t, alone, "run", "naive")
	ok(t, hosted, "run", "naive")
	cmds := [][]string{{"show", "nope"}, {"show", "--json", "nope"}, {"journal", "list", "nope"}, {"resume", "nope"}, {"journal", "delete", "nope", "step-4"}}
	want := make([]string, len(cmds))
	for i, args := range cmds {
		want[i] = fails(t, 1, alone, args...)
		if want[i] != "retrylab: no such execution: nope" {
			t.Errorf("%v alone: %q", args, want[i])
		}
	}
	serve := background(t, hosted, "serve")
	serve.banner(t)
	for i, args := range cmds {
		if got := fails(t, 1, hosted, args...); got != want[i] {
			t.Errorf("%v through a host: %q, alone %q", args, got, want[i])
		}
	}
	if err := serve.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	serve.wait(t)
}
