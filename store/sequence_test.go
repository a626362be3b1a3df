package store

import (
	"path/filepath"
	"testing"
)

func TestSequenceCountsAppends(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "seq.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seq := func() (s uint64, n int) {
		if err := db.View(func(tx *Tx) error { s, n = tx.Sequence(Outbox), tx.Count(Outbox); return nil }); err != nil {
			t.Fatal(err)
		}
		return s, n
	}
	if s, n := seq(); s != 0 || n != 0 {
		t.Fatalf("empty: sequence %d, count %d", s, n)
	}
	// Enough entries to fill several pages at the append fill percent.
	err = db.Update(func(tx *Tx) error {
		for range 5000 {
			if _, err := tx.Append(Outbox, func(uint64) ([]byte, error) { return make([]byte, 100), nil }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s, n := seq(); s != 5000 || n != 5000 {
		t.Fatalf("after 5000 appends: sequence %d, count %d", s, n)
	}
	if err := db.Update(func(tx *Tx) error { return tx.Clear(Outbox) }); err != nil {
		t.Fatal(err)
	}
	if s, n := seq(); s != 0 || n != 0 {
		t.Fatalf("after Clear: sequence %d, count %d", s, n)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
