package store

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// heard records what an ExecutionWatcher is told.
type heard struct {
	mu  sync.Mutex
	log []string
}

func (h *heard) add(s string) { h.mu.Lock(); h.log = append(h.log, s); h.mu.Unlock() }
func (h *heard) ExecutionPut(id string, record []byte) {
	h.add("put " + id + " " + string(record))
}
func (h *heard) ExecutionDeleted(id string) { h.add("delete " + id) }
func (h *heard) ExecutionsCleared()         { h.add("clear") }

// TestWatchExecutions: the watcher hears committed puts, deletions and
// clears in commit order, never a change rolled back, and nothing once it
// is removed.
func TestWatchExecutions(t *testing.T) {
	db, _ := newDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Update(func(tx *Tx) error { return tx.PutExecution("before", []byte("0")) }))
	w := &heard{}
	db.WatchExecutions(w)
	must(db.Update(func(tx *Tx) error { return tx.PutExecution("a", []byte("1")) }))
	must(db.Update(func(tx *Tx) error {
		buf := []byte("2")
		if err := tx.PutExecution("a", buf); err != nil {
			return err
		}
		buf[0] = 'X' // the caller's bytes may change after the put
		return tx.PutExecution("b", []byte("3"))
	}))
	boom := errors.New("boom")
	if err := db.Update(func(tx *Tx) error {
		if err := tx.PutExecution("rolled-back", []byte("4")); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("update: %v", err)
	}
	must(db.Update(func(tx *Tx) error { return tx.DeleteExecution("a") }))
	must(db.View(func(tx *Tx) error { return nil }))
	must(db.Update(func(tx *Tx) error { return tx.ClearAll() }))
	db.WatchExecutions(nil)
	must(db.Update(func(tx *Tx) error { return tx.PutExecution("after", []byte("5")) }))

	want := []string{"put a 1", "put a 2", "put b 3", "delete a", "clear"}
	if !slices.Equal(w.log, want) {
		t.Fatalf("heard %q, want %q", w.log, want)
	}
}
