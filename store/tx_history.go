package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	bolt "go.etcd.io/bbolt"
)

// --- histories ----------------------------------------------------------

// Histories are stored in two layouts, and read in both.
//
// Schema v3 keeps every execution's events in one bucket, history_events,
// keyed by the execution's 4-byte number (history_ids: execution id ->
// number, given out in order) and then a sequence number as a length byte
// and that many big-endian bytes, so keys sort by execution and then
// numerically. Events are stored in chunks: a key names the first event of
// its chunk, and the chunk holds consecutive events, each as a uvarint
// length and its bytes, up to chunkMax bytes (an event larger than that is a
// chunk of its own). An append extends the execution's last chunk or starts
// the next. The short histories of many executions share a page, and an
// event costs about one byte beside its own instead of bbolt's 16-byte
// element header and an 8-byte key.
//
// Since schema v5 a chunk is stored compressed (see encodeChunk): a 0 byte,
// then an S2 block (github.com/klauspost/compress/s2: the uvarint length of
// the plain chunk, then LZ77 copies and literals, no entropy coding) made
// with chunkdict.bin as its preset dictionary. The events of one call
// repeat each other (every attempt carries the call's tool, key and request
// body) and those of every history repeat the dictionary, so a chunk takes
// 30-33% of its plain size (the gen mix, the million attempts). Chunks of
// v3 and v4 files are plain (their first byte is the nonzero length of
// their first event) and are read as they are.
//
// A history's last chunk, the one appends extend (its tail), is stored by
// S2's fast encoder while it grows (encodeTail): compressing it again with
// EncodeBetter on every commit cost each writer of a group commit about
// 7 µs inside the transaction they all wait for, and storing it plain
// made every commit write more pages. It is sealed (compressed by
// encodeChunk) once, when it is full (the next chunk starts) or when its
// execution is finished (SealHistory, which engine/history.Put calls for a
// finished execution's record and `retrylab gen` for every execution it
// writes). A tail left unsealed (a run killed with its host and never
// resumed) reads as it is, and DB.CompactAndClose seals it. Both forms are
// S2 blocks with the same dictionary.
//
// Since schema v6 a growing tail is not stored among its history's chunks
// but in history_tails, under the history's 4-byte number: its first
// sequence number as in a chunk's key (a length byte and that many bytes),
// then the chunk as stored. Sealed, it moves to history_events under its
// key, in the same transaction. The tails of the executions running at
// once thus lie together on a few pages: a group commit of 30 writers
// rewrites those instead of a leaf of each writer's chunks (BENCHMARKS.md,
// 1b″). A history reads as its chunks in history_events, then its tail
// (chunks, one place for every reader). A v5 file's last chunk, in
// history_events, reads as it is; the history's next append moves it to
// history_tails unless it is full.
//
// Schema v2 gave each execution a nested bucket under histories (8-byte
// sequence -> event). A bucket on a page of its own costs a whole 4 KB page
// even for a handful of events. Files written before v3 keep those buckets:
// an execution that has one goes on appending to it, and one that does not
// is stored in the v3 layout. Nothing is moved, so there is no migration to
// interrupt.

// historyKeyLen is the length of a history key's execution prefix.
const historyKeyLen = 4

// appendSeqKey appends seq as a key that sorts numerically: the number of
// bytes (1 to 8), then the number in that many big-endian bytes.
func appendSeqKey(dst []byte, seq uint64) []byte {
	n := (bits.Len64(seq) + 7) / 8
	if n == 0 {
		n = 1
	}
	dst = append(dst, byte(n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(seq>>(8*i)))
	}
	return dst
}

// decodeSeqKey reverses appendSeqKey.
func decodeSeqKey(b []byte) (uint64, bool) {
	if len(b) < 2 || len(b) > 9 || int(b[0]) != len(b)-1 {
		return 0, false
	}
	var seq uint64
	for _, c := range b[1:] {
		seq = seq<<8 | uint64(c)
	}
	return seq, true
}

// oldHistory returns exec's v2 history bucket, or nil when it has none.
func (t *Tx) oldHistory(exec string) (*bolt.Bucket, error) {
	if !t.tx.Writable() {
		// Most files have no history of the old form: the kept cursor
		// answers that without opening anything.
		p, err := t.bucket(bucketHistories)
		if err != nil {
			return nil, err
		}
		if k, _ := t.seek(p, []byte(exec)); !bytes.Equal(k, []byte(exec)) {
			return nil, nil
		}
	}
	return t.nested(bucketHistories, exec, false)
}

// historyPrefix returns the events bucket and exec's key prefix in it. The
// prefix is nil when exec has no number yet and create is not set.
func (t *Tx) historyPrefix(exec string, create bool) (*bolt.Bucket, []byte, error) {
	events, err := t.bucket(bucketHistoryEvents)
	if err != nil {
		return nil, nil, err
	}
	ids, err := t.bucket(bucketHistoryIDs)
	if err != nil {
		return nil, nil, err
	}
	var v []byte
	if !t.tx.Writable() && t.cur.set && t.cur.id == exec {
		v = t.cur.hid // ExecutionsInOrder looked it up
	} else {
		v = t.lookup(ids, []byte(exec))
	}
	if v != nil {
		if len(v) != historyKeyLen {
			return nil, nil, t.Damaged(bucketHistoryIDs, nil, []byte(exec), fmt.Errorf("a history number of %d bytes", len(v)))
		}
		if n := binary.BigEndian.Uint32(v); n == 0 || uint64(n) > ids.Sequence() {
			return nil, nil, t.Damaged(bucketHistoryIDs, nil, []byte(exec), fmt.Errorf("history number %d, never given (the last given is %d)", n, ids.Sequence()))
		}
		return events, clone(v), nil
	}
	if !create {
		return events, nil, nil
	}
	if exec == "" {
		return nil, nil, fmt.Errorf("append event: empty execution id")
	}
	n, err := ids.NextSequence()
	if err != nil {
		return nil, nil, err
	}
	if n > math.MaxUint32 {
		return nil, nil, fmt.Errorf("append event %s: more than %d histories", exec, uint32(math.MaxUint32))
	}
	prefix := binary.BigEndian.AppendUint32(nil, uint32(n))
	if err := ids.Put([]byte(exec), prefix); err != nil {
		return nil, nil, fmt.Errorf("number history %s: %w", exec, err)
	}
	return events, prefix, nil
}

// chunkCursor is a cursor on history_events for historyChunks, and the key
// and value it is on when its last walk ended past a history's chunks (k
// nil when unknown).
type chunkCursor struct {
	c    *bolt.Cursor
	k, v []byte
}

// historyChunks calls fn with the stored chunks of the history under
// prefix that hold its events from seq from on, in sequence order: its
// chunks in history_events from the one that holds from (read with cc's
// cursor, starting where it is when cc.k is that chunk), then its tail in
// history_tails. key is the chunk's key (prefix, then its first sequence
// number) and stored its bytes as stored, both valid only during the
// call. It stops at the first error or when fn returns false. cc.k is left
// on the key past the history's chunks when the walk reached it, else
// nil. Every reader of a history's chunks goes through it, so none misses
// the tail.
func (t *Tx) historyChunks(cc *chunkCursor, prefix []byte, from uint64, fn func(key, stored []byte) (bool, error)) error {
	at, atV := cc.k, cc.v
	cc.k, cc.v = nil, nil // unknown until a walk ends past the history
	tk, tfirst, tv, err := t.storedTail(prefix)
	if err != nil {
		return err
	}
	if tk == nil || from < tfirst {
		// Start at the chunk that holds from: the last one that begins at
		// or before it.
		c := cc.c
		start := appendSeqKey(prefix, from)
		var k, v []byte
		if bytes.HasPrefix(at, prefix) && bytes.Compare(at, start) >= 0 {
			// The cursor is on the history's first chunk: the seek below
			// would find it.
			k, v = at, atV
		} else if k, v = c.Seek(start); !bytes.Equal(k, start) {
			var pk, pv []byte
			if k == nil {
				pk, pv = c.Last()
			} else {
				pk, pv = c.Prev()
			}
			if pk != nil && bytes.HasPrefix(pk, prefix) {
				k, v = pk, pv
			} else {
				k, v = c.Seek(start)
			}
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if more, err := fn(k, v); err != nil || !more {
				return err
			}
		}
		cc.k, cc.v = k, v
	}
	if tk != nil {
		_, err := fn(tk, tv)
		return err
	}
	return nil
}

// AppendEvent appends an event to an execution's history and returns its
// sequence number, starting at 1. encode receives the sequence number so the
// stored bytes can carry it. The event joins the history's tail (in
// history_tails once the transaction commits); a tail that would grow
// past chunkMax is sealed into history_events first and the next begun.
func (t *Tx) AppendEvent(exec string, encode func(seq uint64) ([]byte, error)) (uint64, error) {
	if !t.tx.Writable() {
		return 0, fmt.Errorf("append to %s: %w", exec, bolt.ErrTxNotWritable)
	}
	// A history with a tail is in the v3 layout.
	if t.tails[exec] == nil && t.db.tails[exec] == nil {
		old, err := t.oldHistory(exec)
		if err != nil {
			return 0, err
		}
		if old != nil {
			return appendOld(old, exec, encode)
		}
	}
	tl := t.tails[exec]
	if tl == nil {
		tl = t.keptTail(exec)
	}
	if tl == nil {
		events, prefix, err := t.historyPrefix(exec, true)
		if err != nil {
			return 0, err
		}
		tl, err = t.loadTail(events, exec, prefix)
		if err != nil {
			return 0, fmt.Errorf("append to %s: %w", exec, err)
		}
	}
	seq := tl.last + 1
	data, err := encode(seq)
	if err != nil {
		return 0, fmt.Errorf("encode event %s/%d: %w", exec, seq, err)
	}
	size := binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(len(data))) + len(data)
	if tl.key == nil || len(tl.value)+size > chunkMax {
		// The chunk is full: store it sealed, and start the next.
		if err := t.putChunk(tl, true); err != nil {
			delete(t.tails, exec)
			return 0, fmt.Errorf("append %s/%d: %w", exec, seq, err)
		}
		tl.key = appendSeqKey(clone(tl.prefix), seq)
		tl.value = make([]byte, 0, max(chunkMax, size))
		tl.place, tl.unsealed = storedNowhere, false
	}
	tl.value = binary.AppendUvarint(tl.value, uint64(len(data)))
	tl.value = append(tl.value, data...)
	t.markDirty(tl)
	tl.last = seq
	return seq, nil
}

// appendOld appends to a v2 history bucket.
func appendOld(b *bolt.Bucket, exec string, encode func(seq uint64) ([]byte, error)) (uint64, error) {
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
	old, _ := t.oldHistory(exec)
	if old != nil {
		k, _ := old.Cursor().Last()
		return DecodeU64(k)
	}
	if tl := t.tails[exec]; tl != nil {
		return tl.last
	}
	events, prefix, err := t.historyPrefix(exec, false)
	if err != nil || prefix == nil {
		return 0
	}
	_, _, last, _, _ := t.lastChunk(events, prefix, nil)
	return last
}

// Events calls fn for an execution's events with seq >= from, in order, until
// fn returns false.
func (t *Tx) Events(exec string, from uint64, fn func(seq uint64, data []byte) bool) error {
	return t.events(exec, from, false, fn)
}

// EventsInPlace is Events for a reader that copies what it keeps of an
// event: data is valid only during the call to fn (it may be the
// transaction's space, which the next chunk reuses), so a read-only
// transaction decompresses chunk after chunk into the same space instead
// of a new slice each (check reads a million short histories this way).
func (t *Tx) EventsInPlace(exec string, from uint64, fn func(seq uint64, data []byte) bool) error {
	return t.events(exec, from, true, fn)
}

// events is Events, with data valid only during the call when inPlace is
// set.
func (t *Tx) events(exec string, from uint64, inPlace bool, fn func(seq uint64, data []byte) bool) error {
	old, err := t.oldHistory(exec)
	if err != nil {
		return err
	}
	if old != nil {
		c := old.Cursor()
		for k, v := c.Seek(U64(from)); k != nil; k, v = c.Next() {
			if !fn(DecodeU64(k), clone(v)) {
				return nil
			}
		}
		return nil
	}
	if err := t.flushChunks(); err != nil {
		return err
	}
	events, prefix, err := t.historyPrefix(exec, false)
	if err != nil || prefix == nil {
		return err
	}
	inPlace = inPlace && !t.tx.Writable() // bbolt's memory of a writable one may move under fn
	cc := &chunkCursor{}
	if inPlace {
		// The cursor may have stopped on this history's first chunk,
		// reading the history before it (numbers are given in creation
		// order, in which check reads): historyChunks starts there.
		if t.next.c == nil {
			t.next.c = events.Cursor()
		}
		cc = &t.next
	} else {
		cc.c = events.Cursor()
	}
	return t.historyChunks(cc, prefix, from, func(k, v []byte) (bool, error) {
		seq, ok := decodeSeqKey(k[len(prefix):])
		if !ok {
			return false, fmt.Errorf("history key %x of %s: %w", k, exec, ErrCorrupt)
		}
		var chunk []byte
		if inPlace {
			chunk, err = decodeChunkInto(t.plain, v, false, t.sums())
			if err == nil && len(v) > 0 && v[0] == compressedChunk {
				t.plain = chunk[:0] // the space, grown, for the next chunk
			}
		} else {
			chunk, err = decodeChunk(v, true, t.sums())
		}
		if err != nil {
			return false, t.chunkDamaged(exec, k, fmt.Errorf("a history chunk of %s: %w", exec, err))
		}
		stopped := false
		ok = chunkEvents(chunk, func(data []byte) bool {
			if seq >= from && !fn(seq, data) {
				stopped = true
				return false
			}
			seq++
			return true
		})
		if !ok {
			return false, fmt.Errorf("history chunk %x of %s: %w", k, exec, ErrCorrupt)
		}
		return !stopped, nil
	})
}

// deleteHistory removes exec's events in either layout.
func (t *Tx) deleteHistory(exec string) error {
	if tl := t.tails[exec]; tl != nil {
		tl.dropped = true
		delete(t.tails, exec)
	}
	delete(t.db.tails, exec)
	events, prefix, err := t.historyPrefix(exec, false)
	if err != nil || prefix == nil {
		return err
	}
	c := events.Cursor()
	// Seek again after each delete: a bbolt cursor may skip the key after a
	// deleted one.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("delete history of %s: %w", exec, err)
		}
	}
	tails, err := t.bucket(bucketHistoryTails)
	if err != nil {
		return err
	}
	if err := tails.Delete(prefix); err != nil {
		return fmt.Errorf("delete history of %s: %w", exec, err)
	}
	ids, err := t.bucket(bucketHistoryIDs)
	if err != nil {
		return err
	}
	return ids.Delete([]byte(exec))
}

// chunkDamaged is Damaged for the history chunk at key k: a sealed chunk
// of history_events, or a growing tail of history_tails.
func (t *Tx) chunkDamaged(exec string, k []byte, err error) error {
	b := bucketHistoryTails
	if events := t.root(bucketHistoryEvents); events != nil && events.Get(k) != nil {
		b = bucketHistoryEvents
	}
	d := t.Damaged(b, nil, k, err)
	d.(*DamagedRecord).Execution = exec
	return d
}

// EventDamaged is Damaged for event seq of exec's history, which does not
// decode: its chunk decompressed, so the damage is inside an event. The
// record named is the execution's history (the page is not told).
func (t *Tx) EventDamaged(exec string, seq uint64, err error) error {
	d := &DamagedRecord{Bucket: bucketHistoryEvents, Key: []byte(exec), Execution: exec,
		Err: fmt.Errorf("event %d of the history: %w", seq, err)}
	if t.db != nil {
		d.Path = t.db.path
		t.db.markDamaged(fmt.Sprintf("a damaged event %d in the history of %s", seq, exec))
	}
	return d
}
