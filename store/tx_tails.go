package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// tail is an execution's last chunk as this transaction wrote it: value
// holds its events, uncompressed; key is its key among the history's
// chunks (prefix, then its first sequence number). place says where it is
// stored: nowhere yet, in history_tails as a growing tail, or in
// history_events (a sealed chunk, or a v5 file's last chunk). unsealed
// says the store may hold it in another form than its sealed one (as a
// growing tail, see encodeTail; a last chunk read from history_events
// counts as unsealed, since a v5 file's growing tail and a sealed chunk
// look alike); sealed, that it is to be stored sealed (SealHistory).
type tail struct {
	prefix, key, value []byte
	last               uint64
	place              tailPlace
	dirty, dropped     bool
	unsealed, sealed   bool
}

// tailPlace is where a tail is stored.
type tailPlace uint8

const (
	storedNowhere  tailPlace = iota // a chunk begun in this transaction
	storedInTails                   // in history_tails, under its prefix
	storedInEvents                  // in history_events, under its key
)

// flushChunks writes the chunks this transaction appended to into the
// store: as growing tails, or sealed (see putChunk). DB.runUpdate calls it
// before every commit; the readers of histories call it first, so they
// see what the transaction appended.
func (t *Tx) flushChunks() error {
	if len(t.dirty) == 0 {
		return nil
	}
	for _, tl := range t.dirty {
		if err := t.putChunk(tl, tl.sealed); err != nil {
			return err
		}
	}
	t.dirty = t.dirty[:0]
	return nil
}

// putChunk stores tl's chunk if it changed since it was last stored, or if
// seal is set and it may be stored unsealed: sealed (encodeChunk) in
// history_events when seal is set, else as a growing tail (encodeTail) in
// history_tails; from either place it leaves the other. A chunk that did
// not change and is stored sealed already is not written again.
func (t *Tx) putChunk(tl *tail, seal bool) error {
	if tl.dropped || !tl.dirty && !(seal && tl.unsealed) {
		return nil
	}
	changed := tl.dirty
	tl.dirty = false
	events, err := t.bucket(bucketHistoryEvents)
	if err != nil {
		return err
	}
	tails, err := t.bucket(bucketHistoryTails)
	if err != nil {
		return err
	}
	events.FillPercent = appendFill
	if !seal {
		stored, err := encodeTailValue(&t.encoded, tl.key[len(tl.prefix):], tl.value, t.sums())
		if err != nil {
			return fmt.Errorf("write history chunk %x: %w", tl.key, err)
		}
		if tl.place == storedInEvents {
			if err := events.Delete(tl.key); err != nil {
				return fmt.Errorf("move history chunk %x: %w", tl.key, err)
			}
		}
		if err := tails.Put(tl.prefix, stored); err != nil {
			return fmt.Errorf("write history chunk %x: %w", tl.key, err)
		}
		tl.place, tl.unsealed = storedInTails, true
		return nil
	}
	// bbolt keeps the value it is given until the commit; tl.value, when it
	// is stored plain, is only ever appended to past that length.
	stored, err := encodeChunk(&t.encoded, tl.value, t.sums())
	if err != nil {
		return fmt.Errorf("write history chunk %x: %w", tl.key, err)
	}
	if tl.place == storedInTails {
		if err := tails.Delete(tl.prefix); err != nil {
			return fmt.Errorf("move history chunk %x: %w", tl.key, err)
		}
	}
	if changed || tl.place != storedInEvents || !bytes.Equal(events.Get(tl.key), stored) {
		if err := events.Put(tl.key, stored); err != nil {
			return fmt.Errorf("write history chunk %x: %w", tl.key, err)
		}
	}
	tl.place, tl.unsealed = storedInEvents, false
	return nil
}

// markDirty queues tl for flushChunks.
func (t *Tx) markDirty(tl *tail) {
	if !tl.dirty {
		tl.dirty = true
		t.dirty = append(t.dirty, tl)
	}
}

// lastChunk finds the last chunk of the history under prefix (see
// lastStored): its key, its plain events, the sequence of its last event,
// and where it is stored. key is nil when the history is empty. With buf
// nil, value is bbolt's memory for a plain chunk (only to be read); else
// value is a copy in buf's space when it fits.
func (t *Tx) lastChunk(events *bolt.Bucket, prefix, buf []byte) (key, value []byte, last uint64, place tailPlace, err error) {
	k, v, place, err := t.lastStored(events, prefix)
	if err != nil || k == nil {
		return nil, nil, 0, storedNowhere, err
	}
	first, ok := decodeSeqKey(k[len(prefix):])
	v, err = decodeChunkInto(buf, v, buf != nil, t.sums())
	if err != nil {
		return nil, nil, 0, storedNowhere, fmt.Errorf("history chunk %x: %w", k, err)
	}
	n := 0
	if ok {
		ok = chunkEvents(v, func([]byte) bool { n++; return true })
	}
	if !ok || n == 0 {
		return nil, nil, 0, storedNowhere, fmt.Errorf("history chunk %x: %w", k, ErrCorrupt)
	}
	return k, v, first + uint64(n) - 1, place, nil
}

// lastStored finds the last chunk of the history under prefix as stored:
// its tail in history_tails, else its last chunk in history_events. It
// returns the chunk's key (nil when the history has none), bbolt's memory
// for its stored bytes, and where it is.
func (t *Tx) lastStored(events *bolt.Bucket, prefix []byte) (key, value []byte, place tailPlace, err error) {
	if k, _, v, err := t.storedTail(prefix); err != nil || k != nil {
		return k, v, storedInTails, err
	}
	if k, v := lastEventsChunk(events, prefix); k != nil {
		return k, v, storedInEvents, nil
	}
	return nil, nil, storedNowhere, nil
}

// lastEventsChunk finds the last chunk under prefix in history_events as
// stored: its key (nil when there is none) and bbolt's memory for its
// value.
func lastEventsChunk(events *bolt.Bucket, prefix []byte) (key, value []byte) {
	c := events.Cursor()
	// 0xff sorts after every length byte, so Seek lands just past prefix's keys.
	k, v := c.Seek(append(clone(prefix), 0xff))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil
	}
	return k, v
}

// storedTail finds the growing tail of the history under prefix in
// history_tails: its key among the history's chunks (prefix, then its
// first sequence number; a new slice), that first sequence number, and
// bbolt's memory for the chunk as stored. key is nil when the history has
// no tail there (or the file no history_tails: a v5 file opened
// read-only).
func (t *Tx) storedTail(prefix []byte) (key []byte, first uint64, stored []byte, err error) {
	b := t.root(bucketHistoryTails)
	if b == nil {
		return nil, 0, nil, nil
	}
	v := t.lookup(b, prefix)
	if v == nil {
		return nil, 0, nil, nil
	}
	if len(v) < 2 {
		return nil, 0, nil, fmt.Errorf("history tail %x: %w", prefix, ErrCorrupt)
	}
	n := 1 + int(v[0])
	if len(v) < n+1 {
		return nil, 0, nil, fmt.Errorf("history tail %x: %w", prefix, ErrCorrupt)
	}
	first, ok := decodeSeqKey(v[:n])
	if !ok {
		return nil, 0, nil, fmt.Errorf("history tail %x: %w", prefix, ErrCorrupt)
	}
	key = append(append(make([]byte, 0, len(prefix)+n), prefix...), v[:n]...)
	return key, first, v[n:], nil
}

// keptTail takes exec's tail as the last committed transaction that
// appended to it left it (DB.tails), or returns nil. The transaction owns
// it from then on: should it roll back, the next append reads the chunk
// from the bucket again.
func (t *Tx) keptTail(exec string) *tail {
	tl := t.db.tails[exec]
	if tl == nil {
		return nil
	}
	delete(t.db.tails, exec)
	if t.tails == nil {
		t.tails = make(map[string]*tail)
	}
	t.tails[exec] = tl
	return tl
}

// loadTail reads exec's last chunk (under prefix: its tail in
// history_tails, else its last chunk in events) into a tail of this
// transaction's.
func (t *Tx) loadTail(events *bolt.Bucket, exec string, prefix []byte) (*tail, error) {
	// The chunk's events go straight into the tail's space (a chunk's plain
	// bytes fit in chunkMax unless one event is larger).
	key, chunk, last, place, err := t.lastChunk(events, prefix, make([]byte, 0, chunkMax))
	if err != nil {
		return nil, err
	}
	tl := &tail{prefix: prefix, last: last}
	if key != nil {
		tl.key = clone(key)
		tl.value = chunk
		tl.place, tl.unsealed = place, true
	}
	if t.tails == nil {
		t.tails = make(map[string]*tail)
	}
	t.tails[exec] = tl
	return tl, nil
}

// SealHistory stores exec's last chunk sealed (see encodeChunk): its
// execution is finished and its history is not expected to grow. An append
// after it is still correct (the chunk is stored as a growing tail again
// until the next seal). A history with no events, or of the v2 layout, is
// left as it is. The chunk moves from history_tails to history_events. A
// tail this transaction or the last commit appended to is sealed at once;
// another is read and compressed again (a v5 file's last chunk may be a
// growing tail), and written only if that changes it.
func (t *Tx) SealHistory(exec string) error {
	if !t.tx.Writable() {
		return fmt.Errorf("seal history %s: %w", exec, bolt.ErrTxNotWritable)
	}
	tl := t.tails[exec]
	if tl == nil {
		tl = t.keptTail(exec)
	}
	if tl == nil {
		if old, err := t.oldHistory(exec); err != nil || old != nil {
			return err
		}
		events, prefix, err := t.historyPrefix(exec, false)
		if err != nil || prefix == nil {
			return err
		}
		if tl, err = t.loadTail(events, exec, prefix); err != nil {
			return fmt.Errorf("seal history %s: %w", exec, err)
		}
	}
	tl.sealed = true
	if tl.key == nil || tl.dirty {
		return nil // flushChunks stores it sealed before the commit
	}
	if err := t.putChunk(tl, true); err != nil {
		return fmt.Errorf("seal history %s: %w", exec, err)
	}
	return nil
}

// HistorySealed reports whether exec's last chunk is stored sealed (as
// SealHistory leaves it): true for a history with no events or of the v2
// layout, false for a growing tail. It reads and compresses the chunk
// again: a question for checks and tests, not for every append.
func (t *Tx) HistorySealed(exec string) (bool, error) {
	if tl := t.tails[exec]; tl != nil && tl.dirty {
		return tl.sealed, nil
	}
	if old, err := t.oldHistory(exec); err != nil || old != nil {
		return err == nil, err
	}
	events, prefix, err := t.historyPrefix(exec, false)
	if err != nil || prefix == nil {
		return err == nil, err
	}
	k, v, place, err := t.lastStored(events, prefix)
	if err != nil {
		return false, fmt.Errorf("history of %s: %w", exec, err)
	}
	if k == nil {
		return true, nil
	}
	if place == storedInTails {
		return false, nil // a growing tail
	}
	sealed, err := sealChunk(&t.encoded, v, t.sums())
	if err != nil {
		return false, fmt.Errorf("history chunk %x of %s: %w", k, exec, err)
	}
	return bytes.Equal(sealed, v), nil
}
