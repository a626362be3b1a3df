package engine

import (
	"time"

	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// Providers is the simulated world as the host runs it: the mail API and
// the CRM, what they hold and did (the provider's truth the outbox pane
// shows), their clock and their key retention. The host hands it out
// (Host.Providers); it holds no state of its own.
type Providers struct{ h *Host }

// Providers is the host's simulated world.
func (h *Host) Providers() Providers { return Providers{h} }

// MailURL is the mail API's address.
func (p Providers) MailURL() string { return p.h.world.MailURL() }

// CRMURL is the CRM service's address.
func (p Providers) CRMURL() string { return p.h.world.CRMURL() }

// Outbox lists every message the mail API delivered, in order.
func (p Providers) Outbox() ([]world.Message, error) { return p.h.world.Outbox(0, 0) }

// OutboxFrom lists the delivered messages from sequence number from on, at
// most limit of them (0: all): the mail ledger, read incrementally.
func (p Providers) OutboxFrom(from uint64, limit int) ([]world.Message, error) {
	return p.h.world.Outbox(from, limit)
}

// RecentMessages lists the newest limit messages of the whole outbox, oldest
// first, and the outbox's total size.
func (p Providers) RecentMessages(limit int) ([]world.Message, int, error) {
	return p.h.world.Recent(limit)
}

// MessagesFor lists the outbox messages an execution caused, in order.
func (p Providers) MessagesFor(execution string) ([]world.Message, error) {
	return p.h.world.MessagesFor(execution)
}

// Records lists the CRM's rows.
func (p Providers) Records() ([]world.Record, error) { return p.h.world.Records() }

// RecordsPage lists at most limit CRM rows with id >= from, in id order,
// at a cost that follows limit rather than the size of the CRM.
func (p Providers) RecordsPage(from string, limit int) ([]world.Record, error) {
	return p.h.world.RecordsPage(from, limit)
}

// CRMWrites lists the CRM's writes from sequence number from on, at most
// limit of them (0: all): the CRM ledger, read incrementally.
func (p Providers) CRMWrites(from uint64, limit int) ([]world.CRMWrite, error) {
	return p.h.world.CRMWrites(from, limit)
}

// MailRequests counts requests the mail API answered for an execution since
// the host started.
func (p Providers) MailRequests(exec string) int {
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	return p.h.mailRequests[exec]
}

// AdvanceClock moves the world clock forward (to teach key retention) and
// records the move in the histories it concerns (Host.recordClock), in the
// transaction that moves the clock, so a user sees the cause of a late
// duplicate on the timeline, and it survives a kill as the move does.
func (p Providers) AdvanceClock(d time.Duration) error {
	var recorded []notice.Notice
	err := p.h.world.AdvanceRecorded(d, func(tx *store.Tx, m world.ClockMove) error {
		var err error
		recorded, err = p.h.recordClock(tx, m)
		return err
	})
	if err != nil {
		return err
	}
	for _, n := range recorded {
		p.h.bus.publish(n)
	}
	return nil
}

// WorldOffset is how far the world clock runs ahead of the wall clock.
func (p Providers) WorldOffset() time.Duration { return p.h.world.Now().Sub(p.h.clock.Now()) }

// SetRetention sets how long the world keeps an execution's idempotency
// keys (0: forever), for executions the host does not run itself.
func (p Providers) SetRetention(execution string, d time.Duration) {
	p.h.world.SetRetention(execution, d)
}

// ResetWorld empties the providers' outbox, key store and CRM.
func (p Providers) ResetWorld() error {
	if err := p.h.world.Reset(); err != nil {
		return err
	}
	p.h.mu.Lock()
	p.h.mailRequests = map[string]int{}
	p.h.mu.Unlock()
	p.h.bus.publish(notice.Notice{Lagged: true})
	return nil
}
