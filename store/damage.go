package store

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// DamagedRecord is the error for a record its owner could not decode: bbolt
// read it, but its bytes are not what was written. It names the record's
// collection, key and the leaf page that holds it, so that every reader
// reports the same record the same way, and it wraps ErrCorrupt (and the
// owner's decode error).
type DamagedRecord struct {
	Path   string
	Bucket Bucket
	// Names are the nested buckets inside Bucket that hold the record
	// (an older layout's per-execution bucket), if any.
	Names [][]byte
	Key   []byte
	// Execution is the execution whose history holds the record, for a
	// history's chunk or event: its history is whole or not at all.
	Execution string
	// Page is the leaf page that holds the record (an inline bucket's
	// record: the page that holds the bucket); 0 when it cannot be told.
	Page uint64
	Err  error
}

func (e *DamagedRecord) Error() string {
	page := "page unknown"
	if e.Page != 0 {
		page = fmt.Sprintf("page %d", e.Page)
	}
	return fmt.Sprintf("%s: %s: damaged record in %s, key %s, %s: %v", e.Path, ErrCorrupt, e.Bucket, QuoteKey(e.Key), page, e.Err)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold, and reach the decode error.
func (e *DamagedRecord) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// QuoteKey shows a key readably: quoted text, or hex when it is binary
// (with its number when it is an 8-byte sequence key).
func QuoteKey(k []byte) string {
	printable := len(k) > 0
	for _, c := range k {
		if c < 0x20 && c != 0 || c >= 0x7f {
			printable = false
			break
		}
	}
	if printable && (len(k) != 8 || bytes.IndexByte(k, 0) < 0) {
		return strconv.Quote(string(k))
	}
	if len(k) == 8 {
		return fmt.Sprintf("#%d (0x%x)", DecodeU64(k), k)
	}
	return fmt.Sprintf("0x%x", k)
}

// Damaged is the error a reader returns for the record at key of bucket
// (inside the nested buckets names, if any) that it could not decode (err
// says why): a *DamagedRecord naming the page that holds it. It also marks
// the database damaged, so that it refuses writes from then on: a record
// bbolt's pages hold but its owner cannot read says the file's bytes
// changed under it.
func (t *Tx) Damaged(bucket Bucket, names [][]byte, key []byte, err error) error {
	d := &DamagedRecord{Bucket: bucket, Names: names, Key: append([]byte(nil), key...), Err: err}
	if t.db != nil {
		d.Path = t.db.path
		path := append([][]byte{[]byte(bucket)}, names...)
		d.Page = t.db.pageOf(path, key)
		t.db.markDamaged(fmt.Sprintf("a damaged record in %s, key %s", bucket, QuoteKey(key)))
	}
	return d
}

// pageOf finds, in the file's bytes, the leaf page that holds key inside
// the nested buckets path (0 when it cannot: the file changed, or its
// pages do not lead there).
func (db *DB) pageOf(path [][]byte, key []byte) (page uint64) {
	f, err := os.Open(db.path)
	if err != nil {
		return 0
	}
	defer f.Close()
	data, unmap, err := mapFile(f)
	if err != nil {
		return 0
	}
	defer unmap()
	defer func() {
		if recover() != nil { // a damaged page: no page to tell
			page = 0
		}
	}()
	m, err := readMeta(data, db.bolt.Info().PageSize)
	if err != nil {
		return 0
	}
	ps := uint64(m.pageSize)
	root, inline, at := m.root, []byte(nil), uint64(0)
	for i, name := range append(path, key) {
		var value []byte
		var ok bool
		if inline != nil {
			value, ok = findInLeaf(inline, name)
		} else {
			at, value, ok = findInTree(data, ps, root, name)
		}
		if !ok {
			return 0
		}
		if i == len(path) {
			return at
		}
		if len(value) < bucketHeaderSize {
			return 0
		}
		if root = native.Uint64(value); root == 0 {
			inline = value[bucketHeaderSize:]
		} else {
			inline = nil
		}
	}
	return 0
}

// findInTree descends the B+tree rooted at page root to the leaf that holds
// key, and returns that page and key's value.
func findInTree(data []byte, ps, root uint64, key []byte) (uint64, []byte, bool) {
	id := root
	for depth := 0; depth <= maxNesting; depth++ {
		if (id+1)*ps > uint64(len(data)) {
			return 0, nil, false
		}
		h := data[id*ps:]
		end := (id + 1 + uint64(native.Uint32(h[12:]))) * ps
		if end > uint64(len(data)) {
			return 0, nil, false
		}
		b := data[id*ps : end]
		switch native.Uint16(b[8:]) {
		case leafPage:
			v, ok := findInLeaf(b, key)
			return id, v, ok
		case branchPage:
			n, ok := elements(b)
			if !ok || n == 0 {
				return 0, nil, false
			}
			next := native.Uint64(b[pageHeaderSize+8:])
			for i := 0; i < n; i++ {
				off := pageHeaderSize + i*elementSize
				pos, ksize := native.Uint32(b[off:]), native.Uint32(b[off+4:])
				k := b[off+int(pos) : off+int(pos)+int(ksize)]
				if bytes.Compare(k, key) > 0 {
					break
				}
				next = native.Uint64(b[off+8:])
			}
			id = next
		default:
			return 0, nil, false
		}
	}
	return 0, nil, false
}

// findInLeaf finds key among a leaf page's elements and returns its value.
func findInLeaf(b []byte, key []byte) ([]byte, bool) {
	n, ok := elements(b)
	if !ok {
		return nil, false
	}
	for i := 0; i < n; i++ {
		off := pageHeaderSize + i*elementSize
		pos, ksize, vsize := native.Uint32(b[off+4:]), native.Uint32(b[off+8:]), native.Uint32(b[off+12:])
		start := off + int(pos)
		if bytes.Equal(b[start:start+int(ksize)], key) {
			return b[start+int(ksize) : start+int(ksize)+int(vsize)], true
		}
	}
	return nil, false
}

// DeleteRecord deletes the record at key of bucket, inside the nested
// buckets names: what salvage does with a record that does not decode.
func (t *Tx) DeleteRecord(bucket Bucket, names [][]byte, key []byte) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	for _, n := range names {
		if b = b.Bucket(n); b == nil {
			return nil
		}
	}
	return b.Delete(key)
}
