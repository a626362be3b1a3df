package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
)

// walkPages checks, from the file's bytes and before bbolt follows them,
// every bound bbolt trusts when it reads the pages of a file: that each page
// a meta, branch or bucket points to lies inside the file and below the
// high-water mark, names itself in its header, has a page type, and holds
// its elements, keys and values inside its own bytes (overflow included);
// that no page is reachable twice (so no tree loops back on itself); and that
// the freelist names only pages that can be free.
//
// bbolt reads pages through its memory map and believes them: a damaged one
// sends it outside the map (a fault), round a loop (a hang, or a stack
// overflow, which nothing can recover) or past a slice (a panic). Its own
// consistency check (Tx.Check) reads them the same way, on a goroutine of its
// own where a fault cannot be caught. walkPages reads the file's bytes as a
// Go slice (mapped by walkFile), every index checked against the file's
// size first, so damage is an error here, never a fault; what it passes,
// bbolt can read and check without leaving the pages.
//
// It does not judge what bbolt's check judges safely (key order, pages
// neither reachable nor free, a reachable page also listed free): Check runs
// that after walkPages passes.
//
// The layout read here is bbolt's file format (go.etcd.io/bbolt, format
// version 2), in the machine's byte order as bbolt writes it.
func walkPages(data []byte, pageSize int) error {
	return walkPagesSums(data, pageSize, sumNone)
}

// walkPagesSums is walkPages that also checks the checksums of the records
// sums says on the leaves it walks (see checkRecord) when the file
// is of schema v7 on (as its meta collection, met on the way, says): what
// a writer's Open runs. A damaged page is reported before a damaged
// record, wherever each lies.
func walkPagesSums(data []byte, pageSize int, sums sumLevel) error {
	if pageSize < pageHeaderSize+2*elementSize {
		return fmt.Errorf("a page size of %d bytes", pageSize)
	}
	m, err := readMeta(data, pageSize)
	if err != nil {
		return err
	}
	if m.pgid > uint64(len(data))/uint64(pageSize) {
		if m.pgid > 1<<40 { // its bytes would not fit in a uint64
			return fmt.Errorf("file is %d bytes but its meta page says it holds %d pages (truncated?)", len(data), m.pgid)
		}
		return fmt.Errorf("file is %d bytes but its pages reach byte %d (truncated?)", len(data), m.pgid*uint64(pageSize))
	}
	if m.pgid < 2 {
		return fmt.Errorf("the meta page says the file holds %d pages", m.pgid)
	}
	w := &pageWalker{data: data, ps: uint64(m.pageSize), hwm: m.pgid, seen: make([]bool, m.pgid), sums: sums}
	w.seen[0], w.seen[1] = true, true // the meta pages
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	if err := w.tree(m.root, 0, from{fixed: "its root bucket"}, collection{kind: collRoot}); err != nil {
		return err
	}
	if w.schema >= sumsSince {
		return w.badRecord
	}
	return nil
}

// Offsets and sizes of bbolt's file format.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10

	bucketLeafFlag = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)
	// maxNesting bounds how deep buckets and pages may nest; bbolt's trees
	// of a retrylab file are a few levels deep.
	maxNesting = 256
)

var native = binary.NativeEndian

// boltMeta is what walkPages needs of a meta page.
type boltMeta struct {
	pageSize             uint32
	root, freelist, pgid uint64
	txid                 uint64
}

// readMeta reads both meta pages, ps bytes apart (the page size bbolt
// found), and picks the one bbolt opens: of those whose magic, version and
// checksum are right, the one with the higher transaction id.
func readMeta(data []byte, ps int) (boltMeta, error) {
	var metas []boltMeta
	for _, off := range []int{0, ps} {
		if !validMeta(data, off) {
			continue
		}
		body := data[off+pageHeaderSize:]
		metas = append(metas, boltMeta{pageSize: uint32(ps), root: native.Uint64(body[16:]),
			freelist: native.Uint64(body[32:]), pgid: native.Uint64(body[40:]), txid: native.Uint64(body[48:])})
	}
	switch {
	case len(metas) == 0:
		return boltMeta{}, errors.New("neither meta page is valid")
	case len(metas) == 2 && metas[1].txid > metas[0].txid:
		return metas[1], nil
	}
	return metas[0], nil
}

// validMeta reports whether the meta page at byte off of data is whole:
// its magic, version and checksum right.
func validMeta(data []byte, off int) bool {
	if len(data) < off+pageHeaderSize+64 {
		return false
	}
	body := data[off+pageHeaderSize:]
	h := fnv.New64a()
	h.Write(body[:56])
	return native.Uint32(body) == boltMagic && native.Uint32(body[4:]) == boltVersion && native.Uint64(body[56:]) == h.Sum64()
}

// checkMetaPages reports a damaged meta page of the file f, whose pages
// are ps bytes. bbolt opens a file with one damaged meta page at the
// other, which names the commit before the last: the file would read as
// of that commit, its last commit lost without a word. A reader refuses
// it instead; a writer's open goes on, as bbolt does after a write of the
// meta page torn by a power cut, and its first commit rewrites the page.
func checkMetaPages(f *os.File, ps int) error {
	head := make([]byte, 2*ps)
	if _, err := f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("its meta pages do not read: %w", err)
	}
	for i, off := range []int{0, ps} {
		if !validMeta(head, off) {
			return fmt.Errorf("meta page %d is damaged (its checksum does not match): the file would read as of the commit before its last, "+
				"which is lost (a command that writes opens it so, and rewrites the page)", i)
		}
	}
	return nil
}

// from says which page (or the meta page, page 0 here) points to a page,
// and through what, for the walk's messages. It is put into words only
// when a message needs it: a walk passes millions of pointers.
type from struct {
	page   uint64 // 0: the meta page
	inline string // the inline bucket of page the pointer lies in, if any
	fixed  string // what points, when not an element ("its root bucket")
	elem   int    // the element that points
	bucket bool   // a bucket's root, rather than a branch's child
}

// what names the page that points.
func (f from) what() string {
	switch {
	case f.page == 0:
		return "the meta page"
	case f.inline != "":
		return fmt.Sprintf("%s of page %d", f.inline, f.page)
	}
	return fmt.Sprintf("page %d", f.page)
}

// via names what in it points.
func (f from) via() string {
	switch {
	case f.fixed != "":
		return f.fixed
	case f.bucket:
		return fmt.Sprintf("the bucket in element %d", f.elem)
	}
	return fmt.Sprintf("element %d", f.elem)
}

type pageWalker struct {
	data []byte // the whole file
	ps   uint64
	hwm  uint64 // pages below it are the file's, and lie inside data
	seen []bool // pages reached (or listed free)
	// sums says to check the sealed records' checksums too (checkRecord);
	// badRecord is the first whose sum does not match, and schema the
	// file's version, once its meta collection is walked: the sums count
	// only in a file of v7 on.
	sums      sumLevel
	badRecord error
	schema    uint64
}

// page reads page id, with its overflow, after checking that it lies below
// the high-water mark and that nothing reached it before. f says which
// page (or meta) points to it, and through what.
func (w *pageWalker) page(id uint64, f from) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("%s is damaged (%s points to page %d, outside the file's pages 2 to %d)", f.what(), f.via(), id, w.hwm-1)
	}
	if w.seen[id] {
		return nil, fmt.Errorf("%s is damaged (%s points to page %d, which is reached another way too)", f.what(), f.via(), id)
	}
	h := w.data[id*w.ps:]
	if got := native.Uint64(h); got != id {
		return nil, fmt.Errorf("page %d is damaged (its header says it is page %d)", id, got)
	}
	overflow := uint64(native.Uint32(h[12:]))
	if id+overflow >= w.hwm {
		return nil, fmt.Errorf("page %d is damaged (it claims %d more pages, past the file's last page %d)", id, overflow, w.hwm-1)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, fmt.Errorf("page %d is damaged (its %d more pages overlap page %d, reached before)", id, overflow, i)
		}
		w.seen[i] = true
	}
	return w.data[id*w.ps : (id+overflow+1)*w.ps], nil
}

// freelist checks the freelist page and the ids it lists: each a page that
// can be free (not a meta page, below the high-water mark), listed once.
func (w *pageWalker) freelist(id uint64) error {
	b, err := w.page(id, from{fixed: "its freelist"})
	if err != nil {
		return err
	}
	if flags := native.Uint16(b[8:]); flags != freelistPage {
		return fmt.Errorf("page %d is damaged (the freelist's page has type flags 0x%x)", id, flags)
	}
	count, start := uint64(native.Uint16(b[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF { // a long list keeps its length in its first id
		count, start = native.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > (uint64(len(b))-start)/8 {
		return fmt.Errorf("page %d is damaged (the freelist claims %d ids, more than its pages hold)", id, count)
	}
	listed := make(map[uint64]bool, count)
	for i := uint64(0); i < count; i++ {
		free := native.Uint64(b[start+8*i:])
		if free < 2 || free >= w.hwm {
			return fmt.Errorf("page %d is damaged (the freelist lists page %d, outside the file's pages 2 to %d)", id, free, w.hwm-1)
		}
		if listed[free] {
			return fmt.Errorf("page %d is damaged (the freelist lists page %d twice)", id, free)
		}
		listed[free] = true
	}
	return nil
}

// tree walks the B+tree whose root is page id, which f points to.
func (w *pageWalker) tree(id uint64, depth int, f from, coll collection) error {
	if depth > maxNesting {
		return fmt.Errorf("%s is damaged (pages nest more than %d deep under it)", f.what(), maxNesting)
	}
	b, err := w.page(id, f)
	if err != nil {
		return err
	}
	switch flags := native.Uint16(b[8:]); flags {
	case branchPage:
		return w.branch(id, b, depth, coll)
	case leafPage:
		return w.leaf(id, "", b, depth, coll)
	default:
		return fmt.Errorf("page %d is damaged (its header has no known page type: flags 0x%x)", id, flags)
	}
}

// elements checks that a page's count of elements fits in its bytes.
func elements(b []byte) (int, bool) {
	n := int(native.Uint16(b[10:]))
	return n, pageHeaderSize+n*elementSize <= len(b)
}

// within checks that the bytes an element at off points to (pos bytes on
// from it, n of them, then m more) lie inside the page b.
func within(b []byte, off int, pos, n, m uint32) bool {
	end := uint64(off) + uint64(pos) + uint64(n) + uint64(m)
	return end <= uint64(len(b))
}

func (w *pageWalker) branch(id uint64, b []byte, depth int, coll collection) error {
	what := func() string { return fmt.Sprintf("page %d", id) }
	n, ok := elements(b)
	if !ok {
		return fmt.Errorf("%s is damaged (it claims %d elements, more than its bytes hold)", what(), n)
	}
	if n == 0 {
		return fmt.Errorf("%s is damaged (a branch page with no elements)", what())
	}
	children := make([]uint64, n)
	for i := range children {
		off := pageHeaderSize + i*elementSize
		if !within(b, off, native.Uint32(b[off:]), native.Uint32(b[off+4:]), 0) {
			return fmt.Errorf("%s is damaged (the key of element %d lies outside the page)", what(), i)
		}
		children[i] = native.Uint64(b[off+8:])
	}
	for i, child := range children {
		if err := w.tree(child, depth+1, from{page: id, elem: i}, coll); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks the elements of a leaf page, page id or (when inline is
// not "") an inline bucket's page in it, and walks the buckets it holds: a
// bucket's value is its header, and an inline bucket's page follows it.
func (w *pageWalker) leaf(id uint64, inline string, b []byte, depth int, coll collection) error {
	what := func() string {
		if inline != "" {
			return fmt.Sprintf("%s of page %d", inline, id)
		}
		return fmt.Sprintf("page %d", id)
	}
	n, ok := elements(b)
	if !ok {
		return fmt.Errorf("%s is damaged (it claims %d elements, more than its bytes hold)", what(), n)
	}
	for i := 0; i < n; i++ {
		off := pageHeaderSize + i*elementSize
		flags, pos := native.Uint32(b[off:]), native.Uint32(b[off+4:])
		ksize, vsize := native.Uint32(b[off+8:]), native.Uint32(b[off+12:])
		if !within(b, off, pos, ksize, vsize) {
			return fmt.Errorf("%s is damaged (the key or value of element %d lies outside the page)", what(), i)
		}
		kstart := uint64(off) + uint64(pos)
		start := kstart + uint64(ksize)
		value := b[start : start+uint64(vsize)]
		if flags&bucketLeafFlag == 0 {
			if w.sums != sumNone {
				w.record(id, coll, b[kstart:start], value)
			}
			continue
		}
		inner := coll.nested(b[kstart:start])
		if len(value) < bucketHeaderSize {
			return fmt.Errorf("%s is damaged (element %d is a bucket of %d bytes)", what(), i, len(value))
		}
		if root := native.Uint64(value); root != 0 {
			if err := w.tree(root, depth+1, from{page: id, inline: inline, elem: i, bucket: true}, inner); err != nil {
				return err
			}
			continue
		}
		page := value[bucketHeaderSize:]
		if len(page) < pageHeaderSize {
			return fmt.Errorf("%s is damaged (the inline bucket in element %d has no page)", what(), i)
		}
		if flags := native.Uint16(page[8:]); flags != leafPage {
			return fmt.Errorf("%s is damaged (the inline bucket in element %d has page type flags 0x%x)", what(), i, flags)
		}
		if depth > maxNesting {
			return fmt.Errorf("%s is damaged (buckets nest more than %d deep under it)", what(), maxNesting)
		}
		in := fmt.Sprintf("the inline bucket in element %d", i)
		if inline != "" {
			in += " of " + inline
		}
		if err := w.leaf(id, in, page, depth+1, inner); err != nil {
			return err
		}
	}
	return nil
}
