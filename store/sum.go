package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Record checksums (schema v7). A record whose value is free-form bytes
// (an execution record, a journal record, every record of an owner's
// collection: the outbox, keys, CRM and its write log, spans and their
// index, ...) can be damaged into other bytes its owner still decodes: a
// stored result that reads as another result. So each such value is
// stored sealed, followed by the CRC-32C (Castagnoli) of its key and its
// bytes, and every reader opens it, checking the sum, before its owner
// sees it. The key is summed too, so a record whose key was damaged into
// another key is not read as that key's.
//
// seal and open are the only codec of the sums: every put and get of a
// summed collection goes through them. Which collections are summed is
// summed's answer; the schema metadata is not (older builds must read its
// version to refuse a newer file), nor are the executions' creation order
// (its values are the keys of execution records, a damaged one names no
// record, or one listed twice, which check finds) and the histories, whose
// chunks carry a checksum of their own, in their codec (appendChunkSum,
// openChunk): a chunk of history_events, and a growing tail of
// history_tails after its first sequence number, is followed by the
// CRC-32C of its stored bytes. A v2 file's per-execution history buckets
// keep their events without sums.

// sumSize is the length of a sealed value's checksum.
const sumSize = 4

// castagnoli is CRC-32C's table: the polynomial with hardware support on
// amd64 and arm64, as iSCSI, ext4 and LevelDB use it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSum is why a summed record is damaged when its sum does not match.
var errSum = errors.New("its checksum does not match: its bytes are not those written")

// summed reports whether the values of the top-level collection name (and
// of the collections nested in it) are stored sealed in a file of schema
// v7 or later.
func summed(name Bucket) bool {
	switch name {
	case bucketMeta, bucketExecOrder, bucketHistories, bucketHistoryIDs, bucketHistoryEvents, bucketHistoryTails:
		return false
	}
	return true
}

// recordSum is the CRC-32C of a record's key and value.
func recordSum(key, value []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, key), castagnoli, value)
}

// seal returns value followed by the checksum of key and value, in a new
// slice: the stored form of a summed record.
func seal(key, value []byte) []byte {
	out := make([]byte, len(value)+sumSize)
	copy(out, value)
	binary.BigEndian.PutUint32(out[len(value):], recordSum(key, value))
	return out
}

// unseal returns a sealed record's value (a slice of stored, whose
// capacity ends where the value does) and whether its checksum matches.
func unseal(key, stored []byte) ([]byte, bool) {
	if len(stored) < sumSize {
		return nil, false
	}
	n := len(stored) - sumSize
	value := stored[:n:n]
	return value, binary.BigEndian.Uint32(stored[n:]) == recordSum(key, value)
}

// sums reports whether t's file stores summed collections sealed.
func (t *Tx) sums() bool { return t.db != nil && t.db.sums }

// seal is the stored form of value under key in the collection bucket:
// sealed when the file keeps sums and bucket is summed, else value itself.
// An empty value (nil too, which bbolt stores empty) is sealed as well: it
// is stored as its sum alone.
func (t *Tx) seal(bucket Bucket, key, value []byte) []byte {
	if !t.sums() || !summed(bucket) {
		return value
	}
	return seal(key, value)
}

// open is the value of the record stored under key (in bucket, inside the
// nested collections names, if any): stored without its checksum, or
// stored itself in a file without sums or a collection not summed. A
// record whose sum does not match is damage: open returns nil and false,
// marks the database damaged, and keeps the damage (see Tx.damage) so that
// the transaction fails with it even when its reader, given no error,
// goes on. stored nil (no record, or a nested collection) is nil and true.
func (t *Tx) open(bucket Bucket, names [][]byte, key, stored []byte) ([]byte, bool) {
	if stored == nil || !t.sums() || !summed(bucket) {
		return stored, true
	}
	value, ok := unseal(key, stored)
	if ok {
		return value, true
	}
	t.noteDamage(t.Damaged(bucket, names, key, errSum))
	return nil, false
}

// errNested is why a record is damaged when a collection stands where it
// belongs: an element's flags changed, which no checksum covers.
var errNested = errors.New("a nested collection stands where a record belongs")

// openScanned is open for a record a cursor met in the top-level
// collection bucket, which holds records only: v nil there (a nested
// collection) is damage too, kept as open keeps it, in a file with sums
// (an older file's collections are read as they always were).
func (t *Tx) openScanned(bucket Bucket, key, v []byte) ([]byte, bool) {
	if v == nil && t.sums() && summed(bucket) {
		t.noteDamage(t.Damaged(bucket, nil, key, errNested))
		return nil, false
	}
	return t.open(bucket, nil, key, v)
}

// noteDamage keeps a damaged record a read met and did not return as an
// error, the first of each record: the transaction that met it fails with
// the first (View, Update), unless its function failed with damage of its
// own, and check takes them all (TakeDamage).
func (t *Tx) noteDamage(err error) {
	var d *DamagedRecord
	if errors.As(err, &d) {
		for _, seen := range t.damage {
			var s *DamagedRecord
			if errors.As(seen, &s) && s.Bucket == d.Bucket && string(s.Key) == string(d.Key) && len(s.Names) == len(d.Names) {
				return
			}
		}
	}
	t.damage = append(t.damage, err)
}

// TakeDamage returns the damaged records t's reads met but did not return
// as errors (a record whose checksum does not match, read by Get, say,
// which returns no error: nil in its place) and forgets them, so that the
// transaction no longer fails with them. A reader that reports damage
// itself, as check does, takes them; any other transaction fails with the
// first.
func (t *Tx) TakeDamage() []error {
	d := t.damage
	t.damage = nil
	return d
}

// failWithDamage is the outcome of a transaction whose function returned
// err: the first damage its reads met and kept, unless err already says
// the file is damaged.
func (t *Tx) failWithDamage(err error) error {
	if len(t.damage) == 0 || errors.Is(err, ErrCorrupt) {
		return err
	}
	return t.damage[0]
}

// sumsSince is the first schema whose files store summed collections
// sealed.
const sumsSince = 7

// sealBatch bounds the records addSums holds at once.
const sealBatch = 4096

// addSums seals every value of the summed collections of a file older
// than v7, in tx: the records of each collection (and of the collections
// nested in it), a batch at a time, since a put moves a cursor.
func addSums(tx *bolt.Tx) error {
	var names [][]byte
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if summed(Bucket(name)) {
			names = append(names, clone(name))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, name := range names {
		if err := sealAll(tx.Bucket(name), 0); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return sumChunks(tx)
}

// sealAll seals every value of b and of the collections nested in it, b
// being depth collections deep.
func sealAll(b *bolt.Bucket, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("%w: collections nested more than %d deep", ErrCorrupt, maxNesting)
	}
	b.FillPercent = appendFill // rewritten in key order
	nested, err := rewriteValues(b, seal)
	if err != nil {
		return err
	}
	for _, name := range nested {
		if err := sealAll(b.Bucket(name), depth+1); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// rewriteValues puts what fn makes of each value of b in its place (fn
// returns nil to leave it as it is), sealBatch values at a time: a cursor
// must not walk over its own puts. It returns the keys of the collections
// nested in b.
func rewriteValues(b *bolt.Bucket, fn func(k, v []byte) []byte) (nested [][]byte, err error) {
	var after []byte
	for {
		var keys, values [][]byte
		c := b.Cursor()
		k, v := c.First()
		if after != nil {
			if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(keys) < sealBatch; k, v = c.Next() {
			if v == nil {
				nested = append(nested, clone(k))
				continue
			}
			if nv := fn(k, v); nv != nil {
				keys = append(keys, clone(k))
				values = append(values, nv)
			}
		}
		for i, k := range keys {
			if err := b.Put(k, values[i]); err != nil {
				return nil, err
			}
		}
		if k == nil {
			return nested, nil
		}
		if len(keys) > 0 {
			after = keys[len(keys)-1]
		}
	}
}

// appendChunkSum appends the checksum of out[from:], a stored chunk, to
// out.
func appendChunkSum(out []byte, from int) []byte {
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out[from:], castagnoli))
}

// openChunk is a stored chunk without its checksum (a slice of stored,
// whose capacity ends where the chunk does), or an error wrapping
// ErrCorrupt when the sum does not match.
func openChunk(stored []byte) ([]byte, error) {
	if len(stored) < sumSize {
		return nil, fmt.Errorf("%w: a history chunk of %d bytes, too short to hold its checksum", ErrCorrupt, len(stored))
	}
	n := len(stored) - sumSize
	if binary.BigEndian.Uint32(stored[n:]) != crc32.Checksum(stored[:n], castagnoli) {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, errSum)
	}
	return stored[:n:n], nil
}

// sumChunks appends its checksum to every chunk of history_events and
// every growing tail of history_tails (after its first sequence number),
// in tx: a file older than v7 raised to it.
func sumChunks(tx *bolt.Tx) error {
	for _, name := range []Bucket{bucketHistoryEvents, bucketHistoryTails} {
		b := tx.Bucket([]byte(name))
		if b == nil {
			continue
		}
		b.FillPercent = appendFill
		tails := name == bucketHistoryTails
		if _, err := rewriteValues(b, func(_, v []byte) []byte {
			head := 0
			if tails {
				if len(v) < 2 || len(v) < 2+int(v[0]) {
					return nil // damaged: read as such, with or without a sum
				}
				head = 1 + int(v[0])
			}
			return appendChunkSum(append(make([]byte, 0, len(v)+sumSize), v...), head)
		}); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
