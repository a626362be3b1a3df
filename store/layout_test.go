package store

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Sequence keys sort as their numbers do and decode to them.
func TestSeqKeysSortNumerically(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seqs := []uint64{0, 1, 255, 256, 257, 65535, 65536, 1 << 32, math.MaxUint64 - 1, math.MaxUint64}
	for range 2000 {
		seqs = append(seqs, r.Uint64()>>r.UintN(64))
	}
	for _, a := range seqs {
		ka := appendSeqKey(nil, a)
		if got, ok := decodeSeqKey(ka); !ok || got != a {
			t.Fatalf("decode(key(%d)) = %d, %v", a, got, ok)
		}
		b := seqs[r.IntN(len(seqs))]
		if got, want := bytes.Compare(ka, appendSeqKey(nil, b)), cmp.Compare(a, b); got != want {
			t.Fatalf("keys of %d and %d compare %d, numbers %d", a, b, got, want)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {2, 1}, {9, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 1}} {
		if _, ok := decodeSeqKey(bad); ok {
			t.Errorf("decodeSeqKey(%x) accepted", bad)
		}
	}
}

// Many short histories, written side by side as concurrent executions write
// them, share pages (a bucket per history took a page each), and each reads
// back whole and in order.
func TestShortHistoriesSharePages(t *testing.T) {
	db, _ := newDB(t)
	const execs, events = 600, 6
	for round := range events {
		err := db.Update(func(tx *Tx) error {
			for e := range execs {
				exec := fmt.Sprintf("exec_%04d", e)
				seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
					return payload(exec, seq, 60), nil
				})
				if err != nil {
					return err
				}
				if seq != uint64(round+1) {
					return fmt.Errorf("%s got seq %d in round %d", exec, seq, round)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := db.View(func(tx *Tx) error {
		for e := range execs {
			exec := fmt.Sprintf("exec_%04d", e)
			var got []uint64
			if err := tx.Events(exec, 0, func(seq uint64, data []byte) bool {
				if !bytes.Equal(data, payload(exec, seq, 60)) {
					t.Errorf("%s/%d holds %q", exec, seq, data[:12])
				}
				got = append(got, seq)
				return true
			}); err != nil {
				return err
			}
			if !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
				t.Fatalf("%s: events %v", exec, got)
			}
		}
		s := tx.tx.Bucket([]byte(bucketHistoryEvents)).Stats()
		// 3 600 events of 60 bytes and 6-byte keys: about 300 KB.
		if pages := s.LeafPageN + s.BranchPageN; pages > 150 {
			t.Errorf("%d short histories take %d pages", execs, pages)
		}
		if n := tx.tx.Bucket([]byte(bucketHistories)).Stats().BucketN; n != 1 {
			t.Errorf("%d per-execution history buckets were created", n-1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A file of schema v2 keeps each execution's history in a bucket of its own:
// it is read, appended to and deleted where it is, beside histories of the
// shared layout.
func TestV2HistoryBucketsStayReadable(t *testing.T) {
	db, path := newDB(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	editBolt(t, path, func(tx *bolt.Tx) error {
		h, err := tx.Bucket([]byte(bucketHistories)).CreateBucket([]byte("old"))
		if err != nil {
			return err
		}
		for seq := uint64(1); seq <= 3; seq++ {
			if _, err := h.NextSequence(); err != nil {
				return err
			}
			if err := h.Put(U64(seq), payload("old", seq, 40)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(2))
	})
	db = openDB(t, path, Options{})
	if seqs := appendEvents(t, db, "old", 2); !slices.Equal(seqs, []uint64{4, 5}) {
		t.Fatalf("appends to a v2 history got %v, want [4 5]", seqs)
	}
	if seqs := appendEvents(t, db, "new", 2); !slices.Equal(seqs, []uint64{1, 2}) {
		t.Fatalf("a new history got %v", seqs)
	}
	events := func(exec string) (seqs []uint64) {
		t.Helper()
		err := db.View(func(tx *Tx) error {
			return tx.Events(exec, 0, func(seq uint64, data []byte) bool {
				size := 32
				if exec == "old" && seq <= 3 {
					size = 40
				}
				if !bytes.Equal(data, payload(exec, seq, size)) {
					t.Errorf("%s/%d holds %q", exec, seq, data)
				}
				seqs = append(seqs, seq)
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	if got := events("old"); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("v2 history reads %v", got)
	}
	if got := tx1LastSeq(t, db, "old"); got != 5 {
		t.Fatalf("LastSeq(old) = %d", got)
	}
	err := db.View(func(tx *Tx) error {
		if n := tx.tx.Bucket([]byte(bucketHistories)).Bucket([]byte("old")).Stats().KeyN; n != 5 {
			t.Errorf("the v2 bucket holds %d events, want all 5", n)
		}
		if tx.tx.Bucket([]byte(bucketHistoryIDs)).Get([]byte("old")) != nil {
			t.Error("a v2 history was also given a number in the shared layout")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Deleting removes either layout; a history started again begins at 1.
	if err := db.Update(func(tx *Tx) error {
		if err := tx.DeleteExecution("old"); err != nil {
			return err
		}
		return tx.DeleteExecution("new")
	}); err != nil {
		t.Fatal(err)
	}
	if got := events("old"); got != nil {
		t.Fatalf("deleted v2 history reads %v", got)
	}
	if got := events("new"); got != nil {
		t.Fatalf("deleted history reads %v", got)
	}
	err = db.View(func(tx *Tx) error {
		if n := tx.tx.Bucket([]byte(bucketHistoryEvents)).Stats().KeyN; n != 0 {
			t.Errorf("%d events left after deleting every history", n)
		}
		if n := tx.tx.Bucket([]byte(bucketHistoryTails)).Stats().KeyN; n != 0 {
			t.Errorf("%d tails left after deleting every history", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seqs := appendEvents(t, db, "new", 1); !slices.Equal(seqs, []uint64{1}) {
		t.Fatalf("a history started again got %v", seqs)
	}
	if seqs := appendEvents(t, db, "old", 1); !slices.Equal(seqs, []uint64{1}) {
		t.Fatalf("a v2 history started again got %v", seqs)
	}
}

// Events are packed into chunks of up to chunkMax bytes; an event larger than
// that is a chunk of its own. Reading from any sequence number starts in the
// middle of the chunk that holds it.
func TestChunksHoldEventsOfAnySize(t *testing.T) {
	db, _ := newDB(t)
	sizes := []int{10, 0, 500, 3 * chunkMax, 7, 1, chunkMax, chunkMax - 2, 300, 300, 300, 300, 5000, 20}
	appendSized(t, db, "x", sizes...)
	err := db.View(func(tx *Tx) error {
		if got := tx.LastSeq("x"); got != uint64(len(sizes)) {
			t.Errorf("LastSeq = %d, want %d", got, len(sizes))
		}
		// EventsInPlace reads the same, each chunk into the same space.
		for _, read := range []func(string, uint64, func(uint64, []byte) bool) error{tx.Events, tx.EventsInPlace} {
			for from := range uint64(len(sizes) + 2) {
				var got []uint64
				if err := read("x", from, func(seq uint64, data []byte) bool {
					if want := payload("x", seq, sizes[seq-1]); !bytes.Equal(data, want) {
						t.Errorf("event %d: %d bytes, want %d", seq, len(data), len(want))
					}
					data = append(data, 'z') // must not reach the next event
					got = append(got, seq)
					return true
				}); err != nil {
					return err
				}
				if want := max(int(from), 1); len(got) != len(sizes)-want+1 || (len(got) > 0 && got[0] != uint64(want)) {
					t.Errorf("Events(from %d) = %v", from, got)
				}
			}
		}
		if n := tx.tx.Bucket([]byte(bucketHistoryEvents)).Stats().KeyN; n >= len(sizes) {
			t.Errorf("%d events in %d chunks: none were packed", len(sizes), n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Appends in one transaction extend the chunk it wrote last; deleting or
// clearing the histories in the same transaction starts them again.
func TestAppendsInOneTransaction(t *testing.T) {
	db, _ := newDB(t)
	appendIn := func(tx *Tx, exec string, n int) (last uint64) {
		for range n {
			seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
				return payload(exec, seq, 100), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			last = seq
		}
		return last
	}
	err := db.Update(func(tx *Tx) error {
		if got := appendIn(tx, "a", 30) + appendIn(tx, "b", 5) + appendIn(tx, "a", 3); got != 30+5+33 {
			t.Errorf("sequences interleaved wrongly: %d", got)
		}
		if err := tx.DeleteExecution("a"); err != nil {
			return err
		}
		if got := appendIn(tx, "a", 2); got != 2 {
			t.Errorf("after delete, a's last seq is %d, want 2", got)
		}
		if err := tx.ClearAll(); err != nil {
			return err
		}
		if got := appendIn(tx, "b", 1); got != 1 {
			t.Errorf("after ClearAll, b's last seq is %d, want 1", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, db, "b", 2)
	err = db.View(func(tx *Tx) error {
		var got []uint64
		if err := tx.Events("b", 0, func(seq uint64, data []byte) bool {
			got = append(got, seq)
			return true
		}); err != nil {
			return err
		}
		if !slices.Equal(got, []uint64{1, 2, 3}) || tx.LastSeq("a") != 0 {
			t.Errorf("b reads %v, a's last seq %d", got, tx.LastSeq("a"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Reading from inside the last chunk of the last history in the bucket, where
// a seek for the sequence runs past the bucket's end.
func TestEventsFromInsideTheLastChunk(t *testing.T) {
	db, _ := newDB(t)
	// Events of 3/10 of a chunk: chunks begin at 1, 4, 7 and 10.
	size := chunkMax * 3 / 10
	appendSized(t, db, "only", slices.Repeat([]int{size}, 11)...)
	err := db.View(func(tx *Tx) error {
		for from, want := range map[uint64][]uint64{11: {11}, 10: {10, 11}, 9: {9, 10, 11}, 12: nil} {
			var got []uint64
			if err := tx.Events("only", from, func(seq uint64, data []byte) bool {
				if !bytes.Equal(data, payload("only", seq, size)) {
					t.Errorf("event %d holds %q", seq, data[:12])
				}
				got = append(got, seq)
				return true
			}); err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				t.Errorf("Events(from %d) = %v, want %v", from, got, want)
			}
		}
		// 3 sealed chunks among the histories' chunks, the growing tail
		// in history_tails.
		sealed, tails := tx.tx.Bucket([]byte(bucketHistoryEvents)).Stats().KeyN, tx.tx.Bucket([]byte(bucketHistoryTails)).Stats().KeyN
		if sealed != 3 || tails != 1 {
			t.Errorf("11 events of %d bytes in %d sealed chunks and %d tails, want 3 and 1", size, sealed, tails)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// appendSized appends one event of each size to exec's history, in one
// transaction; each payload starts "exec:seq:".
func appendSized(t *testing.T, db *DB, exec string, sizes ...int) {
	t.Helper()
	err := db.Update(func(tx *Tx) error {
		for _, size := range sizes {
			if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
				return payload(exec, seq, size), nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// EventsInPlace reads histories one after another without a search from
// the root when the next is the one after the last read, and reads the
// same as Events in any order, from any event, stopped early or not, and
// for an execution with no history.
func TestEventsInPlaceInAnyOrder(t *testing.T) {
	db, _ := newDB(t)
	ids := []string{"m", "c", "x", "a", "q"} // numbered in this order, not sorted
	sizes := map[string][]int{"m": {10, 20}, "c": {chunkMax, chunkMax, 5}, "x": {7}, "a": slices.Repeat([]int{300}, 40), "q": {1, 2, 3}}
	for _, id := range ids {
		appendSized(t, db, id, sizes[id]...)
	}
	// a and x sealed: every chunk in history_events; the others' tails in
	// history_tails (m, x and q have no other chunk).
	if err := db.Update(func(tx *Tx) error { return errors.Join(tx.SealHistory("a"), tx.SealHistory("x")) }); err != nil {
		t.Fatal(err)
	}
	type read struct {
		id   string
		from uint64
		stop int // events read before fn answers false; 0 reads all
	}
	orders := [][]read{
		{{"m", 0, 0}, {"c", 0, 0}, {"x", 0, 0}, {"a", 0, 0}, {"q", 0, 0}},
		{{"q", 0, 0}, {"a", 0, 0}, {"x", 0, 0}, {"c", 0, 0}, {"m", 0, 0}},
		{{"m", 0, 1}, {"c", 0, 0}, {"none", 0, 0}, {"x", 0, 0}, {"x", 0, 0}, {"a", 5, 0}, {"q", 2, 0}, {"m", 2, 0}},
		{{"m", 0, 0}, {"c", 3, 0}, {"x", 1, 0}, {"a", 0, 2}, {"q", 0, 0}, {"m", 1, 0}},
	}
	collect := func(tx *Tx, inPlace bool, r read) string {
		var b strings.Builder
		n := 0
		err := tx.events(r.id, r.from, inPlace, func(seq uint64, data []byte) bool {
			fmt.Fprintf(&b, "%d:%x ", seq, sha256.Sum256(data))
			n++
			return r.stop == 0 || n < r.stop
		})
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return b.String()
	}
	err := db.View(func(tx *Tx) error {
		// After m, the cursor is on c's first chunk: c's read needs no seek.
		collect(tx, true, read{"m", 0, 0})
		if _, c, err := tx.historyPrefix("c", false); err != nil || !bytes.HasPrefix(tx.next.k, c) {
			t.Errorf("after m the cursor is on %x, not c's first chunk (%x, %v)", tx.next.k, c, err)
		}
		for _, order := range orders {
			for _, r := range order {
				want := collect(tx, false, r)
				if got := collect(tx, true, r); got != want {
					t.Errorf("%+v in %v: in place %s, want %s", r, order, got, want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
