package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/retrylab/retrylab/store"
)

// The host owns the database file, but not every collection in it: a
// package that owns some data (the lesson package's progress, say) keeps its
// own bucket and encoding, reads and writes it in the database's own
// transactions (Host.Store), the way each owner of etcd's storage schema
// reads and writes its bucket in the backend's transactions, and asks Reset
// to keep it.

// Now is the host's clock.
func (h *Host) Now() time.Time { return h.clock.Now() }

// Reset wipes everything: executions, histories, journals and the world,
// like the article's `reset` between experiments, but keeps the given
// collections: the wipe and their survival are one commit. It refuses while a worker
// runs, or while a file is imported through the host (the wipe would take
// the chunks the import has stored so far, and the import, going on,
// would commit executions without their spans) or an export or audit
// reads through it (it would end short, or fail on an execution gone).
func (h *Host) Reset(keep ...store.Bucket) error {
	keep = append(slices.Clip(keep), h.cfg.KeepOnReset...)
	if running := h.Running(); len(running) > 0 {
		return fmt.Errorf("cannot reset while %s is running", running[0])
	}
	if f := h.companion.BeforeReset; f != nil {
		f()
	}
	if !h.importMu.TryLock() {
		return fmt.Errorf("cannot reset while a file is being imported (retrylab import): try again when it has finished")
	}
	defer h.importMu.Unlock()
	if !h.exporting.TryLock() {
		return fmt.Errorf("cannot reset while an export is being written or an audit made (retrylab export, audit): try again when it has finished")
	}
	defer h.exporting.Unlock()
	err := h.db.Update(func(tx *store.Tx) error {
		kept := make([]map[string][]byte, len(keep))
		for i, b := range keep {
			kept[i] = map[string][]byte{}
			if err := tx.Scan(b, nil, false, func(k, v []byte) bool { kept[i][string(k)] = v; return true }); err != nil {
				return err
			}
		}
		if err := tx.ClearAll(); err != nil {
			return err
		}
		for i, b := range keep {
			for k, v := range kept[i] {
				if err := tx.Put(b, []byte(k), v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	h.mu.Lock()
	h.execs = map[string]*execState{}
	h.armed = nil
	h.mu.Unlock()
	return h.Providers().ResetWorld()
}
