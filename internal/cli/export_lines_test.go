package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// export --otlp to a .jsonl file writes OTLP/JSON Lines, with or without
// a host holding the database, and import reads them back as the same
// spans as the document.
func TestCLIExportJSONLines(t *testing.T) {
	t.Parallel()
	for _, hosted := range []bool{false, true} {
		db := newDB(t)
		ok(t, db, "run", "naive")
		if hosted {
			serve := background(t, db, "serve")
			serve.banner(t)
			defer func() {
				if s := serve.stop(t); s.code != 0 {
					t.Errorf("serve\n%s", s)
				}
			}()
		}
		dir := filepath.Dir(db)
		doc, lines := filepath.Join(dir, "x.json"), filepath.Join(dir, "x.jsonl")
		has(t, ok(t, db, "export", "--otlp", doc), "(OTLP/JSON)")
		has(t, ok(t, db, "export", "--otlp", lines), "(OTLP/JSON Lines)")
		b, err := os.ReadFile(lines)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) < 1 || bytes.HasPrefix(b, []byte("\n")) {
			t.Errorf("hosted %v: not JSON Lines:\n%s", hosted, b)
		}
		// What import says of each, past the file's name and format.
		imported := func(f string) string {
			t.Helper()
			out := ok(t, filepath.Join(t.TempDir(), "other.db"), "import", f).stdout
			_, said, _ := strings.Cut(out, ", ")
			return said
		}
		if d, l := imported(doc), imported(lines); d != l || !strings.Contains(d, "spans imported -> otlp-conv-exec_7K2Q") {
			t.Errorf("hosted %v: the document imports as %q, the lines as %q", hosted, d, l)
		}
	}
}
