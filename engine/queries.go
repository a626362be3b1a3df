package engine

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// Execution reads one execution's record.
func (h *Host) Execution(id string) (history.Execution, error) {
	var x history.Execution
	found := false
	err := h.db.View(func(tx *store.Tx) error {
		data := tx.Execution(id)
		if data == nil {
			return nil
		}
		found = true
		var err error
		if x, err = history.DecodeExecution(data); err != nil {
			return tx.ExecutionDamaged(id, err)
		}
		return nil
	})
	if err != nil {
		return history.Execution{}, err
	}
	if !found {
		return history.Execution{}, fmt.Errorf("%w: %s", ErrNoExecution, id)
	}
	return x, nil
}

// Executions lists executions newest first (one run again counts as new:
// the list is by last activity), skipping skip, at most limit, and
// returns the total count. The cost does not grow with the total.
func (h *Host) Executions(skip, limit int) ([]history.Execution, int, error) {
	var out []history.Execution
	var total int
	err := h.db.View(func(tx *store.Tx) error {
		total = tx.ExecutionCount()
		var damaged error
		err := tx.Executions(true, skip, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				damaged = tx.ExecutionDamaged(id, err)
				return false
			}
			out = append(out, x)
			return limit <= 0 || len(out) < limit
		})
		if err != nil {
			return err
		}
		return damaged
	})
	return out, total, err
}

// LatestUnfinished is the most recently started execution that has not
// finished.
func (h *Host) LatestUnfinished() (history.Execution, bool, error) {
	active, err := h.unfinished()
	if err != nil || len(active) == 0 {
		return history.Execution{}, false, err
	}
	latest := active[0]
	for _, x := range active[1:] {
		if x.Started.After(latest.Started) {
			latest = x
		}
	}
	return latest, true, nil
}

// Events reads an execution's history from seq from, at most limit events
// (all when limit <= 0).
func (h *Host) Events(id string, from uint64, limit int) ([]history.Event, error) {
	var out []history.Event
	var decodeErr error
	err := h.db.View(func(tx *store.Tx) error {
		err := tx.Events(id, from, func(seq uint64, data []byte) bool {
			ev, err := history.Decode(data)
			if err != nil {
				decodeErr = tx.EventDamaged(id, seq, err)
				return false
			}
			out = append(out, ev)
			return limit <= 0 || len(out) < limit
		})
		if err == nil && from <= 1 && len(out) == 0 {
			err = lostHistory(tx, id)
		}
		return err
	})
	if err == nil {
		err = decodeErr
	}
	return out, err
}

// JournalEntry is one journal record with its execution.
type JournalEntry struct {
	Execution string `json:"execution"`
	history.JournalRecord
}

// Journal lists journal records, of one execution or (id "") of all.
func (h *Host) Journal(id string) ([]JournalEntry, error) {
	var out []JournalEntry
	err := h.db.View(func(tx *store.Tx) error {
		var damaged error
		err := tx.JournalEntries(func(exec, step string, data []byte) bool {
			if id != "" && exec != id {
				return true
			}
			rec, err := history.DecodeJournal(exec, step, data)
			if err != nil {
				damaged = tx.JournalDamaged(exec, step, err)
				return false
			}
			out = append(out, JournalEntry{Execution: exec, JournalRecord: rec})
			return true
		})
		if err != nil {
			return err
		}
		return damaged
	})
	return out, err
}

// DeleteJournal removes a step's journal record (the article's exercise)
// and notes it in the execution's history.
func (h *Host) DeleteJournal(id, step string) error {
	if _, err := h.Execution(id); err != nil {
		return err
	}
	var existed bool
	now := h.clock.Now()
	ev := history.Event{Type: history.JournalDeleted, Time: now, Step: step, Text: "deleted by hand"}
	err := h.db.Update(func(tx *store.Tx) error {
		var err error
		if existed, err = tx.DeleteJournal(id, step); err != nil || !existed {
			return err
		}
		return history.Append(tx, id, &ev)
	})
	if err != nil {
		return err
	}
	if !existed {
		return fmt.Errorf("execution %s has no journal record for step %q", id, step)
	}
	h.bus.publish(notice.Notice{Execution: id, Event: &ev})
	return nil
}

// State is the whole state in one object, like the article's state.json.
type State struct {
	Outbox  []world.Message   `json:"outbox"`
	Keys    []world.StoredKey `json:"keys"`
	Journal []JournalEntry    `json:"journal"`
	CRM     []world.Record    `json:"crm"`
}

// State reads the outbox, the key store, every journal and the CRM.
func (h *Host) State() (State, error) {
	var s State
	var err error
	if s.Outbox, err = h.world.Outbox(0, 0); err != nil {
		return s, err
	}
	if s.Keys, err = h.world.Keys(0); err != nil {
		return s, err
	}
	if s.Journal, err = h.Journal(""); err != nil {
		return s, err
	}
	if s.CRM, err = h.world.Records(); err != nil {
		return s, err
	}
	if s.Outbox == nil {
		s.Outbox = []world.Message{}
	}
	if s.Keys == nil {
		s.Keys = []world.StoredKey{}
	}
	if s.Journal == nil {
		s.Journal = []JournalEntry{}
	}
	if s.CRM == nil {
		s.CRM = []world.Record{}
	}
	return s, nil
}
