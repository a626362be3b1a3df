package engine

import (
	"errors"
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// CheckRecords reads every record of db that an owner decodes (execution
// records, every event of every history, journal records, the world's
// ledgers, and the traces of imported executions through reg) and returns
// an error for each one that does not decode, up to max (max <= 0: all):
// a *store.DamagedRecord naming its collection, key and page, where the
// store can tell them. more are the checks of the collections of
// importers (otlp.CheckRecords), which the engine does not know. err is for a read that failed as a whole (bbolt met
// a damaged page). It is what `retrylab check` runs before its model, so
// that damage is reported as damage, and none goes unread.
func CheckRecords(db *store.DB, reg *imports.Registry, max int, more ...func(tx *store.Tx, max int) ([]error, error)) (damaged []error, err error) {
	var imported []string
	err = db.View(func(tx *store.Tx) error {
		var err error
		damaged, imported, err = checkRecords(tx, max, more)
		// The records whose checksums do not match, which the readers
		// were not given (store.Tx.TakeDamage), are damage too.
		damaged = append(damaged, tx.TakeDamage()...)
		return err
	})
	if err != nil || reg == nil {
		return damaged, err
	}
	r := ReadStore(db, reg)
	for _, id := range imported {
		if max > 0 && len(damaged) >= max {
			break
		}
		if _, err := imports.Fold(r, id, 0); err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				err = fmt.Errorf("%s: %w: imported execution %s does not read: %w", db.Path(), store.ErrCorrupt, id, err)
			}
			damaged = append(damaged, err)
		}
	}
	return damaged, nil
}

// checkRecords is CheckRecords' reading of tx: the records that do not
// decode, and the imported executions, whose traces are read after.
func checkRecords(tx *store.Tx, max int, more []func(tx *store.Tx, max int) ([]error, error)) (damaged []error, imported []string, err error) {
	full := func() bool { return max > 0 && len(damaged) >= max }
	err = func() error {
		var ids []string
		status := map[string]history.Status{}
		if err := tx.ExecutionRecords(func(id, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err == nil {
				status[string(id)] = x.Status
			}
			switch {
			case err != nil:
				damaged = append(damaged, tx.ExecutionDamaged(string(id), err))
			case x.Imported != "":
				imported = append(imported, string(id))
			default:
				ids = append(ids, string(id))
			}
			return !full()
		}); err != nil {
			return err
		}
		bad, err := tx.CheckExecutionIndex(max - len(damaged))
		if err != nil {
			return err
		}
		damaged = append(damaged, bad...)
		// The index of unfinished executions names each with the status
		// its record has (history.Put keeps them in step).
		if err := tx.Scan(store.Active, nil, false, func(id, st []byte) bool {
			got, ok := status[string(id)]
			switch {
			case !ok && tx.Execution(string(id)) == nil:
				damaged = append(damaged, tx.Damaged(store.Active, nil, id, errors.New("it names an execution that has no record")))
			case ok && string(got) != string(st):
				damaged = append(damaged, tx.Damaged(store.Active, nil, id, fmt.Errorf("it says %q, the execution's record %q", st, got)))
			}
			return !full()
		}); err != nil {
			return err
		}
		for _, id := range ids {
			if full() {
				return nil
			}
			var bad error
			events := 0
			err := tx.EventsInPlace(id, 0, func(seq uint64, data []byte) bool {
				events++
				if _, err := history.Decode(data); err != nil {
					bad = tx.EventDamaged(id, seq, err)
					return false
				}
				return true
			})
			if err == nil {
				err = bad
			}
			if err == nil && events == 0 {
				// An execution that ran has events: its history
				// number, or its chunks, are lost (as readers say).
				err = lostHistory(tx, id)
			}
			if err != nil {
				var d *store.DamagedRecord
				if !errors.As(err, &d) {
					return err
				}
				damaged = append(damaged, err)
			}
		}
		if err := tx.JournalEntries(func(exec, step string, data []byte) bool {
			if _, err := history.DecodeJournal(exec, step, data); err != nil {
				damaged = append(damaged, tx.JournalDamaged(exec, step, err))
			}
			return !full()
		}); err != nil {
			return err
		}
		if full() {
			return nil
		}
		bad, err = world.CheckRecords(tx, max-len(damaged))
		damaged = append(damaged, bad...)
		if err != nil {
			return err
		}
		for _, check := range more {
			if full() {
				return nil
			}
			bad, err = check(tx, max-len(damaged))
			damaged = append(damaged, bad...)
			if err != nil {
				return err
			}
		}
		return nil
	}()
	return damaged, imported, err
}
