package main

import (
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// historyChunks counts the history chunks of the database at path, and
// those of them stored plain (a compressed one starts with a 0 byte).
func historyChunks(t *testing.T, path string) (all, plain int) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = b.View(func(tx *bolt.Tx) error {
		events := tx.Bucket([]byte("history_events"))
		if events == nil {
			return fmt.Errorf("no history_events")
		}
		return events.ForEach(func(k, v []byte) error {
			if all++; len(v) > 0 && v[0] != 0 {
				plain++
			}
			return nil
		})
	})
	if err := errors.Join(err, b.Close()); err != nil {
		t.Fatal(err)
	}
	return all, plain
}

// A history's last chunk is stored plain while its execution runs; the
// run that finishes it stores it compressed, as is every chunk `gen`
// writes.
func TestFinishedHistoriesAreStoredCompressed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 0, db, "run", "naive")
	if all, plain := historyChunks(t, db); all == 0 || plain != 0 {
		t.Errorf("after a finished run: %d of %d chunks plain", plain, all)
	}
	gen := newDB(t)
	ok(t, gen, "gen", "--executions", "40", "--seed", "8")
	if all, plain := historyChunks(t, gen); all < 40 || plain != 0 {
		t.Errorf("after gen: %d of %d chunks plain", plain, all)
	}
}
