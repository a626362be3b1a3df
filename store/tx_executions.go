package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

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
	if t.lookup(execs, []byte(exec)) == nil {
		order, err := t.bucket(bucketExecOrder)
		if err != nil {
			return err
		}
		order.FillPercent = appendFill // written in sequence order
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
	if err := execs.Put([]byte(exec), t.seal(bucketExecutions, []byte(exec), record)); err != nil {
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
	v, _ := t.open(bucketExecutions, nil, []byte(exec), t.lookup(b, []byte(exec)))
	return clone(v)
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
	n := int(DecodeU64(t.lookup(b, []byte("exec_count")))) + delta
	if n < 0 {
		n = 0
	}
	return b.Put([]byte("exec_count"), U64(uint64(n)))
}

// executionBuckets are the executions' creation order and their records.
func (t *Tx) executionBuckets() (order, execs *bolt.Bucket, err error) {
	if order, err = t.bucket(bucketExecOrder); err != nil {
		return nil, nil, err
	}
	if execs, err = t.bucket(bucketExecutions); err != nil {
		return nil, nil, err
	}
	return order, execs, nil
}

// Executions calls fn for executions in creation order, newest first when
// newestFirst is set, skipping the first skip; an execution moved to the
// newest place (MoveExecutionToNewest) counts as created then. It stops
// when fn returns false. The cost is proportional to the number visited,
// not to the total (nor to skip, unless more than maxOrderHoles
// executions were moved or deleted since the last ClearAll, or deleted by
// a build that kept no holes).
func (t *Tx) Executions(newestFirst bool, skip int, fn func(id string, record []byte) bool) error {
	order, execs, err := t.executionBuckets()
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
		// Positions are numbered 1, 2, ... in creation order; while every
		// one missing is a known hole (a place an execution left when it
		// moved to the newest, or was deleted), the position skip away is
		// found by a seek, not by stepping to it.
		first, _ := c.First()
		last, _ := c.Last()
		lo, hi := DecodeU64(first), DecodeU64(last)
		if holes, ok := t.orderHoles(lo, hi); ok && hi-lo+1 == uint64(t.ExecutionCount())+uint64(len(holes)) {
			if uint64(skip) >= uint64(t.ExecutionCount()) {
				return nil
			}
			target := seekPosition(lo, hi, uint64(skip), holes, newestFirst)
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
		rec, _ := t.open(bucketExecutions, nil, v, t.lookup(execs, v))
		if !fn(string(v), clone(rec)) {
			return nil
		}
	}
	return nil
}

// bucketExecOrderHoles holds the places in the creation order that no
// execution holds any more (8-byte position -> nothing): one left by an
// execution moved to the newest place (MoveExecutionToNewest) or deleted.
// The store creates it on its first write; ClearAll empties it with the
// order itself.
const bucketExecOrderHoles Bucket = "exec_order_holes"

// maxOrderHoles is how many holes Executions reads to seek past them;
// with more, it steps.
const maxOrderHoles = 4096

// orderHoles are the known holes between lo and hi, in order; ok is false
// when there are more than maxOrderHoles.
func (t *Tx) orderHoles(lo, hi uint64) (holes []uint64, ok bool) {
	b := t.root(bucketExecOrderHoles)
	if b == nil {
		return nil, true
	}
	c := b.Cursor()
	for k, _ := c.Seek(U64(lo)); k != nil && DecodeU64(k) <= hi; k, _ = c.Next() {
		if len(holes) == maxOrderHoles {
			return nil, false
		}
		holes = append(holes, DecodeU64(k))
	}
	return holes, true
}

// seekPosition is the position of the execution skip places from the
// newest (hi) or the oldest (lo), the holes (sorted) between them
// stepped over: the fixed point nearest the end it starts from of
// "skip places plus the holes crossed".
func seekPosition(lo, hi, skip uint64, holes []uint64, newestFirst bool) uint64 {
	crossed := func(from, to uint64) uint64 { // holes in [from, to]
		i, _ := slices.BinarySearch(holes, from)
		j, _ := slices.BinarySearch(holes, to+1)
		return uint64(j - i)
	}
	if newestFirst {
		k := hi - skip
		for {
			next := hi - skip - crossed(k, hi)
			if next == k {
				return k
			}
			k = next
		}
	}
	k := lo + skip
	for {
		next := lo + skip + crossed(lo, k)
		if next == k {
			return k
		}
		k = next
	}
}

// MoveExecutionToNewest gives exec the newest place in the order
// executions are listed (Executions), as if it were created now: an
// execution run again is listed first. Its old place becomes a hole the
// listing's seek steps over. It costs the steps from the newest place back
// to the old one; it does nothing when exec has no place or has the newest
// already. The watcher hears of it as a deletion and a put.
func (t *Tx) MoveExecutionToNewest(exec string) error {
	order, execs, err := t.executionBuckets()
	if err != nil {
		return err
	}
	id := []byte(exec)
	c := order.Cursor()
	k, v := c.Last()
	if k == nil || bytes.Equal(v, id) {
		return nil
	}
	for ; k != nil && !bytes.Equal(v, id); k, v = c.Prev() {
	}
	if k == nil {
		return nil
	}
	old := clone(k)
	if err := c.Delete(); err != nil {
		return err
	}
	order.FillPercent = appendFill
	n, err := order.NextSequence()
	if err != nil {
		return err
	}
	if err := order.Put(U64(n), id); err != nil {
		return err
	}
	if err := t.Put(bucketExecOrderHoles, old, []byte{1}); err != nil {
		return err
	}
	if w := t.watcher(); w != nil {
		rec, _ := t.open(bucketExecutions, nil, id, execs.Get(id))
		rec = clone(rec)
		t.tx.OnCommit(func() {
			w.ExecutionDeleted(exec)
			if rec != nil {
				w.ExecutionPut(exec, rec)
			}
		})
	}
	return nil
}

// ExecutionsInOrder calls fn for every execution in creation order, oldest
// first, with its id and its record (nil when it has none), until fn
// returns false, as Executions(false, 0, fn) does; record is valid only
// during the call. A read-only transaction reads the ids a window at a
// time and looks their records and history numbers up in the order of
// their keys, stepping a cursor along each collection, where lookups in
// creation order (ids are not in key order) search each from the root: on
// a million executions about a tenth of the time. While fn runs, reading
// the execution's history (EventsInPlace, Events) needs no lookup of its
// number.
func (t *Tx) ExecutionsInOrder(fn func(id string, record []byte) bool) error {
	if t.tx.Writable() {
		return t.Executions(false, 0, fn)
	}
	order, execs, err := t.executionBuckets()
	if err != nil {
		return err
	}
	// Files older than schema v3 have no history numbers: their
	// histories are looked up as Events always did.
	hids := t.root(bucketHistoryIDs)
	// A window of about a sixteenth of the executions puts the next id
	// of a window some 16 keys after the last: a few steps of a cursor.
	// Windows start small and double up to that while their records take
	// less than windowBytes (they halve when more), so a file of large
	// records holds few at a time.
	target := min(max(t.ExecutionCount()/16, 1024), 1<<16)
	size := 1024
	var w execWindow
	rc, hc := steppingCursor{c: execs.Cursor()}, steppingCursor{}
	if hids != nil {
		hc.c = hids.Cursor()
	}
	defer func() { t.cur = current{} }()
	oc := order.Cursor()
	k, v := oc.First()
	for k != nil {
		w.reset()
		for ; k != nil && len(w.ids) < size; k, v = oc.Next() {
			w.ids = append(w.ids, string(v))
		}
		w.lookUp(t, &rc, &hc)
		for i, id := range w.ids {
			t.cur = current{id: id, hid: w.value(w.hid[i]), set: hids != nil}
			if !fn(id, w.value(w.rec[i])) {
				return nil
			}
		}
		t.cur = current{}
		if len(w.vals) > windowBytes {
			size = max(size/2, 64)
		} else {
			size = min(size*2, max(target, size))
		}
	}
	return nil
}

// windowBytes bounds the records (and history numbers) an
// ExecutionsInOrder window holds, about.
const windowBytes = 8 << 20

// current is the execution ExecutionsInOrder is calling fn for, and the
// value of its history number (nil when it has none).
type current struct {
	id  string
	hid []byte
	set bool
}

// execWindow is a window of ExecutionsInOrder: ids in creation order,
// and where each one's record and history number are in vals.
type execWindow struct {
	ids      []string
	byKey    []int32
	vals     []byte
	rec, hid []span
}

// span is where a value is in execWindow.vals; from -1 when there is none.
type span struct{ from, to int }

func (w *execWindow) reset() {
	clear(w.ids)
	w.ids, w.byKey, w.vals, w.rec, w.hid = w.ids[:0], w.byKey[:0], w.vals[:0], w.rec[:0], w.hid[:0]
}

// lookUp looks the window's records and history numbers up in key order,
// opening each record (see Tx.open) in t.
func (w *execWindow) lookUp(t *Tx, rc, hc *steppingCursor) {
	for i := range w.ids {
		w.byKey = append(w.byKey, int32(i))
	}
	slices.SortFunc(w.byKey, func(a, b int32) int { return strings.Compare(w.ids[a], w.ids[b]) })
	w.rec = slices.Grow(w.rec, len(w.ids))[:len(w.ids)]
	w.hid = slices.Grow(w.hid, len(w.ids))[:len(w.ids)]
	for _, i := range w.byKey {
		key := []byte(w.ids[i])
		rec, _ := t.open(bucketExecutions, nil, key, rc.lookup(key))
		w.rec[i], w.hid[i] = w.keep(rec), span{-1, -1}
		if hc.c != nil {
			w.hid[i] = w.keep(hc.lookup(key))
		}
	}
}

// keep copies v into vals.
func (w *execWindow) keep(v []byte) span {
	if v == nil {
		return span{-1, -1}
	}
	from := len(w.vals)
	w.vals = append(w.vals, v...)
	return span{from, len(w.vals)}
}

// value is the value at sp, nil for none.
func (w *execWindow) value(sp span) []byte {
	if sp.from < 0 {
		return nil
	}
	return w.vals[sp.from:sp.to:sp.to]
}

// steppingCursor looks keys up in ascending order: a key not far past the
// last is reached by a few steps of the cursor instead of a search from
// the root.
type steppingCursor struct {
	c  *bolt.Cursor
	at []byte // the key c is on, nil when unknown or past the end
}

// stepsBeforeSeek bounds the steps tried before a search.
const stepsBeforeSeek = 64

// lookup is b.Get(key), as Tx.lookup answers it.
func (s *steppingCursor) lookup(key []byte) []byte {
	var k, v []byte
	found := false
	if s.at != nil && bytes.Compare(key, s.at) > 0 {
		for range stepsBeforeSeek {
			if k, v = s.c.Next(); k == nil || bytes.Compare(k, key) >= 0 {
				found = true
				break
			}
		}
	}
	if !found {
		k, v = s.c.Seek(key)
	}
	s.at = k
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
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
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// A damaged record is left out and fails the transaction (see
		// Tx.open).
		if v, ok := t.openScanned(bucketExecutions, k, v); ok && !fn(k, v) {
			break
		}
	}
	return nil
}

// DeleteExecution removes an execution, its history and its journal.
func (t *Tx) DeleteExecution(exec string) error {
	if err := t.deleteHistory(exec); err != nil {
		return err
	}
	if err := t.deleteJournals(exec); err != nil {
		return err
	}
	for _, parent := range []Bucket{bucketHistories} {
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
			hole := clone(k)
			if err := c.Delete(); err != nil {
				return err
			}
			if err := t.Put(bucketExecOrderHoles, hole, []byte{1}); err != nil {
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

// CheckExecutionIndex checks what the store keeps about the executions
// beside their records: each entry of the creation order names an
// execution that has a record, each record is in the order once, and the
// count of executions is theirs. It returns a *DamagedRecord for each
// entry that is not so, at most max (max <= 0: all).
func (t *Tx) CheckExecutionIndex(max int) ([]error, error) {
	order, execs, err := t.executionBuckets()
	if err != nil {
		return nil, err
	}
	var damaged []error
	n := 0
	c := order.Cursor()
	for k, v := c.First(); k != nil && (max <= 0 || len(damaged) < max); k, v = c.Next() {
		n++
		if execs.Get(v) == nil {
			damaged = append(damaged, t.Damaged(bucketExecOrder, nil, k, fmt.Errorf("it names execution %q, which has no record", v)))
		}
	}
	if hids := t.root(bucketHistoryIDs); hids != nil {
		seen := map[string]bool{}
		last := hids.Sequence()
		hc := hids.Cursor()
		for k, v := hc.First(); k != nil && (max <= 0 || len(damaged) < max); k, v = hc.Next() {
			var why error
			switch {
			case v == nil:
				why = errors.New("a bucket where a history number belongs")
			case len(v) != historyKeyLen:
				why = fmt.Errorf("a history number of %d bytes", len(v))
			case binary.BigEndian.Uint32(v) == 0 || uint64(binary.BigEndian.Uint32(v)) > last:
				why = fmt.Errorf("history number %d, never given (the last given is %d)", binary.BigEndian.Uint32(v), last)
			case seen[string(v)]:
				why = fmt.Errorf("history number %d, given to another execution too", binary.BigEndian.Uint32(v))
			case execs.Get(k) == nil:
				why = errors.New("the history of an execution that has no record")
			}
			if why != nil {
				damaged = append(damaged, t.Damaged(bucketHistoryIDs, nil, k, why))
			}
			seen[string(v)] = true
		}
	}
	records := execs.Stats().KeyN
	counted := t.root(bucketMeta) != nil && t.root(bucketMeta).Get([]byte("exec_count")) != nil
	if len(damaged) == 0 && (n != records || counted && n != t.ExecutionCount()) {
		damaged = append(damaged, t.Damaged(bucketMeta, nil, []byte("exec_count"),
			fmt.Errorf("the file holds %d execution records, %d in creation order, and counts %d", records, n, t.ExecutionCount())))
	}
	return damaged, nil
}
