package cli

import (
	"fmt"
	"testing"

	"github.com/retrylab/retrylab/store"
)

// unsealedHistories counts the executions of the database at path, and
// those whose history's last chunk is not stored sealed.
func unsealedHistories(t *testing.T, path string) (all, unsealed int) {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *store.Tx) error {
		var failed error
		err := tx.ExecutionOrder(func(id []byte) bool {
			all++
			sealed, err := tx.HistorySealed(string(id))
			if err != nil {
				failed = fmt.Errorf("%s: %w", id, err)
				return false
			}
			if !sealed {
				unsealed++
			}
			return true
		})
		if err != nil {
			return err
		}
		return failed
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, unsealed
}

// A history's last chunk is stored as a growing tail while its execution
// runs; the run that finishes it seals it, as `gen` does every history it
// writes.
func TestFinishedHistoriesAreSealed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 0, db, "run", "naive")
	if all, unsealed := unsealedHistories(t, db); all == 0 || unsealed != 0 {
		t.Errorf("after a finished run: %d of %d histories unsealed", unsealed, all)
	}
	gen := newDB(t)
	ok(t, gen, "gen", "--executions", "40", "--seed", "8")
	if all, unsealed := unsealedHistories(t, gen); all != 40 || unsealed != 0 {
		t.Errorf("after gen: %d of %d histories unsealed", unsealed, all)
	}
}
