package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// --- plain collections ----------------------------------------------------

// Get returns the value under key in a collection, or nil.
func (t *Tx) Get(name Bucket, key []byte) []byte {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return nil
	}
	v, _ := t.open(name, nil, key, t.lookup(b, key))
	return clone(v)
}

// GetInPlace is Get without the copy: the value is valid only until the
// transaction writes or ends, and must not be changed.
func (t *Tx) GetInPlace(name Bucket, key []byte) []byte {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return nil
	}
	v, _ := t.open(name, nil, key, t.lookup(b, key))
	return v
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
	return b.Put(key, t.seal(name, key, value))
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
	b, seq, err := t.nextSequence(name)
	if err != nil {
		return 0, err
	}
	data, err := encode(seq)
	if err != nil {
		return 0, err
	}
	key := U64(seq)
	return seq, b.Put(key, t.seal(name, key, data))
}

// nextSequence is the collection an append goes to, made ready for puts
// in sequence order, and the sequence the append takes.
func (t *Tx) nextSequence(name Bucket) (*bolt.Bucket, uint64, error) {
	b, err := t.owned(name, true)
	if err != nil {
		return nil, 0, err
	}
	if b == nil {
		return nil, 0, bolt.ErrTxNotWritable
	}
	b.FillPercent = appendFill
	seq, err := b.NextSequence()
	return b, seq, err
}

// SealRoom is the spare capacity a value given to AppendInPlace needs.
const SealRoom = sumSize

// AppendInPlace is Append of a value the caller gives up until the
// transaction is over, with SealRoom bytes of spare capacity after it,
// which it may take for the value's checksum instead of copying the value
// (a large value appended often: a block of spans).
func (t *Tx) AppendInPlace(name Bucket, value []byte) (uint64, error) {
	if cap(value)-len(value) < SealRoom {
		return 0, fmt.Errorf("append to %s: a value with %d bytes of room, not %d", name, cap(value)-len(value), SealRoom)
	}
	b, seq, err := t.nextSequence(name)
	if err != nil {
		return 0, err
	}
	key := U64(seq)
	if t.sums() && summed(name) {
		value = binary.BigEndian.AppendUint32(value, recordSum(key, value))
	}
	return seq, b.Put(key, value)
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
		// A damaged record is skipped here and fails the transaction
		// (see Tx.open, Tx.openScanned).
		v, ok := t.openScanned(name, k, v)
		if !ok {
			continue
		}
		if !fn(clone(k), clone(v)) {
			return nil
		}
	}
	return nil
}

// HasPrefix reports whether a collection holds a key that starts with
// prefix (any key, for an empty prefix), reading no value: one seek with
// the cursor the transaction keeps for the collection, not a Scan's
// cursor and copies.
func (t *Tx) HasPrefix(name Bucket, prefix []byte) bool {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return false
	}
	var k []byte
	if t.tx.Writable() {
		k, _ = t.kept(b).c.Seek(prefix)
	} else {
		k, _ = t.seek(b, prefix)
	}
	return k != nil && bytes.HasPrefix(k, prefix)
}

// ScanInPlace calls fn with every key and value of a collection in key
// order until fn returns false, as Scan(name, nil, false, fn) does,
// without copying them: both are valid only during the call (a reader
// that decodes each entry into values of its own, as check reads the
// ledgers, need not copy a million of them first).
func (t *Tx) ScanInPlace(name Bucket, fn func(key, value []byte) bool) error {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v, ok := t.openScanned(name, k, v); ok && !fn(k, v) {
			break
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
	// Histories appended to in this transaction are stored first: the
	// buckets cleared may be others.
	if err := t.flushChunks(); err != nil {
		return err
	}
	t.tails = nil
	clear(t.db.tails)
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
