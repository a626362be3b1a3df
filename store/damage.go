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
	// record: the page that holds the bucket); 0 when it cannot be told,
	// and then NoPage says why.
	Page   uint64
	NoPage string
	Err    error
}

func (e *DamagedRecord) Error() string {
	page := "page unknown"
	switch {
	case e.Page != 0:
		page = fmt.Sprintf("page %d", e.Page)
	case e.NoPage != "":
		page = "page unknown: " + e.NoPage
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
		d.Page, d.NoPage = t.pageOf(path, key)
		t.db.markDamaged(fmt.Sprintf("a damaged record in %s, key %s", bucket, QuoteKey(key)))
	}
	return d
}

// pageOf finds, in the file's bytes, the leaf page that holds key inside
// the nested buckets path, as t's snapshot of the file has it: the pages
// its meta page leads to, which no commit reuses while t is open. When it
// cannot, it returns 0 and says why: the record was put in t, a writable
// transaction, and is on no page yet; no record is under key (damage that
// is a record missing, or one that names another); the pages that lead
// there are damaged; the file cannot be read.
func (t *Tx) pageOf(path [][]byte, key []byte) (page uint64, why string) {
	f, err := os.Open(t.db.path)
	if err != nil {
		return 0, fmt.Sprintf("the file cannot be read again to find it (%v)", err)
	}
	defer f.Close()
	data, unmap, err := mapFile(f)
	if err != nil {
		return 0, fmt.Sprintf("the file cannot be mapped to find it (%v)", err)
	}
	defer unmap()
	defer func() {
		if recover() != nil {
			page, why = 0, "the pages that lead to it are damaged"
		}
	}()
	// The snapshot's root page, which no commit reuses while t is open
	// (the file's meta page may name a later one by now): the root
	// collection's, whose cursor t gives.
	ps := uint64(t.db.bolt.Info().PageSize)
	root, inline, at := uint64(t.tx.Cursor().Bucket().Root()), []byte(nil), uint64(0)
	names := append(path, key)
	for i, name := range names {
		var value []byte
		var ok, reached bool
		if inline != nil {
			value, ok = findInLeaf(inline, name)
			reached = true
		} else {
			at, value, ok, reached = findInTree(data, ps, root, name)
		}
		switch {
		case !reached:
			return 0, "the pages that lead to it are damaged"
		case !ok && t.tx.Writable():
			return 0, "it is not on the file's pages: this transaction put it, or there is no such record"
		case !ok && i == len(names)-1:
			return 0, "there is no such record (what is damaged is a record missing, or one that names it)"
		case !ok:
			return 0, fmt.Sprintf("there is no collection %s", QuoteKey(name))
		}
		if i == len(names)-1 {
			return at, ""
		}
		if len(value) < bucketHeaderSize {
			return 0, fmt.Sprintf("%s is a record, not a collection", QuoteKey(name))
		}
		if root = native.Uint64(value); root == 0 {
			inline = value[bucketHeaderSize:]
		} else {
			inline = nil
		}
	}
	return 0, ""
}

// findInTree descends the B+tree rooted at page root to the leaf that holds
// key, and returns that page, key's value and whether it is there; reached
// is false when the descent met a page it could not read.
func findInTree(data []byte, ps, root uint64, key []byte) (leaf uint64, value []byte, ok, reached bool) {
	id := root
	for depth := 0; depth <= maxNesting; depth++ {
		if (id+1)*ps > uint64(len(data)) {
			return 0, nil, false, false
		}
		h := data[id*ps:]
		end := (id + 1 + uint64(native.Uint32(h[12:]))) * ps
		if end > uint64(len(data)) {
			return 0, nil, false, false
		}
		b := data[id*ps : end]
		switch native.Uint16(b[8:]) {
		case leafPage:
			if _, ok := elements(b); !ok {
				return 0, nil, false, false
			}
			v, ok := findInLeaf(b, key)
			return id, v, ok, true
		case branchPage:
			n, ok := elements(b)
			if !ok || n == 0 {
				return 0, nil, false, false
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
			return 0, nil, false, false
		}
	}
	return 0, nil, false, false
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
