package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

// duplicateFlags reads every execution's verdict ("duplicate",
// "possible" or ""), and whether the database says all imports carry it.
func duplicateFlags(t *testing.T, path string) (map[string]string, bool) {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	flags := map[string]string{}
	var marked bool
	err = db.View(func(tx *store.Tx) error {
		marked = tx.Meta("imported_verdicts") != nil
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case x.Duplicates:
				flags[id] = "duplicate"
			case x.Possible:
				flags[id] = "possible"
			default:
				flags[id] = ""
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return flags, marked
}

// testdata/imported-v1/retrylab.db was written by 6066a84, before importers
// set the audit's duplicate and possible flags: the four OTLP fixtures and
// the two runs of the Temporal order workflow, imported, every record
// without them. A host opening it flags those that hold a duplicate (the
// ADK agent's two sends, the GenAI invoice sent twice, the workflow's
// confirmation sent again in run 2) and the one that holds a possible one
// (the charge whose first attempt timed out), leaves the others alone, and
// says in the file that it is done, so that later opens do not audit
// again.
func TestOpenFlagsDuplicatesOfOldImports(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "imported-v1", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "retrylab.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before, marked := duplicateFlags(t, path)
	if len(before) != 5 || marked {
		t.Fatalf("testdata: %d executions, marked %v", len(before), marked)
	}
	for id, v := range before {
		if v != "" {
			t.Fatalf("testdata: %s already flagged: not a database of before the flag", id)
		}
	}
	h, err := engine.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS, Imports: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	<-engine.OldImportsFlagged(h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	after, marked := duplicateFlags(t, path)
	want := map[string]string{
		"otlp-conv-sess-adk-mail-1":                     "duplicate",
		"otlp-conv-conv-9":                              "duplicate",
		"otlp-conv-sess-oi-7":                           "possible",
		"otlp-4bf92f3577b34da6a3ce929d0e0e4736":         "",
		"temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001": "duplicate",
	}
	for id, v := range want {
		if after[id] != v {
			t.Errorf("%s: %q, want %q", id, after[id], v)
		}
	}
	if !marked {
		t.Error("the database does not say its imports are flagged")
	}
}

// A database that never imported anything is marked done at its first
// open, with no walk over its records.
func TestOpenMarksADatabaseWithoutImports(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h, err := engine.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS, Imports: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	<-engine.OldImportsFlagged(h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if flags, marked := duplicateFlags(t, path); len(flags) != 0 || !marked {
		t.Fatalf("%d executions, marked %v", len(flags), marked)
	}
}
