package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// pageKinds opens path read-only with bbolt and returns the type of every
// page below the high-water mark ("branch", "leaf", "free", "meta",
// "freelist"), the page size, and the current meta's freelist and root.
func pageKinds(t *testing.T, path string) (kinds []string, ps int, m boltMeta) {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = readMeta(content, os.Getpagesize()); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.View(func(tx *bolt.Tx) error {
		for id := 0; id < int(m.pgid); id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			kinds = append(kinds, p.Type)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds, int(m.pageSize), m
}

// damageAt writes b over path at off.
func damageAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func le64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
func le32(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

func first(kinds []string, kind string) uint64 {
	for id, k := range kinds {
		if k == kind {
			return uint64(id)
		}
	}
	return 0
}

// Each kind of damage that sent bbolt out of its pages (a fault in its
// check's own goroutine, which nothing recovers), round a loop (a stack
// overflow, or a hang on billions of overflow pages) or into a meta page
// is found by walking the pages, in one line naming the page, before bbolt
// reads it: a read-write open refuses the file without writing to it, a
// read-only open refuses it too, and Check says the same for a file too
// large to be walked at open.
func TestWalkPagesFindsDamageBeforeBboltFollowsIt(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.db")
	buildDB(t, src)
	kinds, ps, meta := pageKinds(t, src)
	branch, leaf := first(kinds, "branch"), first(kinds, "leaf")
	if branch == 0 || leaf == 0 || meta.freelist == noFreelist {
		t.Fatalf("buildDB's file has no branch (%d) or leaf (%d) page, or no freelist", branch, leaf)
	}
	pageOff := func(id uint64) int64 { return int64(id) * int64(ps) }
	cases := []struct {
		name string
		off  int64
		b    []byte
		want string
	}{
		{"a branch whose first element points to itself", pageOff(branch) + pageHeaderSize + 8, le64(branch),
			fmt.Sprintf("page %d is damaged (element 0 points to page %d, which is reached another way too)", branch, branch)},
		{"a branch that points past the last page", pageOff(branch) + pageHeaderSize + 8, le64(meta.pgid + 7),
			fmt.Sprintf("page %d is damaged (element 0 points to page %d, outside the file's pages 2 to %d)", branch, meta.pgid+7, meta.pgid-1)},
		{"a leaf with four billion overflow pages", pageOff(leaf) + 12, le32(0xFFFFFFFF),
			fmt.Sprintf("page %d is damaged (it claims 4294967295 more pages, past the file's last page %d)", leaf, meta.pgid-1)},
		{"a key four gigabytes long", pageOff(leaf) + pageHeaderSize + 8, le32(0xFFFFFFF0),
			fmt.Sprintf("page %d is damaged (the key or value of element 0 lies outside the page)", leaf)},
		{"a leaf claiming 65535 elements", pageOff(leaf) + 10, []byte{0xFF, 0xFF},
			fmt.Sprintf("page %d is damaged (it claims 65535 elements, more than its bytes hold)", leaf)},
		{"a freelist that gives out a meta page", pageOff(meta.freelist) + pageHeaderSize, le64(1),
			fmt.Sprintf("page %d is damaged (the freelist lists page 1, outside the file's pages 2 to %d)", meta.freelist, meta.pgid-1)},
		{"a page of no known type", pageOff(leaf) + 8, []byte{0x40, 0},
			fmt.Sprintf("page %d is damaged (its header has no known page type: flags 0x40)", leaf)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "damaged.db")
			content, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			damageAt(t, path, c.off, c.b)
			before, _ := os.ReadFile(path)

			err = openMustFail(t, path, Options{}, ErrCorrupt)
			if !strings.Contains(err.Error(), c.want+"; nothing was written to it") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open: %v\nwant one line with %q", err, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the damaged file was written to")
			}
			err = openMustFail(t, path, Options{ReadOnly: true}, ErrCorrupt)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("read-only Open: %v\nwant %q", err, c.want)
			}
			// A file too large for the full check at open has its pages'
			// bounds walked all the same, before anything is written.
			err = openMustFail(t, path, Options{CheckUpTo: 1}, ErrCorrupt)
			if !strings.Contains(err.Error(), c.want+"; nothing was written to it") {
				t.Errorf("Open of a file past CheckUpTo: %v\nwant %q", err, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the damaged file was written to")
			}
			// A file too large to walk at open (past WalkUpTo): Check
			// walks it first.
			ro, err := Open(path, Options{ReadOnly: true, CheckUpTo: -1, WalkUpTo: -1})
			if err != nil {
				// The damage may lie on the way to the schema record.
				mustFail(t, err, ErrCorrupt, path)
				return
			}
			defer ro.Close()
			err = ro.Check()
			mustFail(t, err, ErrCorrupt, path)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check: %v\nwant %q", err, c.want)
			}
		})
	}
}

// Every file bbolt and retrylab write passes the walk: each schema's
// testdata, a file of many histories, and one compacted.
func TestWalkPagesPassesHealthyFiles(t *testing.T) {
	built := filepath.Join(t.TempDir(), "built.db")
	buildDB(t, built)
	files := []string{built}
	for _, dir := range []string{"v1", "v2", "v4", "world1", "imported-v1", "damaged"} {
		files = append(files, filepath.Join("..", "testdata", dir, "retrylab.db"))
	}
	for _, path := range files {
		if err := walkFile(path, os.Getpagesize()); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// A fault on the mapped file inside a transaction (here: the file cut
// short under an open database, so bbolt's reads land past its end, a
// SIGBUS) is recovered on the reading goroutine and reported as damage, and
// the database refuses every write after it.
func TestFaultInATransactionIsDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.db")
	buildDB(t, path)
	db, err := Open(path, Options{CheckUpTo: -1, WalkUpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := os.Truncate(path, 2*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *Tx) error {
		for e := range 20 {
			if err := tx.Events(fmt.Sprintf("exec-%02d", e), 1, func(uint64, []byte) bool { return true }); err != nil {
				return err
			}
		}
		return nil
	})
	mustFail(t, err, ErrCorrupt, path)
	if !strings.Contains(err.Error(), "bbolt read outside the file's memory") || strings.Contains(err.Error(), "\n") {
		t.Errorf("View: %v\nwant one line saying bbolt read outside the file", err)
	}
	_, err = appendOne(db, "exec-21")
	mustFail(t, err, ErrCorrupt, path)
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("append after the fault: %v, want it refused", err)
	}
}

// damagedFixture is a real retrylab database (gen, runs, imports; see
// testdata/damaged/README.md) that the seeded damage below starts from.
const damagedFixture = "../testdata/damaged/retrylab.db"

// seededDamage returns n copies of content, each damaged in a way drawn
// from seed: bytes flipped (half of them in page headers and the first
// elements, where bbolt's structure lives), a page of garbage, a page of
// zeros, the file cut at a page boundary, a meta page zeroed.
func seededDamage(content []byte, ps int, seed uint64, n int) (names []string, files [][]byte) {
	r := rand.New(rand.NewPCG(seed, 1))
	pages := len(content) / ps
	for i := range n {
		b := bytes.Clone(content)
		var name string
		switch r.IntN(6) {
		case 0, 1, 2:
			var flips []string
			for range 1 + r.IntN(6) {
				off := r.IntN(len(b))
				if r.IntN(2) == 0 {
					off = r.IntN(pages)*ps + r.IntN(64)
				}
				x := byte(1 + r.IntN(255))
				b[off] ^= x
				flips = append(flips, fmt.Sprintf("%d^%02x", off, x))
			}
			name = "flip " + strings.Join(flips, ",")
		case 3:
			p := r.IntN(pages)
			for j := p * ps; j < (p+1)*ps; j++ {
				b[j] = byte(r.UintN(256))
			}
			name = fmt.Sprintf("garbage page %d", p)
		case 4:
			p := 2 + r.IntN(pages-2)
			clear(b[p*ps : (p+1)*ps])
			name = fmt.Sprintf("zero page %d", p)
		case 5:
			if r.IntN(2) == 0 {
				p := r.IntN(2)
				clear(b[p*ps : (p+1)*ps])
				name = fmt.Sprintf("zero meta page %d", p)
			} else {
				p := 1 + r.IntN(pages-1)
				b = b[:p*ps]
				name = fmt.Sprintf("cut at page %d", p)
			}
		}
		names = append(names, fmt.Sprintf("%d %s", i, name))
		files = append(files, b)
	}
	return names, files
}

// readEveryBucket reads every key and value of every bucket, nested ones too.
func readEveryBucket(db *DB) error {
	return db.View(func(tx *Tx) error {
		var walk func(b *bolt.Bucket)
		walk = func(b *bolt.Bucket) {
			_ = b.ForEach(func(k, v []byte) error {
				if v == nil {
					if child := b.Bucket(k); child != nil {
						walk(child)
					}
				}
				return nil
			})
		}
		return tx.tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	})
}

// Hundreds of seeded kinds of damage to a real database: opening it
// (read-write, read-only, and with the check at open turned off, as for a
// large file), reading every bucket, writing and checking it return
// errors, never a panic, a fault or a hang (any of which would end this
// test binary). Whatever is refused wraps ErrCorrupt and is one line; a
// damaged file that a read found damaged is not written to.
func TestSeededDamageIsAnErrorNeverACrash(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(damagedFixture)
	if err != nil {
		t.Fatal(err)
	}
	names, files := seededDamage(content, os.Getpagesize(), 1, 300)
	dir := t.TempDir()
	refused := 0
	for i, b := range files {
		path := filepath.Join(dir, fmt.Sprintf("d%03d.db", i))
		oneLine := func(what string, err error) {
			if err == nil {
				return
			}
			if !errors.Is(err, ErrCorrupt) && !strings.Contains(err.Error(), "incompatible value") {
				// bbolt's own errors for a bucket whose flags were flipped
				// are errors too; anything else says what it is.
				t.Logf("%s: %s: %v", names[i], what, err)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "goroutine") {
				t.Errorf("%s: %s: not one line: %v", names[i], what, err)
			}
		}
		// No fsync: what is tested is what damage does to an open, a read
		// and a write, not what survives a crash (TestKillDuringWrites).
		variants := []Options{{NoSync: true}, {ReadOnly: true}, {CheckUpTo: -1, WalkUpTo: -1, NoSync: true}}
		if raceDetector {
			// Unwalked pages reach bbolt's unsafe conversions, which
			// checkptr (on under -race) turns into a fatal error that
			// no build without it has: the walked opens still run.
			variants = variants[:2]
		}
		for _, opts := range variants {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := Open(path, opts)
			oneLine("open", err)
			if err != nil {
				refused++
				continue
			}
			readErr := readEveryBucket(db)
			oneLine("read", readErr)
			if !opts.ReadOnly {
				before, _ := os.ReadFile(path)
				werr := db.Update(func(tx *Tx) error { return tx.SetMeta("seeded", []byte("x")) })
				oneLine("write", werr)
				if errors.Is(readErr, ErrCorrupt) {
					if werr == nil {
						t.Errorf("%s: a write after the read found damage was committed", names[i])
					}
					if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
						t.Errorf("%s: the file was written to after the read found damage", names[i])
					}
				}
			}
			oneLine("check", db.Check())
			if err := db.Close(); err != nil {
				oneLine("close", err)
			}
		}
	}
	t.Logf("%d opens refused, of %d files", refused, len(files))
}
