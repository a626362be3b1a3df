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
