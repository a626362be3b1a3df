package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// compactTxMax bounds the bytes one transaction of the copy carries.
const compactTxMax = 8 << 20

// CompactAndClose rewrites the database into a new file with every page
// full and no free pages or growth reserve, puts it in place of the old
// file, and closes db. A bbolt file never shrinks: the pages a writer's
// last commits freed, the half-empty pages that random keys leave, and the
// room it grew into stay in it. A bulk writer (`retrylab gen`) calls this
// once at the end.
//
// History chunks stored plain (chunks of older files) and the growing
// tails of executions that never finished (a run killed with its host and
// never resumed: history_tails, and in a v5 file the last chunks of
// store.Active's executions) are sealed first, in the old file (see
// sealChunks), so the copy holds every chunk in its smallest form.
//
// The copy is written to a temporary file beside the database (mode 0600),
// fsynced, and renamed over it, and the directory is fsynced: a process
// killed at any moment leaves either the old file or the new one under the
// name, each whole (a kill before the rename also leaves the temporary file,
// named after the database with ".compact-" in it, which the next
// compaction removes). Pending commits finish
// first; nothing may write to db meanwhile, and other processes cannot,
// since db holds the lock. On an error the old file stays, and db is closed.
func (db *DB) CompactAndClose() (err error) {
	if db.readOnly {
		return fmt.Errorf("compact %s: database opened read-only", db.path)
	}
	if err := db.refuseDamaged(); err != nil {
		return err
	}
	db.closeMu.Lock()
	if db.closed {
		db.closeMu.Unlock()
		return ErrClosed
	}
	db.closed = true
	db.closeMu.Unlock()
	db.inflight.Wait()
	defer func() {
		if cerr := db.bolt.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	defer db.recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	pattern := "." + filepath.Base(db.path) + ".compact-*"
	// Copies of a compaction killed before its rename: db holds the lock,
	// so none is being written.
	if stale, _ := filepath.Glob(filepath.Join(filepath.Dir(db.path), pattern)); len(stale) > 0 {
		for _, name := range stale {
			_ = os.Remove(name)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(db.path), pattern)
	if err != nil {
		return fmt.Errorf("compact %s: %w", db.path, err)
	}
	tmp := f.Name()
	if err := errors.Join(f.Chmod(0o600), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", db.path, err)
	}
	if err := sealChunks(db.bolt, db.sums); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", db.path, err)
	}
	if err := compactInto(db.bolt, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", db.path, err)
	}
	if err := os.Rename(tmp, db.path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", db.path, err)
	}
	return syncDir(filepath.Dir(db.path))
}

// sealChunks stores sealed (encodeChunk) every history chunk of db stored
// plain that compression shortens, in transactions of about compactTxMax
// bytes, then the last chunk of every execution in Active, then moves
// every growing tail of history_tails, sealed, among its history's chunks.
// The chunks read the same before and after; a kill between transactions
// leaves some sealed and some not, which reads the same too.
func sealChunks(db *bolt.DB, sums bool) error {
	if err := sealPlainChunks(db, sums); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		if err := sealActiveChunks(tx, sums); err != nil {
			return err
		}
		return sealTails(tx, sums)
	})
}

// sealTails moves every growing tail of history_tails, sealed, into
// history_events under its key.
func sealTails(tx *bolt.Tx, sums bool) error {
	tails, events := tx.Bucket([]byte(bucketHistoryTails)), tx.Bucket([]byte(bucketHistoryEvents))
	if tails == nil || events == nil {
		return nil
	}
	t := &Tx{tx: tx}
	var prefixes [][]byte
	if err := tails.ForEach(func(k, _ []byte) error {
		prefixes = append(prefixes, clone(k))
		return nil
	}); err != nil {
		return err
	}
	events.FillPercent = appendFill
	var scratch []byte
	for _, prefix := range prefixes {
		key, _, stored, err := t.storedTail(prefix)
		if err != nil {
			return err
		}
		sealed, err := sealChunk(&scratch, stored, sums)
		if err != nil {
			return fmt.Errorf("seal history chunk %x: %w", key, err)
		}
		if err := events.Put(key, sealed); err != nil {
			return fmt.Errorf("seal history chunk %x: %w", key, err)
		}
		if err := tails.Delete(prefix); err != nil {
			return fmt.Errorf("seal history chunk %x: %w", key, err)
		}
	}
	return nil
}

// sealActiveChunks seals the last chunk in history_events of every
// execution in Active: a v5 file's growing tails.
func sealActiveChunks(tx *bolt.Tx, sums bool) error {
	active, ids, events := tx.Bucket([]byte(Active)), tx.Bucket([]byte(bucketHistoryIDs)), tx.Bucket([]byte(bucketHistoryEvents))
	if active == nil || ids == nil || events == nil {
		return nil
	}
	var scratch []byte
	events.FillPercent = appendFill
	return active.ForEach(func(exec, _ []byte) error {
		prefix := ids.Get(exec)
		if len(prefix) != historyKeyLen {
			return nil // no history of the v3 layout
		}
		k, v := lastEventsChunk(events, prefix)
		if k == nil {
			return nil
		}
		stored, err := sealChunk(&scratch, v, sums)
		if err != nil {
			return fmt.Errorf("seal history chunk %x: %w", k, err)
		}
		if bytes.Equal(stored, v) {
			return nil
		}
		// ForEach walks Active, not events: a Put there is safe.
		if err := events.Put(clone(k), stored); err != nil {
			return fmt.Errorf("seal history chunk %x: %w", k, err)
		}
		return nil
	})
}

// sealPlainChunks is sealChunks' walk of the chunks stored plain.
func sealPlainChunks(db *bolt.DB, sums bool) error {
	var after []byte // the last key looked at, nil before the first
	for done := false; !done; {
		err := db.Update(func(tx *bolt.Tx) error {
			events := tx.Bucket([]byte(bucketHistoryEvents))
			if events == nil {
				done = true
				return nil
			}
			type sealed struct{ key, value []byte }
			var batch []sealed
			var size int
			var scratch []byte
			c := events.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && size < compactTxMax; k, v = c.Next() {
				if v == nil || len(v) == 0 || v[0] == compressedChunk {
					continue // a nested bucket, or compressed already
				}
				plain := v
				if sums {
					var err error
					if plain, err = openChunk(v); err != nil {
						return fmt.Errorf("seal history chunk %x: %w", k, err)
					}
				}
				stored, err := encodeChunk(&scratch, plain, sums)
				if err != nil {
					return fmt.Errorf("seal history chunk %x: %w", k, err)
				}
				if stored[0] == compressedChunk {
					batch = append(batch, sealed{clone(k), stored})
					size += len(k) + len(stored)
				}
			}
			done = k == nil
			if len(batch) > 0 {
				after = batch[len(batch)-1].key
			}
			// A cursor is not to be trusted past a Put: they wait for the walk.
			events.FillPercent = appendFill
			for _, s := range batch {
				if err := events.Put(s.key, s.value); err != nil {
					return fmt.Errorf("seal history chunk %x: %w", s.key, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// compactInto copies src into the empty file at path, then cuts the file
// at its last page and fsyncs it.
func compactInto(src *bolt.DB, path string) error {
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	dst.AllocSize = growStep
	if err := bolt.Compact(dst, src, compactTxMax); err != nil {
		_ = dst.Close()
		return err
	}
	var end int64
	if err := dst.View(func(tx *bolt.Tx) error { end = tx.Size(); return nil }); err != nil {
		_ = dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	// Past end lies only the room bbolt grew into: no page is there.
	if err := errors.Join(f.Truncate(end), f.Sync()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory, so a rename in it is durable. Windows cannot
// open a directory for that (its renames are durable once they return).
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
