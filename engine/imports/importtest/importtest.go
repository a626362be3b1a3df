// Package importtest holds what the tests of the import sources share: a
// database in a test's temporary directory, and the executions read back
// through the registry of built-in sources as the explorer and the audit
// read them.
package importtest

import (
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// OpenDB opens a fresh database in t's temporary directory, closed when
// the test ends.
func OpenDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Folded reads every execution of db back through the registry of
// built-in sources and folds it into a trace, as the explorer and the
// audit do.
func Folded(t testing.TB, db *store.DB) []*trace.Trace {
	t.Helper()
	reg := all.Registry()
	var out []*trace.Trace
	err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Error(err)
				return false
			}
			evs, err := reg.Events(tx, x)
			if err != nil {
				t.Error(err)
				return false
			}
			out = append(out, trace.Fold(id, evs))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
