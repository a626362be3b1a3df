package engine

import (
	"sort"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// recordClock records a move of the world clock, inside the transaction
// that makes it, in the history of every execution it concerns: each one
// whose idempotency keys it expired (a ClockMoved, then a KeyExpired per
// key), and each one not finished (a ClockMoved: a resume runs on the
// moved clock). Executions this database does not hold, and imported ones
// (the other engine's record), get nothing. It returns the notices to
// publish once the transaction committed, in order.
func (h *Host) recordClock(tx *store.Tx, m world.ClockMove) ([]notice.Notice, error) {
	expired := map[string][]world.StoredKey{}
	for _, k := range m.Expired {
		if id := k.Attribution.Execution; id != "" {
			expired[id] = append(expired[id], k)
		}
	}
	ids := make([]string, 0, len(expired))
	for id := range expired {
		ids = append(ids, id)
	}
	if err := tx.ScanInPlace(store.Active, func(k, _ []byte) bool {
		if _, ok := expired[string(k)]; !ok {
			ids = append(ids, string(k))
		}
		return true
	}); err != nil {
		return nil, err
	}
	sort.Strings(ids)
	now := h.clock.Now()
	var out []notice.Notice
	for _, id := range ids {
		data := tx.Execution(id)
		if data == nil {
			continue
		}
		x, err := history.DecodeExecution(data)
		if err != nil {
			return nil, err
		}
		if x.Imported != "" {
			continue
		}
		evs := []history.Event{{Type: history.ClockMoved, Time: now, Duration: m.By, Offset: m.Offset}}
		for _, k := range expired[id] {
			at := k.Attribution
			evs = append(evs, history.Event{Type: history.KeyExpired, Time: now, Run: at.Run, Step: at.Step,
				Attempt: at.Attempt, Key: k.Key, Duration: k.Expires.Sub(k.Created)})
		}
		for i := range evs {
			if err := history.Append(tx, id, &evs[i]); err != nil {
				return nil, err
			}
			out = append(out, notice.Notice{Execution: id, Event: &evs[i]})
		}
	}
	return out, nil
}
