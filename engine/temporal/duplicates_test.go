package temporal_test

import (
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// An imported workflow's record says whether the audit finds a duplicate
// in it, so the explorer's list shows ⚠ and its ⚠ and "dup" filters find
// it: run 1 alone holds only a possible one (a timeout, then a success);
// run 2 sends the confirmation again, a duplicate across the runs.
func TestImportRecordsDuplicates(t *testing.T) {
	db := openDB(t)
	for n, f := range []string{run1File, run2File} {
		if _, err := temporal.ImportFile(db, f); err != nil {
			t.Fatal(err)
		}
		var x history.Execution
		var found bool
		if err := db.View(func(tx *store.Tx) error {
			var err error
			if x, err = history.DecodeExecution(tx.Execution(execID)); err != nil {
				return err
			}
			evs, err := temporal.LoadEvents(tx, execID)
			found = audit.Verdict(trace.Fold(execID, evs)) == audit.Duplicate
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want := n == 1
		if x.Duplicates != want || found != want {
			t.Errorf("after %s: record says duplicates=%v, audit %v; want %v", f, x.Duplicates, found, want)
		}
		if got := execindex.Parse("dup").Match(x); got != want {
			t.Errorf("after %s: filter dup matches %v, want %v", f, got, want)
		}
	}
}
