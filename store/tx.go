package store

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/klauspost/compress/s2"
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
	// cursors are lookup's, one per collection of a read-only
	// transaction: bbolt's Get makes a cursor, and grows its path, on
	// every call.
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
}

// chunkCursor is a cursor on history_events for historyChunks, and the key
// and value it is on when its last walk ended past a history's chunks (k
// nil when unknown).
type chunkCursor struct {
	c    *bolt.Cursor
	k, v []byte
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
// or it is a nested collection. A read-only transaction seeks with a
// cursor it keeps for b, so a lookup per execution allocates nothing.
func (t *Tx) lookup(b *bolt.Bucket, key []byte) []byte {
	if t.tx.Writable() {
		return b.Get(key)
	}
	k, v := t.seek(b, key) // v is nil for a nested collection, as Get's
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// keptCursor is a cursor a read-only transaction keeps for one
// collection, and the key it is on (nil when past the end or not yet
// moved).
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
	kc := t.cursors[b]
	if kc == nil {
		if t.cursors == nil {
			t.cursors = make(map[*bolt.Bucket]*keptCursor, 8)
		}
		kc = &keptCursor{c: b.Cursor()}
		t.cursors[b] = kc
	}
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
// newestFirst is set, skipping the first skip. It stops when fn returns false.
// The cost is proportional to the number visited, not to the total (nor
// to skip, unless executions were deleted since the last ClearAll).
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
		if !fn(string(v), clone(t.lookup(execs, v))) {
			return nil
		}
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
		w.lookUp(&rc, &hc)
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

// lookUp looks the window's records and history numbers up in key order.
func (w *execWindow) lookUp(rc, hc *steppingCursor) {
	for i := range w.ids {
		w.byKey = append(w.byKey, int32(i))
	}
	slices.SortFunc(w.byKey, func(a, b int32) int { return strings.Compare(w.ids[a], w.ids[b]) })
	w.rec = slices.Grow(w.rec, len(w.ids))[:len(w.ids)]
	w.hid = slices.Grow(w.hid, len(w.ids))[:len(w.ids)]
	for _, i := range w.byKey {
		key := []byte(w.ids[i])
		w.rec[i], w.hid[i] = w.keep(rc.lookup(key)), span{-1, -1}
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
	for k, v := c.First(); k != nil && fn(k, v); k, v = c.Next() {
	}
	return nil
}

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
			return nil, nil, fmt.Errorf("history number of %s: %w", exec, ErrCorrupt)
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

// chunkMax bounds the plain bytes of one chunk of events: large enough
// that the events of a short history compress together (the gen mix's
// average execution is 1.1 KB of events) and a chunk's key is a small share
// of it, small enough that compressing a chunk when it is sealed stays
// cheap (some 20 µs of CPU at 4 KB) and a page holds several compressed
// chunks.
const chunkMax = 4096

// chunkDictText is the preset dictionary of compressed chunks, 32 KB of
// plain chunks of typical histories: 6 KB of the catalogue's naive, safe,
// invoice-crm and crash runs, then executions of every shape that
// `retrylab gen --seed 99` writes (another seed than the benchmarks'). It is
// part of the format: a chunk written with it can only be read with it, so
// it is never changed (TestChunkDictionaryIsFrozen).
//
//go:embed chunkdict.bin
var chunkDictText []byte

// chunkDict is chunkDictText as an S2 dictionary (no initial repeat
// offset), built once when the package loads and never changed: s2.Dict
// builds its match tables once, on first use, behind a sync.Once, and is
// safe for concurrent encoding and decoding.
var chunkDict = s2.MakeDict(chunkDictText, nil)

// maxChunkLen bounds a chunk's plain length: encodeChunk refuses longer
// chunks (bbolt could not store one plain either), so decodeChunk refuses a
// compressed chunk that claims more as damaged instead of allocating it.
const maxChunkLen = bolt.MaxValueSize

// compressedChunk is the first byte of a compressed chunk. A plain chunk
// starts with its first event's length, which is not 0 in any file an
// older build wrote (engine/history never writes an empty event); a chunk
// this build writes that starts with an empty event is always compressed.
const compressedChunk = 0

// encodeChunk is the sealed form of a plain chunk: compressed, unless that
// would not make it shorter (then plain itself). A compressed chunk is a
// new slice of its own length; *scratch is the encoder's space, kept for
// the next call. EncodeBetter rather than Encode: on the gen mix's chunks
// 29.6% of their plain size instead of 35%, in about the time the
// hand-written codec S2 replaced took (BENCHMARKS.md, "14.3: S2 instead of
// our own codec").
func encodeChunk(scratch *[]byte, plain []byte) ([]byte, error) {
	return encodeWith(scratch, nil, plain, chunkDict.EncodeBetter)
}

// encodeTail is the stored form of a growing tail: compressed by S2's
// fast encoder with the same dictionary (Dict.Encode: some 1-2 µs for a
// chunk, where EncodeBetter clears its 589 KB of tables first; 12-18%
// larger), unless that would not make it shorter (then plain itself, but
// for a chunk whose first event is empty, which is always compressed).
// scratch is as encodeChunk's.
func encodeTail(scratch *[]byte, plain []byte) ([]byte, error) {
	return encodeWith(scratch, nil, plain, chunkDict.Encode)
}

// encodeTailValue is encodeTail's stored form after head, in a new slice:
// history_tails' value, head being the tail's first sequence number.
func encodeTailValue(scratch *[]byte, head, plain []byte) ([]byte, error) {
	return encodeWith(scratch, head, plain, chunkDict.Encode)
}

// encodeWith is a chunk compressed by encode (one of chunkDict's S2
// encoders, writing into dst), or plain when that is not shorter and the
// chunk does not start with an empty event, after head: plain itself
// when head is nil and the chunk is stored plain, else a new slice.
func encodeWith(scratch *[]byte, head, plain []byte, encode func(dst, src []byte) []byte) ([]byte, error) {
	need := s2.MaxEncodedLen(len(plain))
	if need < 0 || len(plain) > maxChunkLen {
		return nil, fmt.Errorf("history chunk of %d bytes: too large", len(plain))
	}
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	enc := encode((*scratch)[:need], plain)
	if 1+len(enc) >= len(plain) && len(plain) > 0 && plain[0] != compressedChunk {
		if head == nil {
			return plain, nil
		}
		return append(append(make([]byte, 0, len(head)+len(plain)), head...), plain...), nil
	}
	out := make([]byte, len(head)+1+len(enc))
	n := copy(out, head)
	out[n] = compressedChunk
	copy(out[n+1:], enc)
	return out, nil
}

// sealChunk is a stored chunk (plain, a growing tail or sealed) as it
// is stored sealed; *scratch is as encodeChunk's.
func sealChunk(scratch *[]byte, stored []byte) ([]byte, error) {
	plain, err := decodeChunk(stored, true)
	if err != nil {
		return nil, err
	}
	return encodeChunk(scratch, plain)
}

// decodeChunk returns a stored chunk's plain events: a new slice, or, for
// a plain chunk when copyPlain is not set, stored itself.
func decodeChunk(stored []byte, copyPlain bool) ([]byte, error) {
	return decodeChunkInto(nil, stored, copyPlain)
}

// decodeChunkInto is decodeChunk writing a compressed chunk's events (or
// a plain chunk's, with copyPlain) into dst's space when it is large
// enough.
func decodeChunkInto(dst, stored []byte, copyPlain bool) ([]byte, error) {
	if len(stored) == 0 || stored[0] != compressedChunk {
		if copyPlain {
			return append(dst[:0], stored...), nil
		}
		return stored, nil
	}
	if n, err := s2.DecodedLen(stored[1:]); err != nil || n > maxChunkLen {
		return nil, ErrCorrupt
	}
	plain, err := chunkDict.Decode(dst[:0], stored[1:])
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

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
		stored, err := encodeTailValue(&t.encoded, tl.key[len(tl.prefix):], tl.value)
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
	stored, err := encodeChunk(&t.encoded, tl.value)
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

// chunkEvents splits a chunk into its events, each a slice of chunk whose
// capacity ends where it does.
func chunkEvents(chunk []byte, fn func(data []byte) bool) bool {
	for len(chunk) > 0 {
		n, w := binary.Uvarint(chunk)
		if w <= 0 || n > uint64(len(chunk)-w) {
			return false
		}
		end := w + int(n)
		if !fn(chunk[w:end:end]) {
			return true
		}
		chunk = chunk[end:]
	}
	return true
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
	v, err = decodeChunkInto(buf, v, buf != nil)
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
	sealed, err := sealChunk(&t.encoded, v)
	if err != nil {
		return false, fmt.Errorf("history chunk %x of %s: %w", k, exec, err)
	}
	return bytes.Equal(sealed, v), nil
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
			chunk, err = decodeChunkInto(t.plain, v, false)
			if err == nil && len(v) > 0 && v[0] == compressedChunk {
				t.plain = chunk[:0] // the space, grown, for the next chunk
			}
		} else {
			chunk, err = decodeChunk(v, true)
		}
		if err != nil {
			return false, fmt.Errorf("history chunk %x of %s: %w", k, exec, err)
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

// Journal records. Earlier builds kept each execution's records in a bucket
// of its own under journals (execution id -> bucket of step -> record): with
// one or two records an execution, that bucket's headers cost more than
// its records. Records are now written straight into journals under
// journalKey(exec, step): the execution, NUL, the step. That sorts each
// execution's records after its old bucket (the same id, then NUL) and
// before any other execution, so a walk of journals meets every record of
// an execution together; readers take both layouts, and a record put again
// leaves the old bucket. An execution id holding a NUL (no retrylab id
// does) keeps the old layout.

func journalKey(exec, step string) []byte {
	k := make([]byte, 0, len(exec)+1+len(step))
	k = append(k, exec...)
	k = append(k, 0)
	return append(k, step...)
}

// flatJournals reports whether exec's records take the flat layout.
func flatJournals(exec string) bool { return strings.IndexByte(exec, 0) < 0 }

// PutJournal records a step's result for an execution.
func (t *Tx) PutJournal(exec, step string, record []byte) error {
	if !flatJournals(exec) {
		b, err := t.nested(bucketJournals, exec, true)
		if err != nil {
			return err
		}
		return b.Put([]byte(step), record)
	}
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	if _, err := deleteOldJournal(p, exec, step); err != nil {
		return err
	}
	return p.Put(journalKey(exec, step), record)
}

// deleteOldJournal deletes a record of the per-execution layout, and the
// execution's bucket once it is empty.
func deleteOldJournal(p *bolt.Bucket, exec, step string) (bool, error) {
	b := p.Bucket([]byte(exec))
	if b == nil || b.Get([]byte(step)) == nil {
		return false, nil
	}
	if err := b.Delete([]byte(step)); err != nil {
		return false, err
	}
	if k, _ := b.Cursor().First(); k == nil {
		return true, p.DeleteBucket([]byte(exec))
	}
	return true, nil
}

// Journal returns a step's recorded result, or nil.
func (t *Tx) Journal(exec, step string) []byte {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return nil
	}
	if flatJournals(exec) {
		if v := p.Get(journalKey(exec, step)); v != nil {
			return clone(v)
		}
	}
	if b := p.Bucket([]byte(exec)); b != nil {
		return clone(b.Get([]byte(step)))
	}
	return nil
}

// DeleteJournal removes a step's record and reports whether there was one.
func (t *Tx) DeleteJournal(exec, step string) (bool, error) {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return false, err
	}
	existed, err := deleteOldJournal(p, exec, step)
	if err != nil || !flatJournals(exec) {
		return existed, err
	}
	k := journalKey(exec, step)
	if p.Get(k) == nil {
		return existed, nil
	}
	return true, p.Delete(k)
}

// deleteJournals removes every record of an execution, in both layouts.
func (t *Tx) deleteJournals(exec string) error {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	if p.Bucket([]byte(exec)) != nil {
		if err := p.DeleteBucket([]byte(exec)); err != nil {
			return err
		}
	}
	if !flatJournals(exec) {
		return nil
	}
	prefix := journalKey(exec, "")
	c := p.Cursor()
	// Seek again after each delete: a bbolt cursor may skip the key after a
	// deleted one.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// JournalEntries calls fn for every journal record of every execution, in
// execution id then step order.
func (t *Tx) JournalEntries(fn func(exec, step string, record []byte) bool) error {
	return t.JournalEntriesAfter("", "", fn)
}

// journalEntry is one record met by JournalEntriesAfter.
type journalEntry struct {
	step   string
	record []byte
}

// JournalEntriesAfter is JournalEntries from the record after (exec, step)
// on, so a reader can page through every journal: ("", "") starts at the
// first.
func (t *Tx) JournalEntriesAfter(exec, step string, fn func(exec, step string, record []byte) bool) error {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	// An execution's records, of either layout, are together: gather them,
	// then hand them out in step order.
	var cur string
	var group []journalEntry
	have := false
	flush := func() bool {
		slices.SortStableFunc(group, func(a, b journalEntry) int { return strings.Compare(a.step, b.step) })
		for i, e := range group {
			if i > 0 && group[i-1].step == e.step {
				continue // put again since: the flat record, first, holds
			}
			if exec != "" && cur == exec && e.step <= step {
				continue
			}
			if !fn(cur, e.step, e.record) {
				return false
			}
		}
		group = group[:0]
		return true
	}
	pc := p.Cursor()
	for k, v := pc.Seek([]byte(exec)); k != nil; k, v = pc.Next() {
		var e string
		var entries []journalEntry
		if i := bytes.IndexByte(k, 0); i >= 0 && v != nil {
			e = string(k[:i])
			entries = []journalEntry{{step: string(k[i+1:]), record: clone(v)}}
		} else if b := p.Bucket(k); b != nil {
			e = string(k)
			c := b.Cursor()
			for sk, sv := c.First(); sk != nil; sk, sv = c.Next() {
				entries = append(entries, journalEntry{step: string(sk), record: clone(sv)})
			}
		} else {
			continue
		}
		if have && e != cur && !flush() {
			return nil
		}
		cur, have = e, true
		// Flat records come before the old ones of the same step.
		if v != nil {
			group = append(entries, group...)
		} else {
			group = append(group, entries...)
		}
	}
	if have {
		flush()
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
	return clone(t.lookup(b, key))
}

// GetInPlace is Get without the copy: the value is valid only until the
// transaction writes or ends, and must not be changed.
func (t *Tx) GetInPlace(name Bucket, key []byte) []byte {
	b, err := t.owned(name, false)
	if err != nil || b == nil {
		return nil
	}
	return t.lookup(b, key)
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
	for k, v := c.First(); k != nil && fn(k, v); k, v = c.Next() {
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

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}
