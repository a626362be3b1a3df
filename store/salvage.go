package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SalvageReport says what Salvage copied and what it could not read.
type SalvageReport struct {
	// Records is how many key/value records were copied, Buckets how many
	// buckets (nested ones included) were made.
	Records, Buckets int
	// Lost says, one line each, what could not be read: a page, and the
	// bucket it held records of.
	Lost []string
	// Histories are the history numbers one of whose chunks was not
	// copied (its checksum did not match): their executions' histories
	// are not whole, and RepairExecutions drops them.
	Histories [][]byte
}

// Salvage copies every record it can read from the file at src into a new
// database at dst (which must not exist), the way bbolt's own tools and
// SQLite's .recover give a way out of a damaged file. It reads src's bytes
// itself, not through bbolt, so that a page bbolt would refuse (or fault
// on) costs only the records on it and under it: each page is checked as
// walkPages checks it before it is followed, and one that fails is listed
// in the report and skipped, with the rest of the file copied. Bucket
// sequences are kept. src is opened read-only and never written.
func Salvage(src, dst string) (SalvageReport, error) {
	var rep SalvageReport
	f, err := os.Open(src)
	if err != nil {
		return rep, fmt.Errorf("salvage %s: %w", src, err)
	}
	defer f.Close()
	data, unmap, err := mapFile(f)
	if err != nil {
		return rep, fmt.Errorf("salvage %s: map: %w", src, err)
	}
	defer unmap()
	m, ps, err := salvageMeta(data)
	if err != nil && !hasMetaPage(data) {
		return rep, fmt.Errorf("salvage %s: %s is %w (no bbolt meta page in it); nothing can be copied", src, src, ErrNotDatabase)
	}
	if err != nil {
		return rep, fmt.Errorf("salvage %s: %w: %v; nothing can be copied", src, ErrCorrupt, err)
	}
	if _, err := os.Stat(dst); err == nil {
		return rep, fmt.Errorf("salvage: %s exists; name a new file", dst)
	}
	out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return rep, fmt.Errorf("salvage: create %s: %w", dst, err)
	}
	hwm := m.pgid
	if max := uint64(len(data)) / ps; hwm > max {
		rep.Lost = append(rep.Lost, fmt.Sprintf("pages %d to %d: past the end of the file (truncated)", max, hwm-1))
		hwm = max
	}
	s := &salvager{data: data, ps: ps, hwm: hwm, seen: make([]bool, hwm), rep: &rep}
	err = out.Update(func(tx *bolt.Tx) error {
		if err := s.subtree(m.root, nil, target{tx: tx}, 0); err != nil {
			return err
		}
		// Without its schema record the copy would not open: it gets
		// this build's, which reads every older layout.
		// A collection whose page was lost is made again, empty, as a
		// writer's Open makes it: readers need every one.
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		meta := tx.Bucket([]byte(bucketMeta))
		if len(meta.Get([]byte("schema"))) != 8 {
			rep.Lost = append(rep.Lost, fmt.Sprintf("the schema version (the copy says v%d)", SchemaVersion))
			if err := meta.Put([]byte("schema"), U64(SchemaVersion)); err != nil {
				return err
			}
		}
		if DecodeU64(meta.Get([]byte("schema"))) < sumsSince {
			return nil // no checksums to check
		}
		return dropBadSums(tx, &rep)
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
		return rep, fmt.Errorf("salvage %s into %s: %w", src, dst, err)
	}
	return rep, nil
}

// salvageMeta finds a valid meta page: at the page size the first one
// names, or, when neither is valid there, at the usual page sizes.
func salvageMeta(data []byte) (boltMeta, uint64, error) {
	sizes := metaPageSizes
	if len(data) >= pageHeaderSize+64 {
		if ps := int(native.Uint32(data[pageHeaderSize+8:])); ps >= 512 && ps <= 1<<20 {
			sizes = append([]int{ps}, sizes...)
		}
	}
	for _, ps := range sizes {
		if m, err := readMeta(data, ps); err == nil && m.pageSize >= 512 {
			return m, uint64(m.pageSize), nil
		}
	}
	return boltMeta{}, 0, errors.New("neither meta page is valid")
}

// salvager walks a file's pages as walkPages does, copying what it reads.
type salvager struct {
	data []byte
	ps   uint64
	hwm  uint64
	seen []bool
	rep  *SalvageReport
}

// target is where records go: the root (a nil bucket) or a bucket.
type target struct {
	tx *bolt.Tx
	b  *bolt.Bucket
}

func (t target) put(k, v []byte) error {
	if t.b == nil {
		return errors.New("a record outside any bucket")
	}
	return t.b.Put(k, v)
}

func (t target) bucket(name []byte) (*bolt.Bucket, error) {
	if t.b == nil {
		return t.tx.CreateBucketIfNotExists(name)
	}
	return t.b.CreateBucketIfNotExists(name)
}

// lose notes that the subtree at page id, under bucket path, is unreadable.
func (s *salvager) lose(path []string, id uint64, why string) {
	where := "the root bucket"
	if len(path) > 0 {
		where = "bucket " + fmt.Sprint(path)
	}
	s.rep.Lost = append(s.rep.Lost, fmt.Sprintf("page %d (%s): %s", id, where, why))
}

// page returns page id's bytes, overflow included, or why it cannot be read.
func (s *salvager) page(id uint64) ([]byte, string) {
	if id < 2 || id >= s.hwm {
		return nil, fmt.Sprintf("outside the file's pages 2 to %d", s.hwm-1)
	}
	if s.seen[id] {
		return nil, "reached another way too"
	}
	h := s.data[id*s.ps:]
	if got := native.Uint64(h); got != id {
		return nil, fmt.Sprintf("its header says it is page %d", got)
	}
	overflow := uint64(native.Uint32(h[12:]))
	if id+overflow >= s.hwm {
		return nil, fmt.Sprintf("it claims %d more pages, past the last", overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if s.seen[i] {
			return nil, fmt.Sprintf("its pages overlap page %d, reached before", i)
		}
	}
	for i := id; i <= id+overflow; i++ {
		s.seen[i] = true
	}
	return s.data[id*s.ps : (id+overflow+1)*s.ps], ""
}

// subtree copies the B+tree at page id, of the bucket at path (nil: the
// root bucket, whose records are buckets), into t.
func (s *salvager) subtree(id uint64, path []string, t target, depth int) error {
	if depth > maxNesting {
		s.lose(path, id, "pages nest too deep")
		return nil
	}
	b, why := s.page(id)
	if b == nil {
		s.lose(path, id, why)
		return nil
	}
	n, ok := elements(b)
	if !ok {
		s.lose(path, id, fmt.Sprintf("it claims %d elements, more than its bytes hold", n))
		return nil
	}
	switch flags := native.Uint16(b[8:]); flags {
	case branchPage:
		for i := 0; i < n; i++ {
			off := pageHeaderSize + i*elementSize
			if err := s.subtree(native.Uint64(b[off+8:]), path, t, depth+1); err != nil {
				return err
			}
		}
		return nil
	case leafPage:
		return s.leaf(id, b, path, t, depth)
	default:
		s.lose(path, id, fmt.Sprintf("no known page type: flags 0x%x", flags))
		return nil
	}
}

// leaf copies a leaf page's records, and the buckets it holds.
func (s *salvager) leaf(id uint64, b []byte, path []string, t target, depth int) error {
	n, ok := elements(b)
	if !ok {
		s.lose(path, id, fmt.Sprintf("it claims %d elements, more than its bytes hold", n))
		return nil
	}
	for i := 0; i < n; i++ {
		off := pageHeaderSize + i*elementSize
		flags, pos := native.Uint32(b[off:]), native.Uint32(b[off+4:])
		ksize, vsize := native.Uint32(b[off+8:]), native.Uint32(b[off+12:])
		if !within(b, off, pos, ksize, vsize) {
			s.lose(path, id, fmt.Sprintf("element %d lies outside the page", i))
			continue
		}
		start := uint64(off) + uint64(pos)
		k := b[start : start+uint64(ksize)]
		v := b[start+uint64(ksize) : start+uint64(ksize)+uint64(vsize)]
		if len(k) == 0 {
			s.lose(path, id, fmt.Sprintf("element %d has an empty key", i))
			continue
		}
		if flags&bucketLeafFlag == 0 {
			if err := t.put(k, v); err != nil {
				s.lose(path, id, fmt.Sprintf("element %d: %v", i, err))
				continue
			}
			s.rep.Records++
			continue
		}
		if len(v) < bucketHeaderSize {
			s.lose(path, id, fmt.Sprintf("element %d is a bucket of %d bytes", i, len(v)))
			continue
		}
		nb, err := t.bucket(k)
		if err != nil {
			s.lose(path, id, fmt.Sprintf("bucket %q in element %d: %v", k, i, err))
			continue
		}
		s.rep.Buckets++
		if err := nb.SetSequence(native.Uint64(v[8:])); err != nil {
			return err
		}
		sub := append(append([]string(nil), path...), string(k))
		inner := target{tx: t.tx, b: nb}
		if root := native.Uint64(v); root != 0 {
			if err := s.subtree(root, sub, inner, depth+1); err != nil {
				return err
			}
			continue
		}
		page := v[bucketHeaderSize:]
		if len(page) < pageHeaderSize || native.Uint16(page[8:]) != leafPage {
			s.lose(sub, id, fmt.Sprintf("the inline bucket in element %d has no readable page", i))
			continue
		}
		if depth > maxNesting {
			s.lose(sub, id, "buckets nest too deep")
			continue
		}
		if err := s.leaf(id, page, sub, inner, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// dropBadSums deletes from the copy in tx every record whose checksum does
// not match (collection.checkRecord, the check a writer's Open makes as it
// walks the pages), and lists each as lost: its bytes are not those
// written, and the copy would be refused by every writer with it in.
func dropBadSums(tx *bolt.Tx, rep *SalvageReport) error {
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		coll := collection{kind: collRoot}.nested(name)
		return dropBadSumsIn(b, coll, []string{string(name)}, rep, 0)
	})
}

// dropBadSumsIn is dropBadSums inside bucket b of collection coll, at path.
func dropBadSumsIn(b *bolt.Bucket, coll collection, path []string, rep *SalvageReport, depth int) error {
	var bad [][]byte
	type sub struct {
		name []byte
		b    *bolt.Bucket
	}
	var subs []sub
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				subs = append(subs, sub{append([]byte(nil), k...), nb})
			}
			continue
		}
		if err := coll.checkRecord(k, v, sumAll); err != nil {
			bad = append(bad, append([]byte(nil), k...))
			if (coll.kind == collChunks || coll.kind == collTails) && len(k) >= historyKeyLen {
				rep.Histories = append(rep.Histories, append([]byte(nil), k[:historyKeyLen]...))
			}
			rep.Lost = append(rep.Lost, fmt.Sprintf("record %s of bucket %v: %v", QuoteKey(k), path, err))
		}
	}
	for _, k := range bad {
		if err := b.Delete(k); err != nil {
			return err
		}
		rep.Records--
	}
	if depth >= maxNesting {
		return nil
	}
	for _, s := range subs {
		p := append(append([]string(nil), path...), string(s.name))
		if err := dropBadSumsIn(s.b, coll.nested(s.name), p, rep, depth+1); err != nil {
			return err
		}
	}
	return nil
}
