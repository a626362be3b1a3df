package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openDB opens path for a test. At cleanup it runs Check, which must pass,
// and closes the database. If the test closed the handle itself, the file is
// reopened for the check, so every database a test leaves behind is checked.
func openDB(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		err := db.Check()
		if errors.Is(err, ErrClosed) {
			// Check, not the open, checks it: a writer's open would refuse
			// a record a test damaged on purpose, by its checksum.
			again, openErr := Open(path, Options{LockTimeout: time.Second, ReadOnly: opts.ReadOnly, CheckUpTo: -1, WalkUpTo: -1})
			if openErr != nil {
				t.Errorf("reopen %s for the final check: %v", path, openErr)
				return
			}
			defer again.Close()
			err = again.Check()
		}
		if err != nil {
			t.Errorf("Check(%s) = %v, want nil", path, err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("Close(%s): %v", path, err)
		}
	})
	return db
}

// newDB opens a fresh database in the test's temporary directory.
func newDB(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	return openDB(t, path, Options{}), path
}

// payload is a deterministic event body for exec/seq, padded to size bytes.
func payload(exec string, seq uint64, size int) []byte {
	b := make([]byte, size)
	// Filler that does not compress, so the layout tests see chunks of
	// about the sizes they append.
	x := seq*0x9E3779B97F4A7C15 + uint64(len(exec)) + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	copy(b, fmt.Sprintf("%s:%d:", exec, seq))
	return b
}

// appendEvents appends n events to exec, one Update each, and returns the
// sequence numbers they got.
func appendEvents(t testing.TB, db *DB, exec string, n int) []uint64 {
	t.Helper()
	seqs := make([]uint64, 0, n)
	for range n {
		var got uint64
		err := db.Update(func(tx *Tx) error {
			seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
				return payload(exec, seq, 32), nil
			})
			got = seq
			return err
		})
		if err != nil {
			t.Fatalf("append to %s: %v", exec, err)
		}
		seqs = append(seqs, got)
	}
	return seqs
}

// mustFail checks err wraps want and names path.
func mustFail(t *testing.T, err error, want error, path string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q does not wrap %q", err, want)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name the file %s", err, path)
	}
}

// openMustFail opens path and expects an error wrapping want that names path.
func openMustFail(t *testing.T, path string, opts Options, want error) error {
	t.Helper()
	db, err := Open(path, opts)
	if err == nil {
		db.Close()
		t.Fatalf("Open(%s, %+v) succeeded, want %v", path, opts, want)
	}
	mustFail(t, err, want, path)
	return err
}

// schemaOf reads the raw schema record.
func schemaOf(t *testing.T, db *DB) uint64 {
	t.Helper()
	var v []byte
	err := db.View(func(tx *Tx) error {
		v = clone(tx.tx.Bucket([]byte(bucketMeta)).Get([]byte("schema")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 8 {
		t.Fatalf("schema record is %x, want 8 bytes", v)
	}
	return binary.BigEndian.Uint64(v)
}

// editBolt runs fn on the file with the bare bbolt API.
func editBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesFileWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db := openDB(t, path, Options{})
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("mode = %v, want 0600", perm)
	}
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Fatalf("schema = %d, want %d", got, SchemaVersion)
	}
	if db.Path() != path {
		t.Fatalf("Path() = %q, want %q", db.Path(), path)
	}
}

func TestReopenKeepsData(t *testing.T) {
	db, path := newDB(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutExecution("e1", []byte("record-1")); err != nil {
			return err
		}
		if err := tx.PutJournal("e1", "step-a", []byte("done")); err != nil {
			return err
		}
		return tx.Put(Outbox, []byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, db, "e1", 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, path, Options{})
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Fatalf("schema after reopen = %d, want %d", got, SchemaVersion)
	}
	err = db.View(func(tx *Tx) error {
		if got := string(tx.Execution("e1")); got != "record-1" {
			t.Errorf("Execution = %q", got)
		}
		if got := tx.ExecutionCount(); got != 1 {
			t.Errorf("ExecutionCount = %d, want 1", got)
		}
		if got := string(tx.Journal("e1", "step-a")); got != "done" {
			t.Errorf("Journal = %q", got)
		}
		if got := string(tx.Get(Outbox, []byte("k"))); got != "v" {
			t.Errorf("Outbox k = %q", got)
		}
		if got := tx.LastSeq("e1"); got != 3 {
			t.Errorf("LastSeq = %d, want 3", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The next append continues the sequence.
	if seqs := appendEvents(t, db, "e1", 1); seqs[0] != 4 {
		t.Fatalf("append after reopen got seq %d, want 4", seqs[0])
	}
}

func TestSecondOpenFailsWithErrLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	first := openDB(t, path, Options{})
	for _, readOnly := range []bool{false, true} {
		start := time.Now()
		err := openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond, ReadOnly: readOnly}, ErrLocked)
		if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
			t.Fatalf("ReadOnly=%v: second Open took %v, want < 1.5s", readOnly, elapsed)
		}
		t.Logf("ReadOnly=%v: %v", readOnly, err)
	}
	// The first handle is unaffected, and closing it releases the lock.
	appendEvents(t, first, "x", 1)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := openDB(t, path, Options{LockTimeout: 200 * time.Millisecond})
	if got := tx1LastSeq(t, second, "x"); got != 1 {
		t.Fatalf("LastSeq = %d, want 1", got)
	}
}

func tx1LastSeq(t *testing.T, db *DB, exec string) uint64 {
	t.Helper()
	var n uint64
	if err := db.View(func(tx *Tx) error { n = tx.LastSeq(exec); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReadOnlyOpensShareTheFile(t *testing.T) {
	db, path := newDB(t)
	appendEvents(t, db, "x", 2)
	db.Close()
	a := openDB(t, path, Options{ReadOnly: true})
	b := openDB(t, path, Options{ReadOnly: true})
	if tx1LastSeq(t, a, "x") != 2 || tx1LastSeq(t, b, "x") != 2 {
		t.Fatal("read-only handles do not see the data")
	}
	// A writer cannot get in while readers hold the file.
	openMustFail(t, path, Options{LockTimeout: 100 * time.Millisecond}, ErrLocked)
}

func TestOpenGarbageFileIsCorrupt(t *testing.T) {
	cases := map[string][]byte{
		"64KiB of 0xAB":             bytes.Repeat([]byte{0xAB}, 64<<10),
		"hello":                     []byte("hello"),
		"5000 bytes, under 2 pages": bytes.Repeat([]byte{0xAB}, 5000),
		"one page of 0xAB":          bytes.Repeat([]byte{0xAB}, 4096),
		"16KiB of zeros":            make([]byte, 16<<10),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "garbage.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			err := openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
			t.Logf("%v", err)
			openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond, ReadOnly: true}, ErrCorrupt)
			// A failed open releases the lock: again ErrCorrupt, not ErrLocked.
			openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
			// And it does not write to a file it does not understand.
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, content) {
				t.Fatalf("Open modified the file: %d bytes before, %d after", len(content), len(after))
			}
		})
	}
}

// An empty file (as a crash right after creating it would leave) is treated
// as a new database when opened for writing; bbolt writes the initial pages.
// Opened read-only it cannot be initialised, so it is ErrCorrupt.
func TestOpenEmptyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	openMustFail(t, path, Options{ReadOnly: true}, ErrCorrupt)

	db := openDB(t, path, Options{})
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Fatalf("schema = %d, want %d", got, SchemaVersion)
	}
	appendEvents(t, db, "x", 3)
	if got := tx1LastSeq(t, db, "x"); got != 3 {
		t.Fatalf("LastSeq = %d", got)
	}
}

// buildDB writes a database with several executions of 200-byte events and
// returns its bytes and the high-water mark (bytes the pages in use reach).
func buildDB(t *testing.T, path string) (content []byte, hwm int64) {
	t.Helper()
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for e := range 20 {
		exec := fmt.Sprintf("exec-%02d", e)
		err := db.Update(func(tx *Tx) error {
			if err := tx.PutExecution(exec, []byte("rec")); err != nil {
				return err
			}
			for range 100 {
				if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
					return payload(exec, seq, 200), nil
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.View(func(tx *Tx) error { hwm = tx.tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	content, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return content, hwm
}

func TestOpenTruncatedFile(t *testing.T) {
	dir := t.TempDir()
	content, hwm := buildDB(t, filepath.Join(dir, "full.db"))
	size := int64(len(content))
	t.Logf("file %d bytes, pages in use reach %d", size, hwm)
	cuts := map[string]int64{
		"half the file":        size / 2,
		"half the pages":       hwm / 2,
		"one page short":       hwm - 4096,
		"one byte short":       hwm - 1,
		"three pages":          3 * 4096,
		"two pages (metas)":    2 * 4096,
		"one page":             4096,
		"100 bytes":            100,
		"exactly the pages":    hwm,
		"pages plus a partial": hwm + 100,
	}
	for name, cut := range cuts {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cut.db")
			if err := os.WriteFile(path, content[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			if cut < hwm {
				err := openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
				t.Logf("cut at %d: %v", cut, err)
				openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond, ReadOnly: true}, ErrCorrupt)
				openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
				return
			}
			// Only free space past the high-water mark was cut: all data is there.
			db := openDB(t, path, Options{})
			err := db.View(func(tx *Tx) error {
				if n := tx.ExecutionCount(); n != 20 {
					t.Errorf("ExecutionCount = %d, want 20", n)
				}
				for e := range 20 {
					exec := fmt.Sprintf("exec-%02d", e)
					var n uint64
					if err := tx.Events(exec, 1, func(seq uint64, data []byte) bool {
						n++
						if seq != n || !bytes.Equal(data, payload(exec, seq, 200)) {
							t.Errorf("%s: event %d is seq %d %q", exec, n, seq, data[:16])
						}
						return true
					}); err != nil {
						return err
					}
					if n != 100 {
						t.Errorf("%s has %d events, want 100", exec, n)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// historyRootPage returns the page size and a leaf page that holds events of
// exec and of no other execution (histories share a bucket, so the page is in
// the middle of exec's run of keys). It walks the bucket's pages from its
// root as bbolt lays them out: a 16-byte header (id, flags, count,
// overflow), then count elements of 16 bytes, on a branch page (pos, key
// size, child page id), on a leaf page (flags, pos, key size, value size),
// pos counted from the element.
func historyRootPage(t *testing.T, path, exec string) (pageSize int, root uint64) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pageSize = b.Info().PageSize
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var prefix []byte
	var top uint64
	err = b.View(func(tx *bolt.Tx) error {
		prefix = clone(tx.Bucket([]byte(bucketHistoryIDs)).Get([]byte(exec)))
		top = uint64(tx.Bucket([]byte(bucketHistoryEvents)).Root())
		return nil
	})
	if err != nil || prefix == nil || top == 0 {
		t.Fatalf("no history pages for %s (%v)", exec, err)
	}
	// The leaves in key order, and whether each holds only exec's events.
	type leaf struct {
		id   uint64
		only bool
	}
	var leaves []leaf
	var walk func(id uint64)
	walk = func(id uint64) {
		p := data[id*uint64(pageSize) : (id+1)*uint64(pageSize)]
		flags := binary.LittleEndian.Uint16(p[8:])
		count := int(binary.LittleEndian.Uint16(p[10:]))
		only := count > 0
		for i := range count {
			e := p[16+16*i:]
			switch flags {
			case 0x01: // branch
				walk(binary.LittleEndian.Uint64(e[8:]))
			case 0x02: // leaf
				pos := int(binary.LittleEndian.Uint32(e[4:]))
				ksize := int(binary.LittleEndian.Uint32(e[8:]))
				start := 16 + 16*i + pos
				only = only && bytes.HasPrefix(p[start:start+ksize], prefix)
			}
		}
		if flags == 0x02 {
			leaves = append(leaves, leaf{id, only})
		}
	}
	walk(top)
	// A cursor that seeks past the last key of a page reads the next one, so
	// the execution before exec, seeking past its end, reads the first page
	// of exec's keys: take a page after that one.
	for i := 1; i < len(leaves); i++ {
		if leaves[i-1].only && leaves[i].only {
			return pageSize, leaves[i].id
		}
	}
	t.Fatalf("no page in the middle of %s's events", exec)
	return pageSize, root
}

// A damaged page deep in one history makes bbolt panic inside a cursor. View
// and Update must turn that into ErrCorrupt for that execution's reads only; the
// rest of the database stays usable.
func TestDamagedPageBecomesErrCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.db")
	buildDB(t, path)
	pageSize, root := historyRootPage(t, path, "exec-07")

	// Overwrite the page: an unknown page type, no elements, junk after.
	page := bytes.Repeat([]byte{0xAB}, pageSize)
	binary.LittleEndian.PutUint64(page[0:], root) // id
	binary.LittleEndian.PutUint16(page[8:], 0x40) // flags: no such page type
	binary.LittleEndian.PutUint16(page[10:], 0)   // count
	binary.LittleEndian.PutUint32(page[12:], 0)   // overflow
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(page, int64(root)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// A file this small is checked in full at open (see
	// TestDamagedPageRefusedBeforeAnyWrite); a large one is not, and then
	// the damage surfaces where it is read.
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("Open of a small damaged file: %v, want it refused", err)
	}
	db, err := Open(path, Options{CheckUpTo: -1, WalkUpTo: -1})
	if err != nil {
		t.Fatalf("Open: %v (the damage is only reachable through exec-07)", err)
	}
	defer db.Close()

	err = db.View(func(tx *Tx) error {
		return tx.Events("exec-07", 1, func(uint64, []byte) bool { return true })
	})
	mustFail(t, err, ErrCorrupt, path)
	t.Logf("View: %v", err)

	// An append seeks past the end of exec-07's keys and need not read the
	// damaged page; a read inside an Update does.
	err = db.Update(func(tx *Tx) error {
		return tx.Events("exec-07", 1, func(uint64, []byte) bool { return true })
	})
	mustFail(t, err, ErrCorrupt, path)
	t.Logf("Update: %v", err)

	// Other executions still read, but nothing more is written to a file
	// found damaged: the append is refused, in one line, and the file is
	// left as it was.
	if got := tx1LastSeq(t, db, "exec-06"); got != 100 {
		t.Fatalf("LastSeq(exec-06) = %d, want 100", got)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = appendOne(db, "exec-08")
	mustFail(t, err, ErrCorrupt, path)
	if want := "refused: database file is corrupt or not a retrylab database: page "; !strings.Contains(err.Error(), want) ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("append after the damage: %v\nwant one line with %q", err, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a write reached the damaged file")
	}

	err = db.Check()
	mustFail(t, err, ErrCorrupt, path)
	t.Logf("Check: %.200s", err)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendOne(db *DB, exec string) (uint64, error) {
	var got uint64
	err := db.Update(func(tx *Tx) error {
		seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
			return payload(exec, seq, 200), nil
		})
		got = seq
		return err
	})
	return got, err
}

// A damaged page in a small file is refused at open, in our words, before
// anything is written: the file stays byte for byte as it was.
func TestDamagedPageRefusedBeforeAnyWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.db")
	buildDB(t, path)
	pageSize, root := historyRootPage(t, path, "exec-07")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The page's header names another page.
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, root+1000), int64(root)*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	mustFail(t, err, ErrCorrupt, path)
	want := fmt.Sprintf("page %d is damaged (its header says it is page %d); nothing was written to it", root, root+1000)
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "assertion") {
		t.Errorf("Open: %v\nwant it to say %q", err, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the damaged file was written to")
	}
	// A read-only open walks the pages' bounds of a file this small, and
	// says the same; one that does not leaves it to Check.
	_, err = Open(path, Options{ReadOnly: true})
	mustFail(t, err, ErrCorrupt, path)
	if !strings.Contains(err.Error(), fmt.Sprintf("page %d is damaged (its header says it is page %d)", root, root+1000)) {
		t.Errorf("read-only Open: %v", err)
	}
	ro, err := Open(path, Options{ReadOnly: true, CheckUpTo: -1, WalkUpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	err = ro.Check()
	mustFail(t, err, ErrCorrupt, path)
	if !strings.Contains(err.Error(), fmt.Sprintf("page %d is damaged", root)) || strings.Contains(err.Error(), "panic") {
		t.Errorf("Check: %v", err)
	}
}

// A damaged freelist page makes bbolt panic inside bolt.Open itself. The
// open fails with ErrCorrupt and must not keep the file locked.
func TestDamagedFreelistReleasesLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "freelist.db")
	buildDB(t, path)
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Meta pages start with a 16-byte page header; in the meta, the freelist
	// page id is at offset 32 and the transaction id at 48.
	meta := func(i int) (freelist, txid uint64) {
		m := content[i*4096+16:]
		return binary.LittleEndian.Uint64(m[32:]), binary.LittleEndian.Uint64(m[48:])
	}
	fl0, tx0 := meta(0)
	fl1, tx1 := meta(1)
	freelist := fl0
	if tx1 > tx0 {
		freelist = fl1
	}
	if freelist < 2 || int(freelist+1)*4096 > len(content) {
		t.Fatalf("freelist page %d out of range; meta layout not as expected", freelist)
	}
	copy(content[freelist*4096:(freelist+1)*4096], bytes.Repeat([]byte{0xAB}, 4096))
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	err = openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
	t.Logf("%v", err)
	// Not ErrLocked: the handle bbolt opened before panicking was closed.
	openMustFail(t, path, Options{LockTimeout: 200 * time.Millisecond}, ErrCorrupt)
}

func TestNewerSchemaRefused(t *testing.T) {
	db, path := newDB(t)
	appendEvents(t, db, "x", 1)
	db.Close()
	editBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(SchemaVersion+1))
	})
	for _, readOnly := range []bool{false, true} {
		err := openMustFail(t, path, Options{ReadOnly: readOnly}, ErrNewerSchema)
		for _, want := range []string{fmt.Sprintf("v%d", SchemaVersion+1), fmt.Sprintf("v%d", SchemaVersion)} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not mention %s", err, want)
			}
		}
	}
	// The refused open left the record alone.
	editBolt(t, path, func(tx *bolt.Tx) error {
		if got := DecodeU64(tx.Bucket([]byte(bucketMeta)).Get([]byte("schema"))); got != SchemaVersion+1 {
			t.Errorf("schema now %d", got)
		}
		// Put it back so the cleanup check can open the file.
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(SchemaVersion))
	})
}

func TestBadSchemaRecordIsCorrupt(t *testing.T) {
	db, path := newDB(t)
	db.Close()
	editBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), []byte("one"))
	})
	openMustFail(t, path, Options{}, ErrCorrupt)
	editBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(SchemaVersion))
	})
}

// A bbolt file written by another program has buckets but no retrylab
// metadata. It is refused rather than adopted and written to.
func TestForeignBoltFileIsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	editBolt(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("their-bucket"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	openMustFail(t, path, Options{}, ErrCorrupt)
	openMustFail(t, path, Options{ReadOnly: true}, ErrCorrupt)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("Open wrote to a foreign bbolt file")
	}

	// A bbolt file with no buckets at all is adopted as a new database.
	empty := filepath.Join(t.TempDir(), "bare.db")
	editBolt(t, empty, func(*bolt.Tx) error { return nil })
	db := openDB(t, empty, Options{})
	if got := schemaOf(t, db); got != SchemaVersion {
		t.Fatalf("schema = %d", got)
	}
}

// Tests run as root here, so a read-only directory would still be
// writable; a path whose parent is a regular file fails for everyone.
func TestOpenUnwritablePath(t *testing.T) {
	dir := t.TempDir()
	parent := filepath.Join(dir, "file")
	if err := os.WriteFile(parent, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(parent, "db")
	for _, readOnly := range []bool{false, true} {
		db, err := Open(path, Options{ReadOnly: readOnly})
		if err == nil {
			db.Close()
			t.Fatalf("ReadOnly=%v: Open(%s) succeeded", readOnly, path)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q does not name %s", err, path)
		}
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLocked) {
			t.Fatalf("error %q misclassified", err)
		}
		t.Logf("ReadOnly=%v: %v", readOnly, err)
	}

	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(ro, "db")
		_, err := Open(path, Options{})
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open in read-only dir: %v, want a permission error naming %s", err, path)
		}
	}
}

func TestReadOnlyOpen(t *testing.T) {
	db, path := newDB(t)
	appendEvents(t, db, "x", 5)
	db.Close()

	ro := openDB(t, path, Options{ReadOnly: true})
	if got := tx1LastSeq(t, ro, "x"); got != 5 {
		t.Fatalf("LastSeq = %d, want 5", got)
	}
	err := ro.Update(func(tx *Tx) error {
		t.Error("Update ran its function on a read-only database")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Update on read-only db = %v, want an error saying read-only and naming the file", err)
	}
	// A write inside View fails too (bbolt refuses it).
	err = ro.View(func(tx *Tx) error {
		_, err := tx.AppendEvent("x", func(uint64) ([]byte, error) { return []byte("no"), nil })
		return err
	})
	if err == nil {
		t.Fatal("AppendEvent inside View on a read-only db succeeded")
	}

	missing := filepath.Join(t.TempDir(), "missing.db")
	_, err = Open(missing, Options{ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("read-only Open of a missing file = %v, want ErrNotExist naming it", err)
	}
	if _, statErr := os.Stat(missing); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatalf("read-only Open created %s", missing)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	db, path := newDB(t)
	appendEvents(t, db, "x", 1)
	for range 3 {
		if err := db.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := db.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Update after Close = %v, want ErrClosed", err)
	}
	if err := db.View(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
	if err := db.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Check after Close = %v, want ErrClosed", err)
	}
	// A read-only handle closes cleanly twice as well.
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.View(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
}

// A panic in the caller's own function is a bug in the caller, not a damaged
// file: it must come back as an error that does not wrap ErrCorrupt, and the
// database must stay usable.
func TestPanicInFnIsNotCorruption(t *testing.T) {
	db, _ := newDB(t)
	err := db.View(func(*Tx) error { panic("view boom") })
	if err == nil || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "view boom") {
		t.Fatalf("View with a panicking fn = %v", err)
	}
	err = db.Update(func(tx *Tx) error {
		if err := tx.PutExecution("p", nil); err != nil {
			return err
		}
		var m map[string]int
		m["x"] = 1 // nil map write: a runtime panic in caller code
		return nil
	})
	if err == nil || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "nil map") {
		t.Fatalf("Update with a panicking fn = %v", err)
	}
	appendEvents(t, db, "after", 2)
	err = db.View(func(tx *Tx) error {
		if tx.Execution("p") != nil || tx.ExecutionCount() != 0 {
			t.Error("the panicking Update was committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A writer raises an older file (v1: events stored as JSON; v2: a bucket per
// history) to the current schema as it opens it, so a build that knows only
// the older layout refuses the file once the new one is in it; a reader
// leaves the file as it is.
func TestWriterRaisesOlderFilesToCurrentSchema(t *testing.T) {
	for _, old := range []uint64{1, 2, 3, 4, 5, 6} {
		db, path := newDB(t)
		if err := db.Update(func(tx *Tx) error {
			return tx.tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(old))
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ro := openDB(t, path, Options{ReadOnly: true})
		if got := schemaOf(t, ro); got != old {
			t.Fatalf("a reader changed the schema from %d to %d", old, got)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		db = openDB(t, path, Options{})
		if got := schemaOf(t, db); got != SchemaVersion || SchemaVersion != 7 {
			t.Fatalf("schema after a writer opened a v%d file: %d, want %d", old, got, SchemaVersion)
		}
	}
}
