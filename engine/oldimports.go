package engine

import (
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// importsFlagged is the Meta key that says every imported execution's
// record carries the audit's duplicate flag (history.Execution.Duplicates).
// Importers set the flag since 675f86b; records imported before it lack it,
// so the explorer's list showed no ⚠ for them and the ⚠ and "dup" filters
// missed them.
const importsFlagged = "imported_duplicates"

// flagBatch is how many flags one transaction writes.
const flagBatch = 64

// flagOldImports gives the records of imported executions written before
// the duplicate flag existed their flag: each imported execution not
// flagged is audited alone with the default effects, as its importer does
// now, and the flag of each that holds a duplicate is written, a batch a
// transaction, each committed (fsynced) before the next, and announced, so
// a running explorer marks it ⚠ at once. Once every record was seen, the
// Meta key says so and later opens skip the walk. It runs in the
// background from Open (an audit of many imported executions takes
// seconds); stop makes it write what it found and return (the walk over
// the records, which decodes only imported ones, stops too), and a later
// open starts it over. An execution whose spans or history cannot be read
// keeps its record as it is.
func (h *Host) flagOldImports(stop <-chan struct{}) error {
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var done, imports bool
	var ids []string
	err := h.db.View(func(tx *store.Tx) error {
		if done = tx.Meta(importsFlagged) != nil; done {
			return nil
		}
		// A database that never imported anything (most, and the largest)
		// has nothing to flag: its records are not walked.
		var err error
		if imports, err = h.cfg.Imports.Holds(tx); err != nil || !imports {
			return err
		}
		return tx.ExecutionRecords(func(id, rec []byte) bool {
			if stopped() {
				return false
			}
			if !history.MaybeImported(rec) {
				return true // retrylab's own: not decoded
			}
			if x, err := history.DecodeExecution(rec); err == nil && x.Imported != "" && !x.Duplicates {
				ids = append(ids, string(id))
			}
			return true
		})
	})
	if err != nil || done || stopped() {
		return err
	}
	var found []string
	write := func() error {
		if len(found) == 0 {
			return nil
		}
		var flagged []string
		err := h.db.Update(func(tx *store.Tx) error {
			flagged = flagged[:0]
			for _, id := range found {
				// Read again: an import may have rewritten it since.
				x, err := history.DecodeExecution(tx.Execution(id))
				if err != nil || x.Duplicates {
					continue
				}
				x.Duplicates = true
				enc, err := history.EncodeExecution(x)
				if err != nil {
					return err
				}
				if err := tx.PutExecution(id, enc); err != nil {
					return err
				}
				flagged = append(flagged, id)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range flagged {
			h.Announce(id)
		}
		found = found[:0]
		return nil
	}
	for _, id := range ids {
		if stopped() {
			return write()
		}
		var dup bool
		err := h.db.View(func(tx *store.Tx) error {
			x, err := history.DecodeExecution(tx.Execution(id))
			if err != nil {
				return err
			}
			dup, err = h.cfg.Imports.Duplicated(tx, x)
			return err
		})
		if err == nil && dup {
			found = append(found, id)
		}
		if len(found) >= flagBatch {
			if err := write(); err != nil {
				return err
			}
		}
	}
	if err := write(); err != nil {
		return err
	}
	return h.db.Update(func(tx *store.Tx) error { return tx.SetMeta(importsFlagged, []byte{1}) })
}
