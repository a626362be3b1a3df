package check

import (
	"fmt"
	"sync"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// CheckDB checks every execution of a database. Open the database read-only
// (store.Options{ReadOnly: true}): the check never writes. Undecodable
// entries are durability violations, not errors; an error means the
// database could not be read.
func CheckDB(db *store.DB, opts Options) (*Report, error) { return checkDB(db, opts, keepAttempts) }

// checkDB is CheckDB keeping at most keep attempts of an execution in memory.
func checkDB(db *store.DB, opts Options, keep int) (*Report, error) {
	c := New(opts)
	c.keep = keep
	var bad []Violation
	err := db.View(func(tx *store.Tx) error {
		if err := tx.Scan(world.BucketOutbox, nil, false, func(k, v []byte) bool {
			m, err := world.DecodeMessage(k, v)
			if err != nil {
				bad = append(bad, Violation{Kind: "durability", Detail: fmt.Sprintf("outbox entry %d does not decode: %v", store.DecodeU64(k), err)})
				return true
			}
			c.AddEffects(MessageEffect(m))
			return true
		}); err != nil {
			return err
		}
		return tx.Scan(world.BucketCRMWrites, nil, false, func(k, v []byte) bool {
			wr, err := world.DecodeCRMWrite(k, v)
			if err != nil {
				bad = append(bad, Violation{Kind: "durability", Detail: fmt.Sprintf("CRM write %d does not decode: %v", store.DecodeU64(k), err)})
				return true
			}
			c.AddEffects(WriteEffect(wr))
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("check %s: read the ledger: %w", db.Path(), err)
	}
	// Executions are read one at a time, so memory holds one history at once.
	var ids []string
	if err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, _ []byte) bool {
			ids = append(ids, id)
			return true
		})
	}); err != nil {
		return nil, fmt.Errorf("check %s: list executions: %w", db.Path(), err)
	}
	// Each history streams through the check an event at a time, so memory
	// holds the check's record of one execution's attempts, never its
	// events.
	for _, id := range ids {
		err := db.View(func(tx *store.Tx) error {
			rec := tx.Execution(id)
			x, err := history.DecodeExecution(rec)
			if err != nil {
				bad = append(bad, Violation{Execution: id, Kind: "durability", Detail: fmt.Sprintf("execution record does not decode: %v", err)})
				return nil
			}
			if x.ID == "" || x.Imported != "" {
				return nil // imported traces have no ledger to hold them to: 'retrylab audit' is theirs
			}
			// A second pass, when one is needed, reads the history in
			// the same transaction; an event that does not decode was
			// reported by the first.
			reread := func(fn func(history.Event)) error {
				return tx.Events(id, 0, func(_ uint64, data []byte) bool {
					if ev, err := history.Decode(data); err == nil {
						fn(ev)
					}
					return true
				})
			}
			s := c.Stream(x, reread)
			if err := tx.Events(id, 0, func(seq uint64, data []byte) bool {
				ev, err := history.Decode(data)
				if err != nil {
					bad = append(bad, Violation{Execution: id, Kind: "durability", Detail: fmt.Sprintf("event %d does not decode: %v", seq, err)})
					return true
				}
				s.Apply(ev)
				return true
			}); err != nil {
				return err
			}
			s.Done()
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("check %s: read %s: %w", db.Path(), id, err)
		}
	}
	r := c.Report()
	r.Violations = append(bad, r.Violations...)
	return r, nil
}

// Live checks executions of a running host one by one, reading the ledger
// incrementally: a chaos host uses it to count violations as it goes.
type Live struct {
	mu       sync.Mutex
	c        *Checker
	mailFrom uint64
	crmFrom  uint64
}

// NewLive returns a live checker.
func NewLive(opts Options) *Live { return &Live{c: New(opts), mailFrom: 1, crmFrom: 1} }

// LiveSource is what a live check reads of a running host: its ledgers,
// incrementally, and an execution's history. *engine.Host is one.
type LiveSource interface {
	OutboxFrom(from uint64, limit int) ([]world.Message, error)
	CRMWrites(from uint64, limit int) ([]world.CRMWrite, error)
	Execution(id string) (history.Execution, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
}

// Execution checks one finished execution of h.
func (l *Live) Execution(h LiveSource, id string) (ExecResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs, err := h.OutboxFrom(l.mailFrom, 0)
	if err != nil {
		return ExecResult{}, err
	}
	for _, m := range msgs {
		l.c.AddEffects(MessageEffect(m))
		l.mailFrom = m.Seq + 1
	}
	writes, err := h.CRMWrites(l.crmFrom, 0)
	if err != nil {
		return ExecResult{}, err
	}
	for _, wr := range writes {
		l.c.AddEffects(WriteEffect(wr))
		l.crmFrom = wr.Seq + 1
	}
	x, err := h.Execution(id)
	if err != nil {
		return ExecResult{}, err
	}
	events, err := h.Events(id, 0, 0)
	if err != nil {
		return ExecResult{}, err
	}
	return l.c.Execution(x, events), nil
}
