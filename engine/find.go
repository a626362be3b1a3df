package engine

import (
	"errors"
	"sync"

	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// finder keeps the host's index of execution records for FindExecutions:
// built once from the store (in the background, from the first call of
// IndexExecutions or FindExecutions) and kept current by the store, which
// tells it of every committed change to a record.
type finder struct {
	once  sync.Once
	ix    *execindex.Index
	ready chan struct{} // closed when the build ended
	err   error         // the build's error, set before ready closes
	mu    sync.Mutex
	stop  bool // the host is closing: the build gives up
}

// IndexExecutions starts building the index FindExecutions answers from, in
// the background, unless it is built or being built. A face that will filter
// executions calls it early (the explorer, at open) so the first filter does
// not wait for the build: about 4-5 µs per execution (4-5 s at a million),
// and about 41 bytes of memory per execution while the host lives.
func (h *Host) IndexExecutions() {
	h.find.once.Do(func() {
		h.find.ix = execindex.New()
		h.find.ready = make(chan struct{})
		// Watch first: a change committed while the build reads is queued
		// and applied after it, in commit order (re-applying one the build
		// already saw changes nothing).
		h.db.WatchExecutions(h.find.ix)
		go func() {
			defer close(h.find.ready)
			h.find.err = h.find.ix.Load(func(add func(id []byte), put func(record []byte)) error {
				return h.db.View(func(tx *store.Tx) error {
					stopped := func() bool {
						h.find.mu.Lock()
						defer h.find.mu.Unlock()
						return h.find.stop
					}
					n := 0
					more := func() bool { n++; return n%4096 != 0 || !stopped() }
					err := tx.ExecutionOrder(func(id []byte) bool { add(id); return more() })
					if err == nil {
						err = tx.ExecutionRecords(func(_, rec []byte) bool { put(rec); return more() })
					}
					if err == nil && stopped() {
						err = store.ErrClosed
					}
					return err
				})
			})
		}()
	})
}

// stopIndex makes a build in progress give up and waits for it.
func (h *Host) stopIndex() {
	h.find.mu.Lock()
	h.find.stop = true
	h.find.mu.Unlock()
	h.find.once.Do(func() { // never built: nothing will be
		h.find.ready = make(chan struct{})
		h.find.err = store.ErrClosed
		close(h.find.ready)
	})
	<-h.find.ready
}

// FindExecutions lists the executions that answer a filter (the explorer's:
// execindex.Parse), newest first, skipping skip, at most limit, and returns
// how many answer it in all. An empty filter is Executions. It answers from
// the host's index of records (IndexExecutions; the first call waits for its
// build), reading from the store only the records of the page; should the
// index not hold the records, it scans them.
func (h *Host) FindExecutions(query string, skip, limit int) ([]history.Execution, int, error) {
	q := execindex.Parse(query)
	if q.All() {
		return h.Executions(skip, limit)
	}
	h.IndexExecutions()
	<-h.find.ready
	err := h.find.err
	var ids []string
	var total int
	if err == nil {
		ids, total, err = h.find.ix.Find(q, skip, limit)
	}
	if errors.Is(err, execindex.ErrFull) {
		return h.scanExecutions(q, skip, limit)
	}
	if err != nil {
		return nil, 0, err
	}
	out := make([]history.Execution, 0, len(ids))
	err = h.db.View(func(tx *store.Tx) error {
		for _, id := range ids {
			data := tx.Execution(id)
			if data == nil {
				continue // deleted since the index answered
			}
			x, err := history.DecodeExecution(data)
			if err != nil {
				return tx.ExecutionDamaged(id, err)
			}
			out = append(out, x)
		}
		return nil
	})
	return out, total, err
}

// scanExecutions answers q by reading every record: the rule without the
// index, for records the index cannot hold.
func (h *Host) scanExecutions(q execindex.Query, skip, limit int) ([]history.Execution, int, error) {
	var out []history.Execution
	total := 0
	err := h.db.View(func(tx *store.Tx) error {
		var damaged error
		err := tx.Executions(true, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				damaged = tx.ExecutionDamaged(id, err)
				return false
			}
			if !q.Match(x) {
				return true
			}
			if total >= skip && (limit <= 0 || len(out) < limit) {
				out = append(out, x)
			}
			total++
			return true
		})
		if err != nil {
			return err
		}
		return damaged
	})
	return out, total, err
}
