package store

import "testing"

// Collections of other packages, as their owners name them; the store's
// tests use them as any owner would.
const (
	Outbox       Bucket = "world_outbox"
	Keys         Bucket = "world_keys"
	CRM          Bucket = "world_crm"
	CRMWrites    Bucket = "world_crm_writes"
	World        Bucket = "world_meta"
	KeysInFlight Bucket = "world_keys_in_flight"
	Lessons      Bucket = "lessons"
)

var WorldBuckets = []Bucket{Outbox, Keys, CRM, CRMWrites, World, KeysInFlight}

// An owner's collection that was never written reads as empty, in a read
// transaction too; its first write creates it.
func TestOwnedBucketsAreCreatedOnFirstWrite(t *testing.T) {
	db, _ := newDB(t)
	const b Bucket = "someone_elses"
	err := db.View(func(tx *Tx) error {
		if tx.Get(b, []byte("k")) != nil || tx.Count(b) != 0 || tx.Sequence(b) != 0 {
			t.Error("an unwritten collection is not empty")
		}
		return tx.Scan(b, nil, false, func(k, _ []byte) bool { t.Errorf("scan found %q", k); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.Delete(b, []byte("k")) }); err != nil {
		t.Fatalf("delete from an unwritten collection: %v", err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.Put(b, []byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error {
		if got := string(tx.Get(b, []byte("k"))); got != "v" {
			t.Errorf("k = %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.ClearAll() }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error {
		if tx.Count(b) != 0 {
			t.Error("ClearAll left an owner's collection")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
