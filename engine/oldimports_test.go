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

// duplicateFlags reads every execution's Duplicates flag, and whether the
// database says all imports carry it.
func duplicateFlags(t *testing.T, path string) (map[string]bool, bool) {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	flags := map[string]bool{}
	var marked bool
	err = db.View(func(tx *store.Tx) error {
		marked = tx.Meta("imported_duplicates") != nil
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Fatal(err)
			}
			flags[id] = x.Duplicates
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return flags, marked
}

// testdata/imported-v1/retrylab.db was written by 6066a84, before importers
// set the audit's duplicate flag: the four OTLP fixtures and the two runs
// of the Temporal order workflow, imported, every record without the flag.
// A host opening it flags those that hold a duplicate (the ADK agent's two
// sends, the GenAI invoice sent twice, the workflow's confirmation sent
// again in run 2), leaves the others alone, and says in the file that it
// is done, so that later opens do not audit again.
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
	for id, dup := range before {
		if dup {
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
	want := map[string]bool{
		"otlp-conv-sess-adk-mail-1":                     true,
		"otlp-conv-conv-9":                              true,
		"otlp-conv-sess-oi-7":                           false,
		"otlp-4bf92f3577b34da6a3ce929d0e0e4736":         false,
		"temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001": true,
	}
	for id, dup := range want {
		if after[id] != dup {
			t.Errorf("%s: duplicates %v, want %v", id, after[id], dup)
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
