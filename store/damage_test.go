package store

import (
	"errors"
	"strings"
	"testing"
)

// TestDamagedRecordNamesItsPageOrSaysWhyNot: a damaged record names the
// leaf page of the transaction's own snapshot that holds it, in a
// read-only transaction that commits have overtaken and in a writable one
// alike; when no page holds it, it says why instead of "page unknown".
func TestDamagedRecordNamesItsPageOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	db, _ := newDB(t)
	const coll Bucket = "damage_test"
	// The file is grown first (records put, then deleted) so that the
	// commits below, while a reader is open, need no larger map: bbolt
	// remaps only when no reader is open.
	if err := db.Update(func(tx *Tx) error {
		for i := range 400 {
			if err := tx.Put("damage_test_scratch", U64(uint64(i)), make([]byte, 1000)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error {
		if err := tx.Clear("damage_test_scratch"); err != nil {
			return err
		}
		return tx.Put(coll, []byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	// The pages Clear freed are given out again from the next commit on
	// (one with no reader open that could still read them).
	if err := db.Update(func(tx *Tx) error { return tx.Put(coll, []byte("k2"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	damaged := func(tx *Tx, key string) *DamagedRecord {
		var d *DamagedRecord
		if !errors.As(tx.Damaged(coll, nil, []byte(key), errors.New("test")), &d) {
			t.Fatal("Damaged is not a DamagedRecord")
		}
		db.damaged.Store(nil) // so the next write is not refused
		return d
	}
	{
		var before, overtaken, now uint64
		if err := db.View(func(tx *Tx) error {
			before = damaged(tx, "k").Page
			// Commits after the snapshot move the record to other pages.
			for i := range 20 {
				if err := db.Update(func(tx *Tx) error {
					return tx.Put(coll, []byte{byte('a' + i%26), byte(i)}, make([]byte, 500))
				}); err != nil {
					return err
				}
			}
			overtaken = damaged(tx, "k").Page
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.View(func(tx *Tx) error { now = damaged(tx, "k").Page; return nil }); err != nil {
			t.Fatal(err)
		}
		if before == 0 || overtaken != before || now == before {
			t.Errorf("an overtaken reader's record: page %d, then %d, want the same; the file's newest has it on page %d, another", before, overtaken, now)
		}
	}
	if err := db.Update(func(tx *Tx) error {
		if d := damaged(tx, "k"); d.Page == 0 {
			t.Errorf("a committed record in a writable transaction: %v", d)
		}
		if err := tx.Put(coll, []byte("new"), []byte("v")); err != nil {
			return err
		}
		if d := damaged(tx, "new"); d.Page != 0 || !strings.Contains(d.Error(), "this transaction put it") {
			t.Errorf("a record this transaction put: %v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error {
		if d := damaged(tx, "absent"); d.Page != 0 || !strings.Contains(d.Error(), "there is no such record") {
			t.Errorf("no such record: %v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
