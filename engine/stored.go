package engine

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// stored reads the executions of a database this process holds, imported
// ones through their sources in reg: the imports.Reader (and Streamer) a
// host or LocalTraces folds with.
type stored struct {
	db  *store.DB
	reg *imports.Registry
}

var (
	_ imports.Reader   = stored{}
	_ imports.Streamer = stored{}
)

// Execution is execution id's record; a missing one is a
// MissingExecution of the database.
func (s stored) Execution(id string) (history.Execution, error) {
	var x history.Execution
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		x, err = executionRecord(tx, s.db, id)
		return err
	})
	return x, err
}

// Events is at most limit events of execution id's history from seq
// from (limit 0: all).
func (s stored) Events(id string, from uint64, limit int) ([]history.Event, error) {
	var out []history.Event
	var bad error
	err := s.db.View(func(tx *store.Tx) error {
		return tx.Events(id, from, func(seq uint64, data []byte) bool {
			ev, err := history.Decode(data)
			if err != nil {
				bad = tx.EventDamaged(id, seq, err)
				return false
			}
			out = append(out, ev)
			return limit <= 0 || len(out) < limit
		})
	})
	if err == nil {
		err = bad
	}
	return out, err
}

// EachEvent hands execution id's history to fn an event at a time, in one
// read transaction.
func (s stored) EachEvent(id string, fn func(history.Event)) error {
	var bad error
	err := s.db.View(func(tx *store.Tx) error {
		n := 0
		err := tx.Events(id, 0, func(seq uint64, data []byte) bool {
			ev, err := history.Decode(data)
			if err != nil {
				bad = tx.EventDamaged(id, seq, err)
				return false
			}
			n++
			fn(ev)
			return true
		})
		if err == nil && n == 0 {
			err = lostHistory(tx, id)
		}
		return err
	})
	if err == nil {
		err = bad
	}
	return err
}

// ImportedEvents is an imported execution as the fold's input events,
// translated by its source.
func (s stored) ImportedEvents(id string) ([]trace.Event, error) {
	var evs []trace.Event
	err := s.db.View(func(tx *store.Tx) error {
		x, err := executionRecord(tx, s.db, id)
		if err != nil {
			return err
		}
		evs, err = s.reg.Events(tx, x)
		return err
	})
	return evs, err
}

// fold folds execution id from its own source (imports.Fold).
func (s stored) fold(id string) (*trace.Trace, error) { return imports.Fold(s, id, 0) }

// eachFolded folds the named executions, or all, one at a time, and hands
// each to fn; memory holds one execution at a time. With no names, an
// execution that shows within another (imports.Absorber: the attempts a
// Temporal worker's interceptor recorded, once its workflow's history is
// imported) is not folded twice.
func (s stored) eachFolded(ids []string, fn func(*trace.Trace)) error {
	if len(ids) == 0 {
		var err error
		ids, err = executionIDs(s.db, func(tx *store.Tx, id string, _ []byte) bool {
			return !s.reg.Absorbed(tx, id)
		})
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		t, err := s.fold(id)
		if err != nil {
			return err
		}
		fn(t)
	}
	return nil
}

// ReadStore reads the executions of a database this process opened (a
// scratch database of imported files, say), imported ones through the
// sources in reg: the Reader imports.Fold folds with.
func ReadStore(db *store.DB, reg *imports.Registry) imports.Reader { return stored{db, reg} }

// lostHistory is the error for execution id, whose history reads empty:
// nil when that is what it holds (imported, or never run), damage when
// its record says it ran: its history number, or the chunks it names,
// are lost.
func lostHistory(tx *store.Tx, id string) error {
	rec := tx.Execution(id)
	if rec == nil {
		return nil
	}
	x, err := history.DecodeExecution(rec)
	if err != nil {
		return tx.ExecutionDamaged(id, err)
	}
	if x.Imported != "" || x.Runs == 0 {
		return nil
	}
	return tx.EventDamaged(id, 1, fmt.Errorf("the execution ran %d times, but its history is empty", x.Runs))
}
