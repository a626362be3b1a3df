package engine

import (
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// importsFlagged is the Meta key that says every imported execution's
// record carries the audit's verdict (history.Execution's Duplicates and
// Possible flags). Importers set the duplicate flag since 675f86b and the
// possible one since; records imported before lack them, so the
// explorer's list showed no ⚠ or ◇ for them and its filters missed them.
// (A database whose records all had the duplicate flag said so with the
// key "imported_duplicates": it is walked again, for the possible flag.)
const importsFlagged = "imported_verdicts"

// flagBatch is how many flags one transaction writes.
const flagBatch = 64

// flagOldImports gives the records of imported executions written before
// the flags existed their verdict: each imported execution not flagged is
// audited alone with the default effects, as its importer does now, and
// the flag of each that holds a duplicate or a possible one is written, a
// batch a transaction, each committed (fsynced) before the next, and
// announced, so a running explorer marks it ⚠ or ◇ at once. Once every
// record was seen, the Meta key says so and later opens skip the walk. It
// runs in the background from Open (an audit of many imported executions
// takes seconds); stop makes it write what it found and return (the walk
// over the records, which decodes only imported ones, stops too), and a
// later open starts it over. An execution whose spans or history cannot
// be read keeps its record as it is.
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
			if x, err := history.DecodeExecution(rec); err == nil && x.Imported != "" && !x.Duplicates && !x.Possible {
				ids = append(ids, string(id))
			}
			return true
		})
	})
	if err != nil || done || stopped() {
		return err
	}
	type verdict struct {
		id string
		g  audit.Grade
	}
	var found []verdict
	write := func() error {
		if len(found) == 0 {
			return nil
		}
		var flagged []string
		err := h.db.Update(func(tx *store.Tx) error {
			flagged = flagged[:0]
			for _, v := range found {
				// Read again: an import may have rewritten it since.
				id := v.id
				x, err := history.DecodeExecution(tx.Execution(id))
				if err != nil || x.Duplicates || x.Possible {
					continue
				}
				x.Duplicates, x.Possible = v.g.Flags()
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
		var g audit.Grade
		err := h.db.View(func(tx *store.Tx) error {
			x, err := history.DecodeExecution(tx.Execution(id))
			if err != nil {
				return err
			}
			g, err = h.cfg.Imports.Verdict(tx, x)
			return err
		})
		if err == nil && g != "" {
			found = append(found, verdict{id, g})
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
