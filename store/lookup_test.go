package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A writable transaction's look-ups share a kept cursor per collection
// (Tx.lookup): whatever the transaction puts, deletes, nests or clears in
// between, each answers as bbolt's Get answers, and as a read after the
// commit does.
func TestLookupsInAWritableTransactionFollowItsWrites(t *testing.T) {
	db, _ := newDB(t)
	const coll Bucket = "lookup_test"
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string][]byte{}
	key := func() []byte { return fmt.Appendf(nil, "k%04d", rng.IntN(3000)) }
	check := func(tx *Tx, where string) {
		t.Helper()
		b := tx.root(coll)
		for range 300 {
			k := key()
			if got := tx.Get(coll, k); !bytes.Equal(got, want[string(k)]) {
				t.Fatalf("%s: %s is %q, want %q", where, k, got, want[string(k)])
			}
			if b != nil {
				if stored, raw := tx.lookup(b, k), b.Get(k); !bytes.Equal(stored, raw) || (stored == nil) != (raw == nil) {
					t.Fatalf("%s: %s is stored as %q, bbolt's Get says %q", where, k, stored, raw)
				}
			}
		}
	}
	if err := db.Update(func(tx *Tx) error {
		clear(want) // the function may rerun
		check(tx, "before any put")
		for i := range 4000 {
			k := key()
			switch op := rng.IntN(10); {
			case op < 6:
				v := fmt.Appendf(nil, "v%d-%d", i, rng.IntN(1<<20))
				if err := tx.Put(coll, k, v); err != nil {
					return err
				}
				want[string(k)] = v
			case op < 9:
				if err := tx.Delete(coll, k); err != nil {
					return err
				}
				delete(want, string(k))
			default:
				// A look-up right after a write, of the key written.
				if got := tx.Get(coll, k); !bytes.Equal(got, want[string(k)]) {
					t.Fatalf("after write %d: %s is %q, want %q", i, k, got, want[string(k)])
				}
			}
			if i%500 == 0 {
				check(tx, fmt.Sprintf("after %d writes", i))
			}
		}
		check(tx, "after the writes")
		// A nested collection is no value, to a look-up as to Get.
		if _, err := tx.tx.Bucket([]byte(coll)).CreateBucket([]byte("k0001")); err != nil {
			return err
		}
		if got := tx.Get(coll, []byte("k0001")); got != nil {
			t.Fatalf("a nested collection looked up as %q", got)
		}
		if err := tx.tx.Bucket([]byte(coll)).DeleteBucket([]byte("k0001")); err != nil {
			return err
		}
		delete(want, "k0001")
		check(tx, "after a nested collection")
		// Cleared: the collection is another bucket, its cursor another.
		if err := tx.Clear(coll); err != nil {
			return err
		}
		clear(want)
		check(tx, "after Clear")
		if err := tx.Put(coll, []byte("k0007"), []byte("again")); err != nil {
			return err
		}
		want["k0007"] = []byte("again")
		check(tx, "after Clear and a put")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error { check(tx, "after the commit"); return nil }); err != nil {
		t.Fatal(err)
	}
	// Committed keys 0, 2, 4...: each look-up of an odd key follows one
	// of the key before it, which a put then placed the odd key after.
	const even Bucket = "lookup_even"
	if err := db.Update(func(tx *Tx) error {
		for i := 0; i < 2000; i += 2 {
			if err := tx.Put(even, fmt.Appendf(nil, "e%04d", i), []byte("even")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error {
		for i := 1; i < 2000; i += 2 {
			before, k := fmt.Appendf(nil, "e%04d", i-1), fmt.Appendf(nil, "e%04d", i)
			if got := tx.Get(even, before); string(got) != "even" {
				t.Fatalf("%s is %q, want even", before, got)
			}
			if err := tx.Put(even, k, []byte("odd")); err != nil {
				return err
			}
			if got := tx.Get(even, k); string(got) != "odd" {
				t.Fatalf("%s, put after a look-up of %s, is %q", k, before, got)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// HasPrefix finds a key by its start, in a writable transaction (after
// its own puts and deletes) and a read-only one alike.
func TestHasPrefix(t *testing.T) {
	db, _ := newDB(t)
	const coll Bucket = "prefix_test"
	cases := func(tx *Tx, where string, deleted bool) {
		t.Helper()
		for _, c := range []struct {
			prefix string
			want   bool
		}{{"", true}, {"exec-1\x00", true}, {"exec-1\x00trace-a", true}, {"exec-1\x00trace-b", !deleted},
			{"exec-1\x00trace-c", false}, {"exec-0", false}, {"exec-2", false}, {"exec-10", true}, {"exec-10\x00trace-a\x00zz", false}, {"z", false}} {
			if got := tx.HasPrefix(coll, []byte(c.prefix)); got != c.want {
				t.Errorf("%s: HasPrefix(%q) = %v, want %v", where, c.prefix, got, c.want)
			}
		}
	}
	if err := db.Update(func(tx *Tx) error {
		if tx.HasPrefix(coll, nil) || tx.HasPrefix("never_written", []byte("x")) {
			t.Error("a collection never written has a key")
		}
		for _, k := range []string{"exec-1\x00trace-a\x00span1", "exec-1\x00trace-b\x00span1", "exec-10\x00trace-a\x00span1"} {
			if err := tx.Put(coll, []byte(k), []byte("v")); err != nil {
				return err
			}
		}
		cases(tx, "after the puts", false)
		if err := tx.Delete(coll, []byte("exec-1\x00trace-b\x00span1")); err != nil {
			return err
		}
		cases(tx, "after a delete", true)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error { cases(tx, "read-only", true); return nil }); err != nil {
		t.Fatal(err)
	}
}
