// Package store keeps retrylab's durable state in one bbolt file.
//
// The store knows buckets and bytes, not agents: the engine decides what an
// event or a journal record means. It offers three things the engine needs:
//
//   - per-execution append-only histories, read in sequence order, the
//     short ones of many executions sharing pages;
//   - named key/value collections (journal, outbox, key store, CRM, ...);
//   - group commit: concurrent Update calls are folded into one fsynced bbolt
//     transaction, and each caller returns only after that commit.
//
// A database is opened with a lock timeout, so a second process gets a clear
// error naming the file instead of hanging, and carries a schema version.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this build writes and understands.
//
// v7: the values of every collection but the schema metadata, the
// executions' creation order and the histories (execution records,
// journal records, and every owner's collection) are stored sealed,
// followed by the CRC-32C of their key and bytes (see seal), so that
// damage that leaves a record decodable is found, not read as data. A
// writer that opens an older file seals its values in the transaction
// that raises its schema (an interrupted one is redone at the next open);
// a read-only open reads them as they are.
// v6: a history's growing last chunk (its tail) is kept in a bucket of
// tails, history_tails, apart from its sealed chunks in history_events,
// and moves there sealed when it is full or its execution finishes (see
// Tx.AppendEvent): a group commit of many writers then rewrites the few
// pages of tails instead of a page of every writer's chunks. The last
// chunk of a v5 history, in history_events, reads as it is and moves to
// history_tails on the history's next append. v5: history chunks are stored compressed, by S2
// (github.com/klauspost/compress/s2) with the preset dictionary
// chunkdict.bin (see encodeChunk); chunks of older files are plain and stay
// readable. A history's growing last chunk is compressed by S2's fast
// encoder until it is full or sealed (see Tx.AppendEvent,
// Tx.SealHistory). Execution records, the world's records (engine/world)
// and journal records are stored packed, journals flat in one bucket; engine/otlp's span index
// holds one entry per run of a trace's spans instead of one per span. JSON
// records, per-execution journal buckets and per-span index entries of
// older files still read. v4: spans imported from OpenTelemetry
// (engine/otlp's spans bucket) are stored in engine/otlp's compact binary
// encoding; earlier files hold them as JSON objects. v3: histories of every
// execution share one bucket
// (history_events, see Tx.AppendEvent); v2 gave each execution a bucket of
// its own, and files that have them keep them and go on appending to them.
// v2: history events are stored in engine/history's compact encoding; v1
// stored them as JSON. This build reads all of these; a writer raises an
// older file to v7 when it opens it, so a build that knows only an older
// layout refuses the file instead of misreading or missing what it holds.
const SchemaVersion = 7

// Sentinel errors, checked with errors.Is.
var (
	// ErrLocked means another process holds the database file.
	ErrLocked = errors.New("database is locked by another process")
	// ErrCorrupt means the file is not a readable retrylab database.
	ErrCorrupt = errors.New("database file is corrupt or not a retrylab database")
	// ErrNewerSchema means the file was written by a newer retrylab.
	ErrNewerSchema = errors.New("database was written by a newer retrylab")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("store is closed")
)

// Bucket names a top-level key/value collection.
type Bucket string

// The store's own top-level collections: executions and their order,
// histories and journals (each execution's together, in the layouts
// below), and the index of unfinished executions.
//
// Every other collection belongs to the package that owns its data and
// encoding (the simulated world's ledgers to engine/world, the lesson
// progress to engine/lesson, ...), the way each owner of etcd's storage
// schema declares its bucket and codec: the owner names it with a Bucket of
// its own, the store creates it on its first write, reads of one never
// written find it empty, and ClearAll empties it with the rest.
const (
	bucketMeta       Bucket = "meta"
	bucketExecutions Bucket = "executions" // execution id -> record
	bucketExecOrder  Bucket = "exec_order" // 8-byte creation order -> execution id
	bucketHistories  Bucket = "histories"  // v2: execution id -> bucket of seq -> event
	// v3: execution id -> 4-byte history number, and (number, seq) -> event
	bucketHistoryIDs    Bucket = "history_ids"
	bucketHistoryEvents Bucket = "history_events"
	// v6: history number -> its growing tail (see Tx.AppendEvent)
	bucketHistoryTails Bucket = "history_tails"
	bucketJournals     Bucket = "journals" // execution id, NUL, step -> record (before: id -> bucket of step -> record)
	// Active indexes the executions that have not finished (id -> status),
	// so a reader finds them without walking every execution. history.Put
	// keeps it; DeleteExecution and ClearAll keep it consistent.
	Active Bucket = "active_executions"
)

var allBuckets = []Bucket{bucketMeta, bucketExecutions, bucketExecOrder, bucketHistories, bucketHistoryIDs, bucketHistoryEvents,
	bucketHistoryTails, bucketJournals, Active}

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock. Zero means one second.
	LockTimeout time.Duration
	// ReadOnly opens the file with a shared lock and refuses writes.
	ReadOnly bool
	// NoSync skips fsync on commit. Only benchmarks that measure the
	// difference set it, and scratch databases nothing must survive a
	// crash in (the Temporal explorer's copy of a cluster's histories).
	NoSync bool
	// MaxBatch bounds how many Update calls share one commit. Zero means 1024.
	MaxBatch int
	// CheckUpTo is the largest file a read-write Open checks in full (the
	// pages' bounds, then bbolt's consistency check) before anything is
	// written, so a damaged page is refused before a write lands beside
	// it. Zero means DefaultCheckUpTo; negative means never. Larger files
	// are checked in full by `retrylab check`; a damage bbolt's check
	// would find in them (key order, a page both used and free) fails the
	// read or write that reaches it, and from then on the DB refuses
	// writes.
	CheckUpTo int64
	// WalkUpTo is the largest file whose pages' bounds Open walks (see
	// walkPages) when it does not check it in full, read-only opens
	// included, so that no read of a damaged file follows a page out of
	// the map or round a loop. Zero means DefaultWalkUpTo; negative means
	// never.
	WalkUpTo int64
}

// growStep is how far past its last page the file grows once it is larger
// than growStep (below that it grows as bbolt maps it, doubling). bbolt's
// 16 MB default leaves a database of a few thousand executions a third empty;
// each step costs one truncate and fsync, and at 1 MB those are still rare
// beside the fsync of every commit.
const growStep = 1 << 20

// DefaultCheckUpTo bounds the full check at open: about 0.2 ms per MB, so at
// most some 15 ms, and never on the large databases whose open must stay flat.
const DefaultCheckUpTo = 64 << 20

// DefaultWalkUpTo bounds the walk of the pages' bounds at open: about 0.1 ms
// per MB (BENCHMARKS.md, section 14), so at most some 100–140 ms, on files
// far larger than a workshop's or a million attempts' (80 MB).
const DefaultWalkUpTo = 1 << 30

// DB is an open retrylab database.
type DB struct {
	bolt     *bolt.DB
	path     string
	readOnly bool
	maxBatch int
	// walked says a read-only Open walked the pages' bounds; no writer
	// can change the file while its shared lock is held, so Check need
	// not walk them again.
	walked bool
	// sums says the file stores its summed collections' values sealed
	// with their checksums (schema v7 on; see seal).
	sums bool

	// Group commit (see Update): queue holds the requests that wait for
	// the commit in progress; committing says one is in progress.
	commitMu   sync.Mutex
	committing bool
	queue      []*request
	inflight   sync.WaitGroup // Update calls not yet answered; Close waits for them
	closeMu    sync.RWMutex
	closed     bool

	// tails are histories' last chunks, by execution, as the last committed
	// transaction that appended to them left them, so the next append does
	// not find and read the chunk again (see Tx.AppendEvent). Only the
	// goroutine that commits uses it, one transaction at a time (runUpdate).
	tails map[string]*tail

	// watcher hears of committed changes to execution records.
	watchMu sync.RWMutex
	watcher ExecutionWatcher

	// damaged says what damage a transaction of db met first (in damage's
	// words), after which every write is refused: a file bbolt could
	// not read is not one to commit into.
	damaged atomic.Pointer[string]
}

// ExecutionWatcher hears of every committed change to the execution
// records, in commit order, after the commit: a record put (created or
// updated), an execution deleted, all of them cleared. Changes rolled back
// are never told. It is called on the goroutine that commits, so it must
// be quick and must not call back into the store.
type ExecutionWatcher interface {
	ExecutionPut(id string, record []byte)
	ExecutionDeleted(id string)
	ExecutionsCleared()
}

// WatchExecutions makes w hear of the changes to execution records
// committed from now on (nil stops it). Only one watcher is kept.
func (db *DB) WatchExecutions(w ExecutionWatcher) {
	db.watchMu.Lock()
	db.watcher = w
	db.watchMu.Unlock()
}

func (db *DB) executionWatcher() ExecutionWatcher {
	db.watchMu.RLock()
	defer db.watchMu.RUnlock()
	return db.watcher
}

type request struct {
	fn  func(*Tx) error
	err chan error // its outcome, once its group is committed or rolled back
	// lead is closed when the request, still queued, is to commit the queue
	// itself because the previous commit ended.
	lead chan struct{}
}

// Open opens or creates the database at path, created with mode 0600.
// An empty file is initialised as a new database (read-only: ErrCorrupt).
// A file that is not a bbolt file, is truncated, or is a bbolt file from
// another program fails with ErrCorrupt and is left unmodified.
func Open(path string, opts Options) (db *DB, err error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.ReadOnly {
		info, statErr := os.Stat(path)
		if statErr != nil {
			return nil, fmt.Errorf("open %s: %w", path, statErr)
		}
		if info.Size() == 0 {
			return nil, fmt.Errorf("open %s: %w: empty file", path, ErrCorrupt)
		}
	}
	// bbolt panics on some damaged pages and faults on pages past the end of
	// a truncated file; both become ErrCorrupt. file is kept so that a panic
	// inside bolt.Open, which returns no handle, still releases the file lock.
	var (
		b    *bolt.DB
		file *os.File
	)
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				_ = b.Close()
			} else if file != nil {
				releaseLock(file)
				_ = file.Close()
			}
			db, err = nil, fmt.Errorf("open %s: %w: %s", path, ErrCorrupt, damage(r))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if opts.CheckUpTo == 0 {
		opts.CheckUpTo = DefaultCheckUpTo
	}
	if opts.WalkUpTo == 0 {
		opts.WalkUpTo = DefaultWalkUpTo
	}
	if !opts.ReadOnly {
		if err := precheck(path, opts.LockTimeout, opts.CheckUpTo, opts.WalkUpTo); err != nil {
			return nil, err
		}
	}
	openFile := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly,
		NoSync: opts.NoSync, OpenFile: openFile})
	if err != nil {
		return nil, classifyOpenError(path, err)
	}
	walked := false
	if opts.ReadOnly {
		// A read-only open reads only the meta pages; the first read
		// follows the root page. A file small enough has its pages' bounds
		// walked first, under the shared lock bbolt now holds (no writer
		// can change the file while it is held), so that no read follows a
		// damaged page out of the map or round a loop.
		// A file small enough is checked in full, as a read-write Open
		// checks it, so that a reader reports the damage bbolt's check
		// finds (keys out of order, say) instead of reading round it.
		if info, statErr := file.Stat(); statErr == nil && info.Size() <= opts.WalkUpTo {
			var werr error
			if opts.CheckUpTo >= 0 && info.Size() <= opts.CheckUpTo {
				werr = b.View(func(tx *bolt.Tx) error { return checkFile(path, tx) })
			} else {
				werr = walkFile(path, b.Info().PageSize)
			}
			if werr != nil {
				_ = b.Close()
				return nil, fmt.Errorf("open %s: %w: %s", path, ErrCorrupt, werr)
			}
			walked = true
		}
		// After the walk, whose words for a meta page it finds damaged
		// are a writer's too.
		if err := checkMetaPages(file, b.Info().PageSize); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("open %s: %w: %s", path, ErrCorrupt, err)
		}
	}
	b.AllocSize = growStep
	db = &DB{bolt: b, path: path, readOnly: opts.ReadOnly, maxBatch: opts.MaxBatch, walked: walked}
	if err := db.prepare(); err != nil {
		_ = b.Close()
		return nil, err
	}
	return db, nil
}

func classifyOpenError(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("open %s: %w (another retrylab, or another program, has it open)", path, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch),
		errors.Is(err, bolterrors.ErrChecksum),
		// bbolt has no sentinel for a file shorter than its two meta pages.
		strings.Contains(err.Error(), "file size too small"):
		return fmt.Errorf("open %s: %w: %v", path, ErrCorrupt, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("open %s: %s: %w", path, permissionCause(path), err)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

// permissionCause says why opening path was denied: the file cannot be
// read, or cannot be written (a read-write open needs both), or the
// directory cannot be written (a missing file cannot be created in it).
func permissionCause(path string) string {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("permission denied: the file does not exist and directory %s is not writable to create it", filepath.Dir(path))
	}
	if f, err := os.Open(path); err != nil {
		return "permission denied: the file is not readable by this user"
	} else {
		f.Close()
	}
	return "permission denied: the file is not writable by this user (commands that only read open it read-only)"
}

// precheck looks at an existing, non-empty file through a read-only bbolt
// handle before the read-write open. A read-write bolt.Open reads the
// freelist page at once; in a truncated file that page can lie past the end,
// and touching it raises SIGBUS, which no recover catches by default. A
// read-only open reads only the two meta pages, so the high-water mark can be
// checked first. A file of at most checkUpTo bytes is then checked in full,
// its records' checksums included, so that damage is refused before the
// first write, not found after it; a larger one of at most walkUpTo bytes
// has its pages' bounds and its sealed records' checksums walked.
func precheck(path string, timeout time.Duration, checkUpTo, walkUpTo int64) (err error) {
	info, err := os.Stat(path)
	if err != nil || info.Size() == 0 {
		return nil // missing or empty: bolt.Open creates or reports it
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: true})
	if err != nil {
		return classifyOpenError(path, err)
	}
	defer b.Close()
	defer recoverCorrupt(path, &err)
	return b.View(func(tx *bolt.Tx) error {
		if err := checkHighWater(path, tx); err != nil {
			return err
		}
		// A writer checks the records' checksums on the pages it walks
		// too: bbolt's pages have none, so a record damaged inside its
		// value passes the walk and bbolt's check alike. The histories'
		// chunks only in a file checked in full (see walksums.go).
		var err error
		switch {
		case info.Size() <= checkUpTo:
			if err = walkFileSums(path, tx.DB().Info().PageSize, sumAll); err == nil {
				err = checkTx(tx)
			}
		case info.Size() <= walkUpTo:
			err = walkFileSums(path, tx.DB().Info().PageSize, sumRecords)
		}
		if err != nil {
			return fmt.Errorf("open %s: %w: %s; nothing was written to it", path, ErrCorrupt, err)
		}
		return nil
	})
}

// checkFile checks the whole file under tx: first its pages' bounds from the
// file's bytes (walkPages), so that bbolt's consistency check, which reads
// the memory map on a goroutine of its own, never follows a damaged page out
// of the map or round a loop; then that check.
func checkFile(path string, tx *bolt.Tx) error {
	if err := walkFile(path, tx.DB().Info().PageSize); err != nil {
		return err
	}
	return checkTx(tx)
}

// walkFile runs walkPages over the file at path, mapped read-only, with
// the page size bbolt found. The caller holds bbolt's lock on it, so no
// commit changes it meanwhile; should another program cut it short all the
// same, the read faults, and the caller has set SetPanicOnFault and
// recovers as for bbolt's reads.
func walkFile(path string, pageSize int) error { return walkFileSums(path, pageSize, sumNone) }

// walkFileSums is walkFile that checks the checksums of the records sums
// says on the pages it walks too, in a file of schema v7 on (walkPagesSums).
func walkFileSums(path string, pageSize int, sums sumLevel) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, unmap, err := mapFile(f)
	if err != nil {
		return fmt.Errorf("map %s: %w", path, err)
	}
	defer unmap()
	return walkPagesSums(data, pageSize, sums)
}

// checkTx runs bbolt's consistency check and says what it found in one line,
// in our words where bbolt asserts (a page whose header names another page,
// or a page of no known type).
func checkTx(tx *bolt.Tx) error {
	var problems []string
	for err := range tx.Check() {
		problems = append(problems, damage(err))
	}
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return errors.New(problems[0])
	}
	return fmt.Errorf("%s (and %d more problems)", problems[0], len(problems)-1)
}

var (
	wrongPageID = regexp.MustCompile(`Page expected to be: (\d+), but self identifies as (\d+)`)
	badPageType = regexp.MustCompile(`page (\d+): has unexpected type/flags: (\w+)`)
)

// damage says in one line what a panic or fault inside bbolt, or one of its
// check's errors, tells of the file, in our words where we know them (a page
// whose header names another page, or of no known page type).
func damage(r any) string {
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Sprintf("a damaged page (bbolt read outside the file's memory, at 0x%x)", f.Addr())
	}
	msg := fmt.Sprint(r)
	if m := wrongPageID.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("page %s is damaged (its header says it is page %s)", m[1], m[2])
	}
	if m := badPageType.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("page %s is damaged (its header has no known page type: flags 0x%s)", m[1], m[2])
	}
	msg = strings.TrimPrefix(msg, "panic: ")
	msg = strings.TrimPrefix(msg, "assertion failed: ")
	msg = strings.TrimPrefix(msg, "runtime error: ")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return "a damaged page (bbolt: " + msg + ")"
}

// checkHighWater reports ErrCorrupt when the pages the meta page claims reach
// past the end of the file, as they do after the file is truncated.
func checkHighWater(path string, tx *bolt.Tx) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if need := tx.Size(); info.Size() < need {
		return fmt.Errorf("open %s: %w: file is %d bytes but its pages reach byte %d (truncated?)",
			path, ErrCorrupt, info.Size(), need)
	}
	return nil
}

// prepare checks the schema version and creates every bucket in one transaction.
func (db *DB) prepare() error {
	// schema is the file's version, 0 for a new file.
	var schema uint64
	check := func(tx *bolt.Tx) error {
		if err := checkHighWater(db.path, tx); err != nil {
			return err
		}
		meta := tx.Bucket([]byte(bucketMeta))
		if meta == nil {
			if k, _ := tx.Cursor().First(); db.readOnly || k != nil {
				return fmt.Errorf("open %s: %w: no retrylab metadata", db.path, ErrCorrupt)
			}
			return nil
		}
		v := meta.Get([]byte("schema"))
		if len(v) != 8 {
			return fmt.Errorf("open %s: %w: bad schema record", db.path, ErrCorrupt)
		}
		if schema = binary.BigEndian.Uint64(v); schema > SchemaVersion {
			return fmt.Errorf("open %s: %w (schema v%d; this build understands up to v%d)", db.path, ErrNewerSchema, schema, SchemaVersion)
		}
		return nil
	}
	if db.readOnly {
		if err := db.bolt.View(check); err != nil {
			return err
		}
		db.sums = schema >= sumsSince
		return nil
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := check(tx); err != nil {
			return err
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if schema != 0 && schema < sumsSince {
			// Sealing reads every record: a damaged page is refused
			// before it is followed, whatever Options.CheckUpTo says.
			if err := checkFile(db.path, tx); err != nil {
				return fmt.Errorf("open %s: %w: %s", db.path, ErrCorrupt, err)
			}
			if err := addSums(tx); err != nil {
				return fmt.Errorf("open %s: seal its records with checksums (schema v%d to v%d): %w", db.path, schema, SchemaVersion, err)
			}
		}
		if schema < SchemaVersion {
			return tx.Bucket([]byte(bucketMeta)).Put([]byte("schema"), U64(SchemaVersion))
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.sums = true
	return nil
}

// Path is the file the database lives in.
func (db *DB) Path() string { return db.path }

// Close waits for pending commits and closes the file.
func (db *DB) Close() error {
	db.closeMu.Lock()
	if db.closed {
		db.closeMu.Unlock()
		return nil
	}
	db.closed = true
	db.closeMu.Unlock()
	db.inflight.Wait()
	return db.bolt.Close()
}

// Check checks the whole file: the bounds of its pages (walkPages, unless
// a read-only Open walked them), then bbolt's consistency check. Problems are reported in one error that wraps
// ErrCorrupt, and db refuses writes from then on.
func (db *DB) Check() (err error) {
	db.closeMu.RLock()
	defer db.closeMu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	defer db.recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	check := func(tx *bolt.Tx) error {
		if err := checkHighWater(db.path, tx); err != nil {
			return err
		}
		var err error
		if db.walked {
			err = checkTx(tx)
		} else {
			err = checkFile(db.path, tx)
		}
		if err != nil {
			return fmt.Errorf("check %s: %w: %w", db.path, ErrCorrupt, err)
		}
		return nil
	}
	if db.readOnly {
		return db.bolt.View(check)
	}
	// A check in a read-only transaction reads bbolt's freelist while a
	// concurrent commit rewrites it (a data race); a writable transaction
	// excludes commits. It is always rolled back.
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		if err := check(tx); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	if errors.Is(err, ErrCorrupt) {
		db.markDamaged(strings.TrimPrefix(err.Error(), "check "+db.path+": "+ErrCorrupt.Error()+": "))
	}
	return err
}

var errRollback = errors.New("rollback")

// CopyTo writes a consistent copy of the whole database, as of one moment,
// to w, while commits go on. The copy is a database file of its own.
func (db *DB) CopyTo(w io.Writer) (n int64, err error) {
	db.closeMu.RLock()
	defer db.closeMu.RUnlock()
	if db.closed {
		return 0, ErrClosed
	}
	defer db.recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err = db.bolt.View(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// View runs fn in a read-only transaction. Values passed to fn are valid only
// inside it; the Tx accessors return copies.
func (db *DB) View(fn func(*Tx) error) (err error) {
	db.closeMu.RLock()
	defer db.closeMu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	defer db.recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return db.bolt.View(func(tx *bolt.Tx) error {
		t := &Tx{tx: tx, db: db}
		return t.failWithDamage(fn(t))
	})
}

// Update runs fn in a read-write transaction and returns once it is durably
// committed. Concurrent calls share one commit (group commit), so fn may run
// more than once if another call in its group fails: it must not have effects
// outside the transaction other than setting its own results.
//
// A call that finds no commit in progress commits on its own goroutine, so
// a lone writer pays no hand-off to another goroutine and back. Calls that
// arrive while a commit is in progress queue; when it ends, the committer
// hands the whole queue to the first of them, which commits it as one group
// (at most MaxBatch at a time) on its goroutine and hands on what queued
// meanwhile.
func (db *DB) Update(fn func(*Tx) error) error {
	if db.readOnly {
		return fmt.Errorf("write to %s: database opened read-only", db.path)
	}
	if err := db.refuseDamaged(); err != nil {
		return err
	}
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return ErrClosed
	}
	db.inflight.Add(1)
	db.closeMu.RUnlock()
	defer db.inflight.Done()

	req := &request{fn: fn, err: make(chan error, 1)}
	db.commitMu.Lock()
	if !db.committing {
		db.committing = true
		db.commitMu.Unlock()
		db.commitGroup([]*request{req})
		return <-req.err
	}
	req.lead = make(chan struct{})
	db.queue = append(db.queue, req)
	db.commitMu.Unlock()
	select {
	case err := <-req.err:
		return err
	case <-req.lead:
	}
	// This request heads the queue: commit it, with those behind it.
	db.commitMu.Lock()
	n := min(len(db.queue), db.maxBatch)
	batch := append([]*request(nil), db.queue[:n]...)
	db.queue = append(db.queue[:0], db.queue[n:]...)
	db.commitMu.Unlock()
	db.commitGroup(batch)
	return <-req.err
}

// commitGroup commits batch, whose requests this goroutine now owns, with
// the requests that queue while its transaction runs (see commit), then
// passes the commit on (to the first queued request if any, which commits
// the queue on its own goroutine, else it marks the store idle) and tells
// each of the group's writers its outcome.
func (db *DB) commitGroup(batch []*request) {
	// Faults reading a damaged file become panics that runUpdate recovers.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var errs []error
	defer func() {
		// runUpdate recovers every panic of a transaction; should one
		// escape all the same, every writer of the group is still
		// answered and the commit handed on, so the store does not wait
		// forever.
		r := recover()
		if errs == nil {
			errs = make([]error, len(batch))
			for i := range errs {
				errs[i] = fmt.Errorf("commit to %s panicked: %v", db.path, r)
			}
		}
		// Hand on first, so the next group's commit starts while this
		// one's writers are told.
		db.commitMu.Lock()
		if len(db.queue) == 0 {
			db.committing = false
		} else {
			close(db.queue[0].lead)
		}
		db.commitMu.Unlock()
		for i, w := range batch {
			w.err <- errs[i]
		}
		if r != nil {
			panic(r)
		}
	}()
	errs = db.commit(&batch)
}

// joinQueued takes up to room queued requests into the transaction being
// built: they were to wait for the next commit, and go in this one.
func (db *DB) joinQueued(batch []*request, room int) []*request {
	if room <= 0 {
		return batch
	}
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	n := min(len(db.queue), room)
	if n == 0 {
		return batch
	}
	batch = append(batch, db.queue[:n]...)
	db.queue = append(db.queue[:0], db.queue[n:]...)
	return batch
}

// commit runs a group in one transaction and returns each member's
// outcome; if any member fails, the group is rolled back and each member
// runs alone so one failure does not sink the rest.
//
// The group grows while its transaction is built: once its members' fns
// have run, the requests that queued meanwhile join it (up to MaxBatch in
// all), until none has. Each of them would otherwise wait for this
// commit's fsync and then for a commit of its own; with 64 writers, the
// writers of the previous commit come back while this one is built, and
// join it instead of forming the next group (BENCHMARKS.md, 1b″). *batch is
// the whole group when commit returns, or panics.
func (db *DB) commit(batch *[]*request) []error {
	failed := -1
	err := db.runUpdate(func(tx *Tx) error {
		for i := 0; ; i++ {
			if i == len(*batch) {
				if *batch = db.joinQueued(*batch, db.maxBatch-len(*batch)); i == len(*batch) {
					return nil
				}
			}
			if err := (*batch)[i].fn(tx); err != nil {
				failed = i
				return err
			}
		}
	})
	errs := make([]error, len(*batch))
	if err == nil {
		return errs
	}
	if failed < 0 && len(*batch) == 1 {
		errs[0] = err // the commit itself failed
		return errs
	}
	for i, r := range *batch {
		if i == failed {
			errs[i] = err
			continue
		}
		errs[i] = db.runUpdate(r.fn)
	}
	return errs
}

func (db *DB) runUpdate(fn func(*Tx) error) (err error) {
	// A group queued before another found the damage must not commit.
	if err := db.refuseDamaged(); err != nil {
		return err
	}
	// bbolt rolls the transaction back when a panic leaves it, before
	// recoverCorrupt sees the panic: nothing of it is committed.
	defer db.recoverCorrupt(&err)
	var t *Tx
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		t = &Tx{tx: tx, db: db}
		if err := t.failWithDamage(fn(t)); err != nil {
			return err
		}
		return t.flushChunks()
	}); err != nil {
		return err
	}
	db.keepTails(t.tails)
	return nil
}

// tailsKept bounds DB.tails: about as many executions as run at once on a
// busy host, each a chunk of at most some 4 KB.
const tailsKept = 1024

// keepTails keeps the tails a committed transaction appended to for the
// next: those of histories not sealed (a finished execution's is not
// appended to again) nor deleted.
func (db *DB) keepTails(tails map[string]*tail) {
	for exec, tl := range tails {
		if tl.dropped || tl.sealed || tl.key == nil || tl.dirty {
			continue
		}
		if db.tails == nil || len(db.tails) >= tailsKept {
			db.tails = make(map[string]*tail)
		}
		db.tails[exec] = tl
	}
}

// recoverCorrupt turns a panic in a transaction into an error. bbolt panics
// on damaged pages, and memory faults on the mapped file panic too (callers
// set debug.SetPanicOnFault); those wrap ErrCorrupt. A panic raised outside
// bbolt, such as a bug in the caller's function, says nothing about the file,
// so it is returned with its stack and without ErrCorrupt.
func recoverCorrupt(path string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	if !panicFromFile(r) {
		*err = fmt.Errorf("transaction on %s panicked: %v\n%s", path, r, debug.Stack())
		return
	}
	*err = fmt.Errorf("read %s: %w: %s", path, ErrCorrupt, damage(r))
}

// recoverCorrupt is the package's recoverCorrupt for a transaction of db: a
// panic that says the file is damaged also marks db damaged, so that it
// refuses writes from then on.
func (db *DB) recoverCorrupt(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if !panicFromFile(r) {
		*err = fmt.Errorf("transaction on %s panicked: %v\n%s", db.path, r, debug.Stack())
		return
	}
	what := damage(r)
	db.markDamaged(what)
	*err = fmt.Errorf("read %s: %w: %s", db.path, ErrCorrupt, what)
}

// markDamaged keeps the first damage found in db.
func (db *DB) markDamaged(what string) {
	db.damaged.CompareAndSwap(nil, &what)
}

// refuseDamaged fails once a transaction of db has met damage: a write
// would commit beside pages bbolt cannot read, or reuse pages a damaged
// freelist gives out, and make the file worse.
func (db *DB) refuseDamaged() error {
	if what := db.damaged.Load(); what != nil {
		return fmt.Errorf("write to %s refused: %w: %s; nothing more is written to it", db.path, ErrCorrupt, *what)
	}
	return nil
}

// panicFromFile reports whether the panic being recovered is a memory fault
// or was raised inside bbolt. It must be called from the deferred function.
func panicFromFile(r any) bool {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return true // a fault with an address: the mapped file
	}
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		// Skip the panic machinery (runtime.gopanic, runtime.panicIndex, ...)
		// to reach the function that panicked.
		if !strings.HasPrefix(f.Function, "runtime.") {
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// U64 encodes n as 8 big-endian bytes, the key form that sorts numerically.
func U64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// DecodeU64 reverses U64; it returns 0 for a key of the wrong length.
func DecodeU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
