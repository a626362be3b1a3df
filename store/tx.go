package store

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Tx is a transaction handed to View and Update. Getters return copies, so
// values stay valid after the transaction ends.
type Tx struct {
	tx *bolt.Tx
	db *DB
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
	if b := t.tx.Bucket([]byte(name)); b != nil || !create {
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

func (t *Tx) bucket(name Bucket) (*bolt.Bucket, error) {
	b := t.tx.Bucket([]byte(name))
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

// --- executions -------------------------------------------------------------

// PutExecution stores an execution's record. The first put also gives the
// execution its place in creation order.
func (t *Tx) PutExecution(exec string, record []byte) error {
	if exec == "" {
		return fmt.Errorf("put execution: empty id")
	}
	execs, err := t.bucket(bucketExecutions)
	if err != nil {
		return err
	}
	if execs.Get([]byte(exec)) == nil {
		order, err := t.bucket(bucketExecOrder)
		if err != nil {
			return err
		}
		n, err := order.NextSequence()
		if err != nil {
			return err
		}
		if err := order.Put(U64(n), []byte(exec)); err != nil {
			return err
		}
		if err := t.addExecutionCount(1); err != nil {
			return err
		}
	}
	if err := execs.Put([]byte(exec), record); err != nil {
		return err
	}
	if w := t.watcher(); w != nil {
		rec := clone(record)
		t.tx.OnCommit(func() { w.ExecutionPut(exec, rec) })
	}
	return nil
}

// Execution returns an execution's record, or nil if it does not exist.
func (t *Tx) Execution(exec string) []byte {
	b, err := t.bucket(bucketExecutions)
	if err != nil {
		return nil
	}
	return clone(b.Get([]byte(exec)))
}

// ExecutionCount is the number of executions, read from a counter rather
// than by walking the collection.
func (t *Tx) ExecutionCount() int {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return 0
	}
	return int(DecodeU64(b.Get([]byte("exec_count"))))
}

func (t *Tx) addExecutionCount(delta int) error {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	n := int(DecodeU64(b.Get([]byte("exec_count")))) + delta
	if n < 0 {
		n = 0
	}
	return b.Put([]byte("exec_count"), U64(uint64(n)))
}

// Executions calls fn for executions in creation order, newest first when
// newestFirst is set, skipping the first skip. It stops when fn returns false.
// The cost is proportional to the number visited, not to the total (nor
// to skip, unless executions were deleted since the last ClearAll).
func (t *Tx) Executions(newestFirst bool, skip int, fn func(id string, record []byte) bool) error {
	order, err := t.bucket(bucketExecOrder)
	if err != nil {
		return err
	}
	execs, err := t.bucket(bucketExecutions)
	if err != nil {
		return err
	}
	c := order.Cursor()
	k, v := c.First()
	step := c.Next
	if newestFirst {
		k, v = c.Last()
		step = c.Prev
	}
	if skip > 0 && k != nil {
		// Positions are numbered 1, 2, ... in creation order; while none
		// is missing (no execution deleted since the last clear), the
		// position skip away is found by a seek, not by stepping to it.
		first, _ := c.First()
		last, _ := c.Last()
		lo, hi := DecodeU64(first), DecodeU64(last)
		if hi-lo+1 == uint64(t.ExecutionCount()) {
			if uint64(skip) > hi-lo {
				return nil
			}
			target := lo + uint64(skip)
			if newestFirst {
				target = hi - uint64(skip)
			}
			k, v = c.Seek(U64(target))
			skip = 0
		} else {
			k, v = c.First()
			if newestFirst {
				k, v = c.Last()
			}
		}
	}
	for ; k != nil; k, v = step() {
		if skip > 0 {
			skip--
			continue
		}
		if !fn(string(v), clone(execs.Get(v))) {
			return nil
		}
	}
	return nil
}

// ExecutionOrder calls fn with every execution's id in creation order,
// oldest first, until fn returns false. id is valid only during the call.
func (t *Tx) ExecutionOrder(fn func(id []byte) bool) error {
	order, err := t.bucket(bucketExecOrder)
	if err != nil {
		return err
	}
	c := order.Cursor()
	for k, v := c.First(); k != nil && fn(v); k, v = c.Next() {
	}
	return nil
}

// ExecutionRecords calls fn with every execution's id and record in the
// order the store keeps them (by id: one sequential read, the cheapest way
// to read them all), until fn returns false. Both are valid only during
// the call.
func (t *Tx) ExecutionRecords(fn func(id, record []byte) bool) error {
	execs, err := t.bucket(bucketExecutions)
	if err != nil {
		return err
	}
	c := execs.Cursor()
	for k, v := c.First(); k != nil && fn(k, v); k, v = c.Next() {
	}
	return nil
}

// --- histories ----------------------------------------------------------

// AppendEvent appends an event to an execution's history and returns its
// sequence number, starting at 1. encode receives the sequence number so the
// stored bytes can carry it.
func (t *Tx) AppendEvent(exec string, encode func(seq uint64) ([]byte, error)) (uint64, error) {
	b, err := t.nested(bucketHistories, exec, true)
	if err != nil {
		return 0, err
	}
	b.FillPercent = appendFill
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	data, err := encode(seq)
	if err != nil {
		return 0, fmt.Errorf("encode event %s/%d: %w", exec, seq, err)
	}
	if err := b.Put(U64(seq), data); err != nil {
		return 0, fmt.Errorf("append %s/%d: %w", exec, seq, err)
	}
	return seq, nil
}

// LastSeq is the highest sequence number in an execution's history.
func (t *Tx) LastSeq(exec string) uint64 {
	b, _ := t.nested(bucketHistories, exec, false)
	if b == nil {
		return 0
	}
	k, _ := b.Cursor().Last()
	return DecodeU64(k)
}

// Events calls fn for an execution's events with seq >= from, in order, until
// fn returns false.
func (t *Tx) Events(exec string, from uint64, fn func(seq uint64, data []byte) bool) error {
	b, err := t.nested(bucketHistories, exec, false)
	if err != nil || b == nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.Seek(U64(from)); k != nil; k, v = c.Next() {
		if !fn(DecodeU64(k), clone(v)) {
			return nil
		}
	}
	return nil
}

// DeleteExecution removes an execution, its history and its journal.
func (t *Tx) DeleteExecution(exec string) error {
	for _, parent := range []Bucket{bucketHistories, bucketJournals} {
		p, err := t.bucket(parent)
		if err != nil {
			return err
		}
		if p.Bucket([]byte(exec)) != nil {
			if err := p.DeleteBucket([]byte(exec)); err != nil {
				return err
			}
		}
	}
	order, err := t.bucket(bucketExecOrder)
	if err != nil {
		return err
	}
	c := order.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Equal(v, []byte(exec)) {
			if err := c.Delete(); err != nil {
				return err
			}
			break
		}
	}
	if err := t.Delete(Active, []byte(exec)); err != nil {
		return err
	}
	execs, err := t.bucket(bucketExecutions)
	if err != nil {
		return err
	}
	if execs.Get([]byte(exec)) == nil {
		return nil
	}
	if err := t.addExecutionCount(-1); err != nil {
		return err
	}
	if err := execs.Delete([]byte(exec)); err != nil {
		return err
	}
	if w := t.watcher(); w != nil {
		t.tx.OnCommit(func() { w.ExecutionDeleted(exec) })
	}
	return nil
}

// --- metadata -----------------------------------------------------------

// Meta reads a value the layers above keep about the database itself (which
// indexes are built, say), or nil. ClearAll keeps these.
func (t *Tx) Meta(key string) []byte {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return nil
	}
	return clone(b.Get([]byte("x:" + key)))
}

// SetMeta stores a value about the database itself.
func (t *Tx) SetMeta(key string, value []byte) error {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	return b.Put([]byte("x:"+key), value)
}

// --- journal ------------------------------------------------------------

// PutJournal records a step's result for an execution.
func (t *Tx) PutJournal(exec, step string, record []byte) error {
	b, err := t.nested(bucketJournals, exec, true)
	if err != nil {
		return err
	}
	return b.Put([]byte(step), record)
}

// Journal returns a step's recorded result, or nil.
func (t *Tx) Journal(exec, step string) []byte {
	b, _ := t.nested(bucketJournals, exec, false)
	if b == nil {
		return nil
	}
	return clone(b.Get([]byte(step)))
}

// DeleteJournal removes a step's record and reports whether there was one.
func (t *Tx) DeleteJournal(exec, step string) (bool, error) {
	b, err := t.nested(bucketJournals, exec, false)
	if err != nil || b == nil {
		return false, err
	}
	if b.Get([]byte(step)) == nil {
		return false, nil
	}
	return true, b.Delete([]byte(step))
}

// JournalEntries calls fn for every journal record of every execution, in
// execution id then step order.
func (t *Tx) JournalEntries(fn func(exec, step string, record []byte) bool) error {
	return t.JournalEntriesAfter("", "", fn)
}

// JournalEntriesAfter is JournalEntries from the record after (exec, step)
// on, so a reader can page through every journal: ("", "") starts at the
// first.
func (t *Tx) JournalEntriesAfter(exec, step string, fn func(exec, step string, record []byte) bool) error {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	pc := p.Cursor()
	for e, v := pc.Seek([]byte(exec)); e != nil; e, v = pc.Next() {
		if v != nil {
			continue // not a nested bucket
		}
		c := p.Bucket(e).Cursor()
		k, v := c.First()
		if string(e) == exec && exec != "" {
			for k, v = c.Seek([]byte(step)); k != nil && string(k) == step; k, v = c.Next() {
			}
		}
		for ; k != nil; k, v = c.Next() {
			if !fn(string(e), string(k), clone(v)) {
				return nil
			}
		}
	}
	return nil
}

// --- plain collections ----------------------------------------------------

// Get returns the value under key in a collection, or nil.
func (t *Tx) Get(name Bucket, key []byte) []byte {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return nil
	}
	return clone(b.Get(key))
}

// Put stores value under key in a collection.
func (t *Tx) Put(name Bucket, key, value []byte) error {
	b, err := t.owned(name, true)
	if err != nil {
		return err
	}
	if b == nil {
		return bolt.ErrTxNotWritable
	}
	return b.Put(key, value)
}

// Delete removes key from a collection.
func (t *Tx) Delete(name Bucket, key []byte) error {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return err
	}
	return b.Delete(key)
}

// Append stores value under the collection's next sequence number.
func (t *Tx) Append(name Bucket, encode func(seq uint64) ([]byte, error)) (uint64, error) {
	b, err := t.owned(name, true)
	if err != nil {
		return 0, err
	}
	if b == nil {
		return 0, bolt.ErrTxNotWritable
	}
	b.FillPercent = appendFill
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	data, err := encode(seq)
	if err != nil {
		return 0, err
	}
	return seq, b.Put(U64(seq), data)
}

// Scan calls fn for a collection's entries with key >= from (all when from is
// nil), in key order, until fn returns false. With reverse it walks from the
// last key down and from is ignored.
func (t *Tx) Scan(name Bucket, from []byte, reverse bool, fn func(key, value []byte) bool) error {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return err
	}
	c := b.Cursor()
	var k, v []byte
	next := c.Next
	switch {
	case reverse:
		k, v = c.Last()
		next = c.Prev
	case from == nil:
		k, v = c.First()
	default:
		k, v = c.Seek(from)
	}
	for ; k != nil; k, v = next() {
		if !fn(clone(k), clone(v)) {
			return nil
		}
	}
	return nil
}

// Sequence is the last sequence number Append gave out in a collection
// (0 when it never did, or since Clear). For a collection written only by
// Append and never deleted from, it is the number of entries, read in
// constant time where Count walks every page.
func (t *Tx) Sequence(name Bucket) uint64 {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return 0
	}
	return b.Sequence()
}

// Count is the number of entries in a collection. It walks the collection's
// pages, so it costs time in proportion to its size.
func (t *Tx) Count(name Bucket) int {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return 0
	}
	return b.Stats().KeyN
}

// Clear empties the given collections.
func (t *Tx) Clear(names ...Bucket) error {
	for _, name := range names {
		if err := t.tx.DeleteBucket([]byte(name)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return fmt.Errorf("clear %s: %w", name, err)
		}
		if _, err := t.tx.CreateBucket([]byte(name)); err != nil {
			return fmt.Errorf("clear %s: %w", name, err)
		}
	}
	return nil
}

// ClearAll empties everything but the schema metadata.
func (t *Tx) ClearAll() error {
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Delete([]byte("exec_count")); err != nil {
		return err
	}
	// Every collection but the metadata, the store's own and its owners'.
	var names []Bucket
	if err := t.tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if Bucket(name) != bucketMeta {
			names = append(names, Bucket(name))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := t.Clear(names...); err != nil {
		return err
	}
	if w := t.watcher(); w != nil {
		t.tx.OnCommit(w.ExecutionsCleared)
	}
	return nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}
