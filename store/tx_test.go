package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestAppendEventSequences(t *testing.T) {
	db, _ := newDB(t)
	const n = 300 // crosses the 255/256 boundary of the low key byte
	var seen []uint64
	err := db.Update(func(tx *Tx) error {
		seen = seen[:0] // the function may rerun; keep only its last run
		for range n {
			seq, err := tx.AppendEvent("x", func(seq uint64) ([]byte, error) {
				seen = append(seen, seq)
				return payload("x", seq, 200), nil
			})
			if err != nil {
				return err
			}
			if seq != seen[len(seen)-1] {
				return fmt.Errorf("AppendEvent returned %d, encode got %d", seq, seen[len(seen)-1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, seq := range seen {
		if seq != uint64(i+1) {
			t.Fatalf("event %d got seq %d", i, seq)
		}
	}
	// Separate Updates continue the sequence; another execution starts at 1.
	if seqs := appendEvents(t, db, "x", 2); !slices.Equal(seqs, []uint64{301, 302}) {
		t.Fatalf("later appends got %v", seqs)
	}
	if seqs := appendEvents(t, db, "y", 2); !slices.Equal(seqs, []uint64{1, 2}) {
		t.Fatalf("second execution got %v", seqs)
	}

	err = db.View(func(tx *Tx) error {
		if got := tx.LastSeq("x"); got != 302 {
			t.Errorf("LastSeq = %d, want 302", got)
		}
		if got := tx.LastSeq("nobody"); got != 0 {
			t.Errorf("LastSeq of a missing execution = %d", got)
		}
		for _, from := range []uint64{0, 1, 200, 255, 256, 257, 302, 303} {
			var got []uint64
			err := tx.Events("x", from, func(seq uint64, data []byte) bool {
				if seq <= 300 && !bytes.Equal(data, payload("x", seq, 200)) {
					t.Errorf("event %d holds %q", seq, data[:12])
				}
				got = append(got, seq)
				return true
			})
			if err != nil {
				return err
			}
			start := max(from, 1)
			want := []uint64{}
			for s := start; s <= 302; s++ {
				want = append(want, s)
			}
			if len(got) == 0 {
				got = []uint64{}
			}
			if !slices.Equal(got, want) {
				t.Errorf("Events(from %d) = %d events starting %v, want %d", from, len(got), got[:min(3, len(got))], len(want))
			}
		}
		// Stops when fn returns false.
		var got []uint64
		if err := tx.Events("x", 254, func(seq uint64, _ []byte) bool {
			got = append(got, seq)
			return len(got) < 4
		}); err != nil {
			return err
		}
		if !slices.Equal(got, []uint64{254, 255, 256, 257}) {
			t.Errorf("Events stopping early = %v", got)
		}
		// A missing execution has no events and no error.
		return tx.Events("nobody", 0, func(uint64, []byte) bool {
			t.Error("event in a missing execution")
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAppendEventEncodeErrorRollsBack(t *testing.T) {
	db, _ := newDB(t)
	boom := errors.New("cannot encode")
	err := db.Update(func(tx *Tx) error {
		_, err := tx.AppendEvent("x", func(uint64) ([]byte, error) { return nil, boom })
		return err
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want it to wrap %v", err, boom)
	}
	if seqs := appendEvents(t, db, "x", 1); seqs[0] != 1 {
		t.Fatalf("after a failed append the next seq is %d, want 1", seqs[0])
	}
}

func TestGettersReturnCopies(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.Put(Keys, []byte("k"), []byte("value")); err != nil {
			return err
		}
		return tx.PutExecution("e", []byte("record"))
	})
	if err != nil {
		t.Fatal(err)
	}
	var v, rec []byte
	if err := db.View(func(tx *Tx) error {
		v, rec = tx.Get(Keys, []byte("k")), tx.Execution("e")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, db, "churn", 50) // remaps and rewrites pages
	if string(v) != "value" || string(rec) != "record" {
		t.Fatalf("values changed after the transaction: %q %q", v, rec)
	}
	v[0] = 'X'
	if err := db.View(func(tx *Tx) error {
		if got := string(tx.Get(Keys, []byte("k"))); got != "value" {
			t.Errorf("stored value changed to %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestJournal(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		for _, e := range []string{"b", "a"} {
			for _, s := range []string{"s2", "s1", "s3"} {
				if err := tx.PutJournal(e, s, []byte(e+"/"+s)); err != nil {
					return err
				}
			}
		}
		return tx.PutJournal("a", "s1", []byte("a/s1 again"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *Tx) error {
		if got := string(tx.Journal("a", "s1")); got != "a/s1 again" {
			t.Errorf("Journal(a, s1) = %q", got)
		}
		if tx.Journal("a", "nope") != nil || tx.Journal("nobody", "s1") != nil {
			t.Error("Journal of a missing record is not nil")
		}
		for _, c := range []struct {
			exec, step string
			want       bool
		}{{"a", "s2", true}, {"a", "s2", false}, {"a", "nope", false}, {"nobody", "s1", false}} {
			ok, err := tx.DeleteJournal(c.exec, c.step)
			if err != nil {
				return err
			}
			if ok != c.want {
				t.Errorf("DeleteJournal(%s, %s) = %v, want %v", c.exec, c.step, ok, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *Tx) error {
		var all []string
		if err := tx.JournalEntries(func(exec, step string, record []byte) bool {
			if string(record) != exec+"/"+step && string(record) != "a/s1 again" {
				t.Errorf("%s/%s holds %q", exec, step, record)
			}
			all = append(all, exec+"/"+step)
			return true
		}); err != nil {
			return err
		}
		if want := []string{"a/s1", "a/s3", "b/s1", "b/s2", "b/s3"}; !slices.Equal(all, want) {
			t.Errorf("JournalEntries = %v, want %v", all, want)
		}
		var some []string
		if err := tx.JournalEntries(func(exec, step string, _ []byte) bool {
			some = append(some, exec+"/"+step)
			return len(some) < 3 // stops inside the second execution
		}); err != nil {
			return err
		}
		if want := []string{"a/s1", "a/s3", "b/s1"}; !slices.Equal(some, want) {
			t.Errorf("JournalEntries stopping early = %v, want %v", some, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func listExecutions(t *testing.T, db *DB, newestFirst bool, skip, limit int) []string {
	t.Helper()
	var ids []string
	err := db.View(func(tx *Tx) error {
		return tx.Executions(newestFirst, skip, func(id string, record []byte) bool {
			if string(record) != "rec-"+id && string(record) != "updated-"+id {
				t.Errorf("record of %s = %q", id, record)
			}
			ids = append(ids, id)
			return len(ids) < limit
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func execCount(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.View(func(tx *Tx) error { n = tx.ExecutionCount(); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExecutionsOrderPagingAndCount(t *testing.T) {
	db, _ := newDB(t)
	// Ids deliberately not in creation order, so order is not key order.
	ids := []string{"m", "c", "x", "a", "q"}
	for i, id := range ids {
		if err := db.Update(func(tx *Tx) error { return tx.PutExecution(id, []byte("rec-"+id)) }); err != nil {
			t.Fatal(err)
		}
		if got := execCount(t, db); got != i+1 {
			t.Fatalf("ExecutionCount after %d puts = %d", i+1, got)
		}
	}
	if err := db.Update(func(tx *Tx) error { return tx.PutExecution("", nil) }); err == nil {
		t.Fatal("PutExecution with an empty id succeeded")
	}
	// Putting an existing id again updates it in place.
	if err := db.Update(func(tx *Tx) error { return tx.PutExecution("c", []byte("updated-c")) }); err != nil {
		t.Fatal(err)
	}
	if got := execCount(t, db); got != 5 {
		t.Fatalf("ExecutionCount after re-put = %d, want 5", got)
	}

	for _, c := range []struct {
		newest      bool
		skip, limit int
		want        []string
	}{
		{false, 0, 100, []string{"m", "c", "x", "a", "q"}},
		{true, 0, 100, []string{"q", "a", "x", "c", "m"}},
		{true, 0, 2, []string{"q", "a"}},
		{true, 2, 2, []string{"x", "c"}},
		{true, 4, 2, []string{"m"}},
		{true, 5, 2, nil},
		{true, 50, 2, nil},
		{false, 1, 3, []string{"c", "x", "a"}},
	} {
		if got := listExecutions(t, db, c.newest, c.skip, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("Executions(newest=%v, skip=%d, limit %d) = %v, want %v", c.newest, c.skip, c.limit, got, c.want)
		}
	}

	// Delete removes the record, its place in order, history and journal.
	appendEvents(t, db, "x", 3)
	if err := db.Update(func(tx *Tx) error { return tx.PutJournal("x", "s", []byte("r")) }); err != nil {
		t.Fatal(err)
	}
	for range 2 { // deleting twice is harmless
		if err := db.Update(func(tx *Tx) error { return tx.DeleteExecution("x") }); err != nil {
			t.Fatal(err)
		}
		if got := execCount(t, db); got != 4 {
			t.Fatalf("ExecutionCount after delete = %d, want 4", got)
		}
	}
	if err := db.Update(func(tx *Tx) error { return tx.DeleteExecution("never-existed") }); err != nil {
		t.Fatal(err)
	}
	if got := listExecutions(t, db, false, 0, 100); !slices.Equal(got, []string{"m", "c", "a", "q"}) {
		t.Fatalf("after delete: %v", got)
	}
	// With a place missing, a skip steps over the places left.
	if got := listExecutions(t, db, true, 1, 2); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after delete, newest first from 1: %v", got)
	}
	if got := listExecutions(t, db, false, 2, 5); !slices.Equal(got, []string{"a", "q"}) {
		t.Fatalf("after delete, oldest first from 2: %v", got)
	}
	err := db.View(func(tx *Tx) error {
		if tx.Execution("x") != nil || tx.LastSeq("x") != 0 || tx.Journal("x", "s") != nil {
			t.Error("deleted execution left data behind")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Re-creating a deleted id puts it last and restarts its history.
	if err := db.Update(func(tx *Tx) error { return tx.PutExecution("x", []byte("rec-x")) }); err != nil {
		t.Fatal(err)
	}
	if got := listExecutions(t, db, true, 0, 1); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("newest after re-create = %v", got)
	}
	if seqs := appendEvents(t, db, "x", 1); seqs[0] != 1 {
		t.Fatalf("history of re-created execution starts at %d", seqs[0])
	}
}

func TestPlainCollections(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		for i := range 3 {
			seq, err := tx.Append(Outbox, func(seq uint64) ([]byte, error) {
				return fmt.Appendf(nil, "msg-%d", seq), nil
			})
			if err != nil {
				return err
			}
			if seq != uint64(i+1) {
				t.Errorf("Append got seq %d, want %d", seq, i+1)
			}
		}
		for _, k := range []string{"b", "a", "c"} {
			if err := tx.Put(CRM, []byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return tx.Delete(CRM, []byte("c"))
	})
	if err != nil {
		t.Fatal(err)
	}
	scan := func(name Bucket, from []byte, reverse bool, limit int) []string {
		var got []string
		if err := db.View(func(tx *Tx) error {
			return tx.Scan(name, from, reverse, func(k, v []byte) bool {
				got = append(got, fmt.Sprintf("%x=%s", k, v))
				return len(got) < limit
			})
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := scan(CRM, nil, false, 10); !slices.Equal(got, []string{"61=va", "62=vb"}) {
		t.Errorf("Scan CRM = %v", got)
	}
	if got := scan(CRM, nil, true, 10); !slices.Equal(got, []string{"62=vb", "61=va"}) {
		t.Errorf("Scan CRM reverse = %v", got)
	}
	if got := scan(Outbox, U64(2), false, 10); len(got) != 2 || !strings.HasSuffix(got[0], "=msg-2") {
		t.Errorf("Scan Outbox from 2 = %v", got)
	}
	if got := scan(Outbox, nil, false, 1); len(got) != 1 || !strings.HasSuffix(got[0], "=msg-1") {
		t.Errorf("Scan Outbox stopping after 1 = %v", got)
	}
	err = db.Update(func(tx *Tx) error {
		if n := tx.Count(Outbox); n != 3 {
			t.Errorf("Count(Outbox) = %d", n)
		}
		if err := tx.Clear(Outbox); err != nil {
			return err
		}
		if n := tx.Count(Outbox); n != 0 {
			t.Errorf("Count(Outbox) after Clear = %d", n)
		}
		if got := string(tx.Get(CRM, []byte("a"))); got != "va" {
			t.Errorf("Clear(Outbox) touched CRM: %q", got)
		}
		seq, err := tx.Append(Outbox, func(uint64) ([]byte, error) { return []byte("m"), nil })
		if seq != 1 {
			t.Errorf("Append after Clear got seq %d, want 1", seq)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestClearAll(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		for _, id := range []string{"e1", "e2"} {
			if err := tx.PutExecution(id, []byte("r")); err != nil {
				return err
			}
			if err := tx.PutJournal(id, "s", []byte("r")); err != nil {
				return err
			}
		}
		for _, b := range append(WorldBuckets, Lessons) {
			if err := tx.Put(b, []byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, db, "e1", 3)
	if err := db.Update(func(tx *Tx) error { return tx.ClearAll() }); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *Tx) error {
		if n := tx.ExecutionCount(); n != 0 {
			t.Errorf("ExecutionCount after ClearAll = %d", n)
		}
		for _, b := range append(WorldBuckets, Lessons) {
			if n := tx.Count(b); n != 0 {
				t.Errorf("%s has %d entries after ClearAll", b, n)
			}
		}
		if tx.Execution("e1") != nil || tx.LastSeq("e1") != 0 || tx.Journal("e1", "s") != nil {
			t.Error("execution data survived ClearAll")
		}
		return tx.Executions(false, 0, func(id string, _ []byte) bool {
			t.Errorf("execution %s listed after ClearAll", id)
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Fatalf("schema after ClearAll = %d", got)
	}
	// The cleared database works as new.
	if err := db.Update(func(tx *Tx) error { return tx.PutExecution("e3", []byte("r")) }); err != nil {
		t.Fatal(err)
	}
	if got := execCount(t, db); got != 1 {
		t.Fatalf("ExecutionCount after ClearAll and one put = %d", got)
	}
	if seqs := appendEvents(t, db, "e1", 1); seqs[0] != 1 {
		t.Fatalf("history after ClearAll starts at %d", seqs[0])
	}
}

// The tails the store keeps between transactions (DB.tails) follow what
// commits and nothing else: an append rolled back, a deletion (committed or
// rolled back) and a ClearAll are each followed by appends that number and
// read back as the bucket says.
func TestKeptTailsFollowCommits(t *testing.T) {
	db, _ := newDB(t)
	boom := errors.New("rolled back on purpose")
	appendLike := func(tx *Tx, exec string) (uint64, error) {
		return tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return eventLike(seq), nil })
	}
	appendOne := func(exec string, want uint64) {
		t.Helper()
		var got uint64
		if err := db.Update(func(tx *Tx) (err error) { got, err = appendLike(tx, exec); return err }); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("append to %s: seq %d, want %d", exec, got, want)
		}
	}
	readsAs := func(exec string, n int) {
		t.Helper()
		seqs, data := readAll(t, db, exec, 0)
		if len(seqs) != n {
			t.Fatalf("%s: %d events, want %d", exec, len(seqs), n)
		}
		for i, seq := range seqs {
			if seq != uint64(i+1) || !bytes.Equal(data[i], eventLike(seq)) {
				t.Fatalf("%s: event %d is %d %q", exec, i, seq, data[i])
			}
		}
	}
	for i := range 5 {
		appendOne("x", uint64(i+1))
	}
	// Appends rolled back, in a transaction that took the kept tail (and
	// stored it, for a read in the transaction).
	err := db.Update(func(tx *Tx) error {
		for range 2 {
			if _, err := appendLike(tx, "x"); err != nil {
				return err
			}
		}
		if err := tx.Events("x", 7, func(uint64, []byte) bool { return true }); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v", err)
	}
	appendOne("x", 6)
	readsAs("x", 6)
	// A deletion rolled back, then one committed.
	if err := db.Update(func(tx *Tx) error {
		if err := tx.DeleteExecution("x"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update = %v", err)
	}
	appendOne("x", 7)
	readsAs("x", 7)
	if err := db.Update(func(tx *Tx) error { return tx.DeleteExecution("x") }); err != nil {
		t.Fatal(err)
	}
	appendOne("x", 1)
	readsAs("x", 1)
	// Everything cleared.
	for i := range 3 {
		appendOne("y", uint64(i+1))
	}
	if err := db.Update(func(tx *Tx) error { return tx.ClearAll() }); err != nil {
		t.Fatal(err)
	}
	appendOne("y", 1)
	readsAs("y", 1)
	// Many appends, one a transaction, across full chunks.
	for i := range 120 {
		appendOne("z", uint64(i+1))
	}
	readsAs("z", 120)
}

// A read-only transaction's lookups answer as bbolt's Get whatever their
// order: ascending ones step the kept cursor instead of searching, others
// search, keys that are not there and keys past the last answer nothing.
func TestLookupsInAnyOrder(t *testing.T) {
	db, _ := newDB(t)
	const name = Bucket("lookup_order")
	have := map[uint64]bool{}
	err := db.Update(func(tx *Tx) error {
		for k := uint64(2); k < 3000; k += 1 + k%3 { // gaps of 0 to 2 keys
			have[k] = true
			if err := tx.Put(name, U64(k), []byte(fmt.Sprint("v", k))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []uint64
	for k := range uint64(3005) { // every key and gap, ascending, past the last
		keys = append(keys, k)
	}
	for k := 3004; k >= 0; k -= 7 { // descending
		keys = append(keys, uint64(k))
	}
	keys = append(keys, 5, 5, 6, 8, 8, 1, 0, 2999, 3000, 3001, 2, 3, 4)
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		keys = append(keys, r.Uint64N(3010))
	}
	err = db.View(func(tx *Tx) error {
		for _, k := range keys {
			got := tx.Get(name, U64(k))
			want := ""
			if have[k] {
				want = fmt.Sprint("v", k)
			}
			if string(got) != want {
				t.Fatalf("Get(%d) = %q, want %q", k, got, want)
			}
			if got := tx.GetInPlace(name, U64(k)); string(got) != want {
				t.Fatalf("GetInPlace(%d) = %q, want %q", k, got, want)
			}
		}
		// ScanInPlace reads what Scan does, and stops where it is told.
		var all, in []string
		if err := tx.Scan(name, nil, false, func(k, v []byte) bool { all = append(all, fmt.Sprint(DecodeU64(k), string(v))); return true }); err != nil {
			return err
		}
		if err := tx.ScanInPlace(name, func(k, v []byte) bool { in = append(in, fmt.Sprint(DecodeU64(k), string(v))); return len(in) < 1000 }); err != nil {
			return err
		}
		if len(all) != len(have) || !slices.Equal(in, all[:1000]) {
			t.Errorf("ScanInPlace read %d, Scan %d of %d", len(in), len(all), len(have))
		}
		if err := tx.ScanInPlace("absent", func(k, v []byte) bool { t.Error("read an absent collection"); return true }); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ExecutionsInOrder hands out what Executions does, in the same order,
// over several windows, on a file whose order names a missing record and
// one id twice; while fn runs, the execution's history reads as it does
// anywhere else.
func TestExecutionsInOrder(t *testing.T) {
	db, _ := newDB(t)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 2600 // windows of 1 024
	err := db.Update(func(tx *Tx) error {
		for i := range n {
			id := fmt.Sprintf("exec_%08x", r.Uint32())
			if err := tx.PutExecution(id, []byte(fmt.Sprint("record ", i))); err != nil {
				return err
			}
			for range i % 3 { // some have no history
				if _, err := tx.AppendEvent(id, func(seq uint64) ([]byte, error) { return payload(id, seq, 40), nil }); err != nil {
					return err
				}
			}
		}
		// Damage: a record gone, an id twice in the order.
		var first, second []byte
		c := tx.tx.Bucket([]byte(bucketExecOrder)).Cursor()
		_, first = c.First()
		_, second = c.Next()
		if err := tx.tx.Bucket([]byte(bucketExecutions)).Delete(first); err != nil {
			return err
		}
		return tx.tx.Bucket([]byte(bucketExecOrder)).Put(U64(1<<40), second)
	})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		id, record, events string
	}
	read := func(tx *Tx, each func(func(string, []byte) bool) error) []seen {
		var out []seen
		prev := ""
		if err := each(func(id string, record []byte) bool {
			var b strings.Builder
			for _, of := range []string{id, prev} { // and another's, while fn runs for id
				if err := tx.EventsInPlace(of, 0, func(seq uint64, data []byte) bool {
					fmt.Fprintf(&b, "%d:%s ", seq, data)
					return true
				}); err != nil {
					t.Fatal(err)
				}
			}
			prev = id
			out = append(out, seen{id, fmt.Sprintf("%v %q", record == nil, record), b.String()})
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	err = db.View(func(tx *Tx) error {
		want := read(tx, func(fn func(string, []byte) bool) error { return tx.Executions(false, 0, fn) })
		got := read(tx, tx.ExecutionsInOrder)
		if len(want) != n+1 || !slices.Equal(got, want) {
			t.Errorf("in order: %d executions, want %d (%d in the file)", len(got), len(want), n+1)
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("the %d-th: %+v, want %+v", i, got[i], want[i])
				}
			}
		}
		if want[0].record != "true \"\"" {
			t.Errorf("the missing record reads %s", want[0].record)
		}
		stopped := 0
		if err := tx.ExecutionsInOrder(func(string, []byte) bool { stopped++; return stopped < 1500 }); err != nil || stopped != 1500 {
			t.Errorf("stopped after %d (%v), want 1500", stopped, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An execution moved to the newest place is listed first, and paging
// still finds every page by a seek past the holes moves and deletions
// left: each page is the slice of the whole list it should be, newest
// first and oldest first, and the watcher hears of the move as a deletion
// and a put.
func TestMoveExecutionToNewest(t *testing.T) {
	db, _ := newDB(t)
	w := &recordingWatcher{}
	db.WatchExecutions(w)
	var want []string // oldest first
	for i := range 40 {
		id := fmt.Sprintf("e%02d", i)
		want = append(want, id)
		if err := db.Update(func(tx *Tx) error { return tx.PutExecution(id, []byte("rec-"+id)) }); err != nil {
			t.Fatal(err)
		}
	}
	move := func(id string) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error { return tx.MoveExecutionToNewest(id) }); err != nil {
			t.Fatal(err)
		}
		want = append(slices.DeleteFunc(want, func(x string) bool { return x == id }), id)
	}
	for _, id := range []string{"e03", "e17", "e39", "e00", "e03", "e25"} {
		move(id)
	}
	if err := db.Update(func(tx *Tx) error { return tx.DeleteExecution("e10") }); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(x string) bool { return x == "e10" })
	if err := db.Update(func(tx *Tx) error { return tx.MoveExecutionToNewest("nope") }); err != nil {
		t.Errorf("moving an execution that is not there: %v", err)
	}

	newest := slices.Clone(want)
	slices.Reverse(newest)
	if got := listExecutions(t, db, true, 0, 100); !slices.Equal(got, newest) {
		t.Fatalf("newest first:\n got %v\nwant %v", got, newest)
	}
	for skip := 0; skip <= len(want); skip++ {
		for _, c := range []struct {
			newest bool
			all    []string
		}{{true, newest}, {false, want}} {
			end := min(skip+3, len(c.all))
			if got := listExecutions(t, db, c.newest, skip, 3); !slices.Equal(got, c.all[skip:end]) {
				t.Errorf("Executions(newest=%v, skip=%d, 3) = %v, want %v", c.newest, skip, got, c.all[skip:end])
			}
		}
	}
	if got := strings.Join(w.log, " "); !strings.Contains(got, "del e25 put e25") {
		t.Errorf("the watcher heard: %s", got)
	}
}

// recordingWatcher logs what an ExecutionWatcher hears.
type recordingWatcher struct{ log []string }

func (w *recordingWatcher) ExecutionPut(id string, _ []byte) { w.log = append(w.log, "put "+id) }
func (w *recordingWatcher) ExecutionDeleted(id string)       { w.log = append(w.log, "del "+id) }
func (w *recordingWatcher) ExecutionsCleared()               { w.log = append(w.log, "clear") }

// seekPosition lands where stepping over the holes would, from either end.
func TestSeekPositionStepsOverHoles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 22))
	for range 200 {
		lo := uint64(1 + r.IntN(5))
		hi := lo + uint64(r.IntN(60))
		var holes, live []uint64
		for p := lo; p <= hi; p++ {
			if p != lo && p != hi && r.IntN(3) == 0 {
				holes = append(holes, p)
			} else {
				live = append(live, p)
			}
		}
		for skip := range live {
			if got := seekPosition(lo, hi, uint64(skip), holes, false); got != live[skip] {
				t.Fatalf("oldest first, lo %d hi %d holes %v skip %d: %d, want %d", lo, hi, holes, skip, got, live[skip])
			}
			if got := seekPosition(lo, hi, uint64(skip), holes, true); got != live[len(live)-1-skip] {
				t.Fatalf("newest first, lo %d hi %d holes %v skip %d: %d, want %d", lo, hi, holes, skip, got, live[len(live)-1-skip])
			}
		}
	}
}

// AppendInPlace stores a value as Append does, its checksum written in
// the room after it (no copy), and refuses a value without that room.
func TestAppendInPlace(t *testing.T) {
	db, _ := newDB(t)
	slab := make([]byte, 0, 64)
	slab = append(slab, "block"...)
	value := slab[: len(slab) : len(slab)+SealRoom]
	err := db.Update(func(tx *Tx) error {
		first, err := tx.Append(Outbox, func(uint64) ([]byte, error) { return []byte("m"), nil })
		if err != nil {
			return err
		}
		seq, err := tx.AppendInPlace(Outbox, value)
		if err != nil {
			return err
		}
		if seq != first+1 {
			t.Errorf("AppendInPlace took sequence %d, want %d", seq, first+1)
		}
		if sum := slab[len(value) : len(value)+SealRoom]; bytes.Equal(sum, make([]byte, SealRoom)) {
			t.Error("no checksum in the room after the value")
		}
		if _, err := tx.AppendInPlace(Outbox, []byte("no room")[:7:7]); err == nil || !strings.Contains(err.Error(), "room") {
			t.Errorf("a value without room: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if got := string(tx.Get(Outbox, U64(2))); got != "block" {
			t.Errorf("read back %q, want %q", got, "block")
		}
		return nil
	})
}
