package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rawPut writes value as it is under key of the top-level collection name,
// past the store's codec: what damage, or an older build, leaves there.
func rawPut(t *testing.T, db *DB, name Bucket, key, value []byte) {
	t.Helper()
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return err
		}
		return b.Put(key, value)
	}); err != nil {
		t.Fatal(err)
	}
}

// rawGet is the bytes stored under key of name, as they are in the file.
func rawGet(t *testing.T, db *DB, name Bucket, key []byte) []byte {
	t.Helper()
	var v []byte
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(name)); b != nil {
			v = clone(b.Get(key))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSealedRecordsFindDamageThatStillDecodes: a record whose bytes changed
// into other bytes (here: another JSON value of the same length, which its
// owner would decode) fails every read that meets it with a DamagedRecord
// naming its collection, key and page, whichever accessor read it (Get
// returns nil, a scan leaves it out, and the transaction fails all the
// same), and the database refuses writes from then on.
func TestSealedRecordsFindDamageThatStillDecodes(t *testing.T) {
	t.Parallel()
	db, _ := newDB(t)
	const coll Bucket = "sum_test_outbox"
	key := []byte("msg-1")
	if err := db.Update(func(tx *Tx) error {
		if err := tx.PutJournal("exec_1", "charge", []byte(`{"amount":100}`)); err != nil {
			return err
		}
		return tx.Put(coll, key, []byte(`{"sent":1}`))
	}); err != nil {
		t.Fatal(err)
	}
	stored := rawGet(t, db, coll, key)
	if want := seal(key, []byte(`{"sent":1}`)); !bytes.Equal(stored, want) {
		t.Fatalf("stored %q, want the value and its sum %q", stored, want)
	}
	damaged := append([]byte(`{"sent":2}`), stored[len(stored)-sumSize:]...)
	rawPut(t, db, coll, key, damaged)

	reads := map[string]func(tx *Tx) error{
		"Get": func(tx *Tx) error {
			if v := tx.Get(coll, key); v != nil {
				t.Errorf("Get handed out the damaged value %q", v)
			}
			return nil
		},
		"Scan": func(tx *Tx) error {
			return tx.Scan(coll, nil, false, func(k, v []byte) bool {
				t.Errorf("Scan handed out %q = %q", k, v)
				return true
			})
		},
		"ScanInPlace": func(tx *Tx) error {
			return tx.ScanInPlace(coll, func(k, v []byte) bool {
				t.Errorf("ScanInPlace handed out %q = %q", k, v)
				return true
			})
		},
	}
	for name, read := range reads {
		err := db.View(read)
		var d *DamagedRecord
		if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want a DamagedRecord", name, err)
		}
		if d.Bucket != coll || !bytes.Equal(d.Key, key) || d.Page == 0 || !errors.Is(err, errSum) {
			t.Errorf("%s: %+v, want bucket %s, key %s, its page, a checksum mismatch", name, d, coll, key)
		}
	}
	// A reader that reports damage itself takes it, and its transaction
	// goes on.
	if err := db.View(func(tx *Tx) error {
		tx.Get(coll, key)
		if got := tx.TakeDamage(); len(got) != 1 {
			t.Errorf("TakeDamage: %v, want the one record", got)
		}
		if got := string(tx.Journal("exec_1", "charge")); got != `{"amount":100}` {
			t.Errorf("an undamaged record beside it reads %q", got)
		}
		return nil
	}); err != nil {
		t.Errorf("a transaction whose damage was taken: %v", err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.Put(coll, []byte("msg-2"), []byte("{}")) }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a write after the damage was met: %v, want it refused", err)
	}
}

// TestSealedKeysFindAMovedRecord: the sum covers the key, so a record
// whose key was damaged into another key is not read as that key's.
func TestSealedKeysFindAMovedRecord(t *testing.T) {
	t.Parallel()
	db, _ := newDB(t)
	if err := db.Update(func(tx *Tx) error { return tx.PutJournal("exec_1", "step-a", []byte("ok")) }); err != nil {
		t.Fatal(err)
	}
	stored := rawGet(t, db, bucketJournals, journalKey("exec_1", "step-a"))
	rawPut(t, db, bucketJournals, journalKey("exec_1", "step-b"), stored)
	err := db.View(func(tx *Tx) error {
		return tx.JournalEntries(func(exec, step string, record []byte) bool { return true })
	})
	var d *DamagedRecord
	if !errors.As(err, &d) || !bytes.Equal(d.Key, journalKey("exec_1", "step-b")) {
		t.Fatalf("a record under another key: %v, want it damaged", err)
	}
}

// TestWriterSealsOlderRecords: a v6 file's records are stored without
// sums. A read-only open reads them as they are; a read-write open seals
// every record of the summed collections (nested ones too) in the
// transaction that raises the schema, and leaves the rest as they were.
func TestWriterSealsOlderRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	db := openDB(t, path, Options{})
	const coll Bucket = "sum_test_ledger"
	var many [][]byte
	for i := range sealBatch + 10 { // more than one batch
		many = append(many, U64(uint64(i)))
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(6)); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte(coll))
		if err != nil {
			return err
		}
		for _, k := range many {
			if err := b.Put(k, append([]byte("v"), k...)); err != nil {
				return err
			}
		}
		old, err := tx.Bucket([]byte(bucketJournals)).CreateBucket([]byte("exec_old"))
		if err != nil {
			return err
		}
		if err := old.Put([]byte("s1"), []byte("old record")); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketExecOrder)).Put(U64(1), []byte("exec_old"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(db *DB) {
		t.Helper()
		if err := db.View(func(tx *Tx) error {
			n := 0
			if err := tx.Scan(coll, nil, false, func(k, v []byte) bool {
				if !bytes.Equal(v, append([]byte("v"), k...)) {
					t.Errorf("%x = %q", k, v)
				}
				n++
				return true
			}); err != nil {
				return err
			}
			if n != len(many) {
				t.Errorf("%d records read, want %d", n, len(many))
			}
			if got := string(tx.Journal("exec_old", "s1")); got != "old record" {
				t.Errorf("the old layout's journal record reads %q", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	ro := openDB(t, path, Options{ReadOnly: true})
	read(ro)
	if got := rawGet(t, ro, coll, many[0]); len(got) != 9 {
		t.Errorf("a reader changed a record: %q", got)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{})
	read(db)
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Errorf("schema %d after a writer's open, want %d", got, SchemaVersion)
	}
	if got, want := rawGet(t, db, coll, many[len(many)-1]), seal(many[len(many)-1], append([]byte("v"), many[len(many)-1]...)); !bytes.Equal(got, want) {
		t.Errorf("last record stored as %q, want %q", got, want)
	}
	if got := rawGet(t, db, bucketExecOrder, U64(1)); string(got) != "exec_old" {
		t.Errorf("the creation order, not summed, was changed: %q", got)
	}
}

// TestReaderRefusesADamagedMetaPage: with one meta page damaged, bbolt
// reads the file as of the other, the commit before the last: a reader
// says the file is damaged instead of reading that quietly.
func TestReaderRefusesADamagedMetaPage(t *testing.T) {
	t.Parallel()
	db, path := newDB(t)
	if err := db.Update(func(tx *Tx) error { return tx.Put("meta_test", []byte("k"), []byte("last")) }); err != nil {
		t.Fatal(err)
	}
	var txid int
	if err := db.bolt.View(func(tx *bolt.Tx) error { txid = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	ps := db.bolt.Info().PageSize
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	newest := (txid % 2) * ps // bbolt writes transaction n's meta to page n%2
	data[newest+pageHeaderSize+20] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("meta page %d is damaged", txid%2)) {
		t.Fatalf("a reader's open: %v, want the damaged meta page", err)
	}
}

// TestSealedChunksFindDamageThatStillDecodes: a history chunk stored plain
// (events that do not compress) whose event bytes changed still splits
// into events; its checksum finds it, whether it is a growing tail or
// sealed, and after a v6 file's chunk is given its sum by a writer's open.
func TestSealedChunksFindDamageThatStillDecodes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	db := openDB(t, path, Options{})
	// A v6 file's sealed chunk, without its sum.
	var v6Key []byte
	if err := db.Update(func(tx *Tx) error {
		events, prefix, err := tx.historyPrefix("v6", true)
		if err != nil {
			return err
		}
		v6Key = appendSeqKey(prefix, 1)
		var plain []byte
		for seq := uint64(1); seq <= 3; seq++ {
			plain = binary.AppendUvarint(plain, uint64(len(noiseEvent(seq))))
			plain = append(plain, noiseEvent(seq)...)
		}
		return events.Put(v6Key, plain)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(6))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{}) // seals the v6 chunk
	for _, exec := range []string{"tail", "sealed"} {
		if err := db.Update(func(tx *Tx) error {
			for range 3 {
				if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return noiseEvent(seq), nil }); err != nil {
					return err
				}
			}
			if exec == "sealed" {
				return tx.SealHistory(exec)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(exec string) error {
		return db.View(func(tx *Tx) error {
			return tx.Events(exec, 1, func(uint64, []byte) bool { return true })
		})
	}
	for _, exec := range []string{"tail", "sealed", "v6"} {
		if err := read(exec); err != nil {
			t.Fatalf("%s before any damage: %v", exec, err)
		}
	}
	damage := func(name Bucket, key []byte) {
		t.Helper()
		v := rawGet(t, db, name, key)
		v[len(v)-sumSize-5] ^= 0x55 // inside the last event
		rawPut(t, db, name, key, v)
	}
	tailPrefix, sealedPrefix := historyPrefixOf(t, db, "tail"), historyPrefixOf(t, db, "sealed")
	damage(bucketHistoryTails, tailPrefix)
	damage(bucketHistoryEvents, appendSeqKey(sealedPrefix, 1))
	damage(bucketHistoryEvents, v6Key)
	for _, exec := range []string{"tail", "sealed", "v6"} {
		if err := read(exec); !errors.Is(err, ErrCorrupt) || !errors.Is(err, errSum) {
			t.Errorf("%s damaged: %v, want its checksum not to match", exec, err)
		}
	}
	// The damage undone (the same flips again): the file left for the
	// final check is whole, which a writer's open, checking sums, wants.
	damage(bucketHistoryTails, tailPrefix)
	damage(bucketHistoryEvents, appendSeqKey(sealedPrefix, 1))
	damage(bucketHistoryEvents, v6Key)
}

// historyPrefixOf is exec's history prefix.
func historyPrefixOf(t *testing.T, db *DB, exec string) []byte {
	t.Helper()
	var prefix []byte
	if err := db.View(func(tx *Tx) error {
		_, p, err := tx.historyPrefix(exec, false)
		prefix = clone(p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return prefix
}
