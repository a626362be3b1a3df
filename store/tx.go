package store

import (
	"bytes"
	_ "embed"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Tx is a transaction handed to View and Update, for the goroutine it was
// handed to. Getters return copies, so values stay valid after the
// transaction ends.
type Tx struct {
	tx *bolt.Tx
	db *DB
	// roots are the top-level collections a read-only transaction opened
	// (nil for one that is absent), so a lookup per execution does not
	// open its collection each time: bbolt keeps them only for a writable
	// one, where a collection may come and go.
	roots map[Bucket]*bolt.Bucket
	// cursors are lookup's, one per collection: bbolt's Get makes a
	// cursor, and grows its path, on every call.
	cursors map[*bolt.Bucket]*keptCursor
	// tails are the last chunks this transaction wrote, by execution, as
	// plain events, so the next append to the same history extends them
	// instead of finding, decompressing and re-parsing the chunk; the
	// first append takes the tail the last commit left in DB.tails, when
	// there is one, and a commit leaves them there for the next. dirty are
	// those not yet written into the store, in the order they were first
	// appended to: flushChunks writes them before the commit (and before a
	// read of histories in the same transaction), as growing tails in
	// history_tails unless sealed.
	tails map[string]*tail
	dirty []*tail
	// encoded is encodeChunk's and encodeTail's scratch space, reused from
	// chunk to chunk.
	encoded []byte
	// cur is the execution ExecutionsInOrder is calling its fn for.
	cur current
	// plain is EventsInPlace's space for a decompressed chunk.
	plain []byte
	// next is EventsInPlace's cursor on history_events, and the key and
	// value it is on when its last read ended past a history (k nil when
	// unknown): the next history's first chunk, when they are read in
	// the order of their numbers.
	next chunkCursor
	// damage are the damaged records reads met without returning them as
	// errors (see Tx.open).
	damage []error
}

// watcher is the store's execution watcher, or nil (none, or a read-only
// transaction). What it is told is registered with bbolt's OnCommit, so a
// rolled-back change is never told.
func (t *Tx) watcher() ExecutionWatcher {
	if t.db == nil || !t.tx.Writable() {
		return nil
	}
	return t.db.executionWatcher()
}

// appendFill is the fill percent of buckets written in key order (histories
// and sequence-keyed collections). bbolt splits pages at half full by default,
// which leaves every page of an append-only bucket half empty; nearly full
// pages make such files about half the size and their scans touch half the
// pages.
const appendFill = 0.95

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// owned returns a collection of another package: nil (read as empty) while
// it was never written, created when create is set and the transaction is
// writable.
func (t *Tx) owned(name Bucket, create bool) (*bolt.Bucket, error) {
	if b := t.root(name); b != nil || !create {
		return b, nil
	}
	if !t.tx.Writable() {
		return nil, nil
	}
	b, err := t.tx.CreateBucket([]byte(name))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return b, nil
}

// root opens the top-level collection name, nil when it is absent.
func (t *Tx) root(name Bucket) *bolt.Bucket {
	if t.tx.Writable() {
		return t.tx.Bucket([]byte(name))
	}
	if b, ok := t.roots[name]; ok {
		return b
	}
	b := t.tx.Bucket([]byte(name))
	if t.roots == nil {
		t.roots = make(map[Bucket]*bolt.Bucket, 8)
	}
	t.roots[name] = b
	return b
}

// lookup is b.Get(key): the value under key in b, nil when there is none
// or it is a nested collection. A transaction seeks with a cursor it
// keeps for b, so a lookup per execution allocates nothing (bbolt's Get
// makes a cursor, and grows its path, on every call). A writable one
// seeks from the root each time, as Get does: its puts and deletes change
// the nodes under the cursor's path.
func (t *Tx) lookup(b *bolt.Bucket, key []byte) []byte {
	var k, v []byte
	if t.tx.Writable() {
		k, v = t.kept(b).c.Seek(key)
	} else {
		k, v = t.seek(b, key)
	}
	// v is nil for a nested collection, as Get's.
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// kept is the cursor the transaction keeps for b.
func (t *Tx) kept(b *bolt.Bucket) *keptCursor {
	kc := t.cursors[b]
	if kc == nil {
		if t.cursors == nil {
			t.cursors = make(map[*bolt.Bucket]*keptCursor, 8)
		}
		kc = &keptCursor{c: b.Cursor()}
		t.cursors[b] = kc
	}
	return kc
}

// keptCursor is a cursor a transaction keeps for one collection, and,
// in a read-only transaction, the key it is on (nil when past the end or
// not yet moved).
type keptCursor struct {
	c  *bolt.Cursor
	at []byte
}

// seek seeks key in b, of a read-only transaction, with the cursor the
// transaction keeps for b: the first key at or after key, and its value.
// A key past the one the cursor is on is first looked for one step
// further, which is where it is when keys are looked up in the order they
// were written (check reads an execution's ledger entries so): then bbolt
// does not search from the root.
func (t *Tx) seek(b *bolt.Bucket, key []byte) ([]byte, []byte) {
	kc := t.kept(b)
	if kc.at != nil && bytes.Compare(key, kc.at) > 0 {
		// No key lies between the cursor's and the next: when the next is
		// at or after key, it is the one Seek would find (nil: none is).
		if k, v := kc.c.Next(); k == nil || bytes.Compare(k, key) >= 0 {
			kc.at = k
			return k, v
		}
	}
	k, v := kc.c.Seek(key)
	kc.at = k
	return k, v
}

func (t *Tx) bucket(name Bucket) (*bolt.Bucket, error) {
	b := t.root(name)
	if b == nil {
		return nil, fmt.Errorf("bucket %s: %w", name, ErrCorrupt)
	}
	return b, nil
}

// nested returns the per-execution bucket under parent, creating it when
// create is set and the transaction is writable. It returns nil if absent.
func (t *Tx) nested(parent Bucket, exec string, create bool) (*bolt.Bucket, error) {
	p, err := t.bucket(parent)
	if err != nil {
		return nil, err
	}
	if b := p.Bucket([]byte(exec)); b != nil || !create {
		return b, nil
	}
	b, err := p.CreateBucket([]byte(exec))
	if err != nil {
		return nil, fmt.Errorf("create %s/%s: %w", parent, exec, err)
	}
	return b, nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}
