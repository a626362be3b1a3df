package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
)

// Reader is what a face needs to show executions: the list, each one's
// history or imported trace, the effects the world saw, and notices of
// changes. It changes nothing. A read-only source (a Temporal cluster, a
// database of imported traces only) offers Reader alone; the roles below
// are what a face asks a source for, by type assertion, before it offers
// the keys or commands that need them.
type Reader interface {
	Execution(id string) (history.Execution, error)
	Executions(skip, limit int) ([]history.Execution, int, error)
	// FindExecutions is Executions of those that answer a filter
	// (execindex.Parse: text in the id, scenario, status or policy, or a
	// list marker), with how many answer it in all.
	FindExecutions(query string, skip, limit int) ([]history.Execution, int, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
	// ImportedEvents is an imported execution's trace (engine/otlp), which
	// has no history of retrylab's.
	ImportedEvents(id string) ([]trace.Event, error)
	MessagesFor(execution string) ([]world.Message, error)
	RecentMessages(limit int) ([]world.Message, int, error)
	Records() ([]world.Record, error)
	Subscribe(buffer int) (<-chan notice.Notice, func())
}

// Runner runs the catalogue's scenarios: starts, resumes and kills runs,
// and says which have a live worker.
type Runner interface {
	Scenarios() ([]*scenario.Scenario, error)
	Start(name string, opts RunOptions) (*Run, error)
	Resume(id string) (*Run, error)
	Kill(id string) error
	Running() []string
}

// FaultInjector arms the fault points of the next tool call and disarms
// them.
type FaultInjector interface {
	Arm(p fault.Point)
	Disarm()
	Armed() []fault.Point
}

// WorldControl is what a workshop changes by hand between runs: a step's
// journal record, the world clock, the world's state.
type WorldControl interface {
	DeleteJournal(id, step string) error
	AdvanceClock(d time.Duration) error
	WorldOffset() time.Duration
	ResetWorld() error
}

// Pacer sets slow motion for the runs to come, so a room can follow
// them (RuntimeAPI.SetPace); a face offers its key where the source has it.
type Pacer interface {
	SetPace(d time.Duration)
	Pace() time.Duration
}

// Source is every role together: what the explorer (package tui) reads
// and does on a database retrylab runs in, which Service extends for the
// CLI.
type Source interface {
	Reader
	Runner
	FaultInjector
	WorldControl
}

// ReadOnly is src with its reads only: a face given it finds no Runner,
// FaultInjector or WorldControl in it, so it offers no run, resume, fault or world
// key. A host shows a database of imported traces only this way: no
// scenario of retrylab's ran there, and none is to be run there.
func ReadOnly(src Reader) Reader { return readOnly{src} }

// readOnly hides every method of its Reader but Reader's.
type readOnly struct{ Reader }

// ImportsOnly is ReadOnly(src) for a source that holds imported traces
// only (OnlyImported): it says so (ShowsImportsOnly), so a face names
// nothing simulated there (no outbox, no CRM, no scenario to run).
func ImportsOnly(src Reader) Reader { return importsOnly{src} }

// importsOnly is readOnly that says it holds imports only.
type importsOnly struct{ Reader }

// ShowsImportsOnly says the source holds imported traces only.
func (importsOnly) ShowsImportsOnly() bool { return true }

// OnlyImported reports whether src holds executions and every one of them
// is imported (engine/otlp, engine/temporal): a database of imported traces
// only. It reads the list a page at a time and stops at the first
// execution retrylab ran.
func OnlyImported(src Reader) (bool, error) {
	const page = 512
	for skip := 0; ; skip += page {
		list, total, err := src.Executions(skip, page)
		if err != nil {
			return false, fmt.Errorf("reading the executions: %w", err)
		}
		if total == 0 {
			return false, nil
		}
		for _, x := range list {
			if x.Imported == "" {
				return false, nil
			}
		}
		if len(list) == 0 || skip+len(list) >= total {
			return true, nil
		}
	}
}

// Service is what the faces (the CLI and the explorer) use of the engine.
// *Local provides it in the process that owns the database (and
// control.Server, which serves it to other processes); control.Client
// provides it in a second process attached to that host, so both can work
// on one database at the same time without fighting over the file.
type Service interface {
	Source
	Journal(id string) ([]JournalEntry, error)
	Outbox() ([]world.Message, error)
	State() (State, error)
	// WriteState writes State as indented JSON a page at a time.
	WriteState(w io.Writer) error
	Reset() error

	DBPath() string
	MailURL() string
	CRMURL() string
	Close() error
	// CloseWhenIdle closes once nothing runs through this process for
	// others; a host waits for their runs and holds, a client closes at
	// once. waiting is told (once) what it waits for. A wait that ctx cuts
	// short closes at once and returns ctx's error.
	CloseWhenIdle(ctx context.Context, waiting func(running []string, holds int)) error
}

var _ Service = (*Local)(nil)

// Local is the Service of the process that owns the database: the host's
// runs and queries, with its world (Host.Providers) and its faults
// (Host.Faults) at hand, as one value for the faces.
type Local struct{ *Host }

// NewLocal is h as the faces use it.
func NewLocal(h *Host) *Local { return &Local{h} }

// SetPace is RuntimeAPI.SetPace: slow motion for the runs to come.
func (l *Local) SetPace(d time.Duration) { l.Runtime().SetPace(d) }

// Pace is RuntimeAPI.Pace.
func (l *Local) Pace() time.Duration { return l.Runtime().Pace() }

// Outbox lists every message the mail API delivered, in order.
func (l *Local) Outbox() ([]world.Message, error) { return l.Providers().Outbox() }

// OutboxFrom is Providers.OutboxFrom.
func (l *Local) OutboxFrom(from uint64, limit int) ([]world.Message, error) {
	return l.Providers().OutboxFrom(from, limit)
}

// RecentMessages is Providers.RecentMessages.
func (l *Local) RecentMessages(limit int) ([]world.Message, int, error) {
	return l.Providers().RecentMessages(limit)
}

// MessagesFor is Providers.MessagesFor.
func (l *Local) MessagesFor(execution string) ([]world.Message, error) {
	return l.Providers().MessagesFor(execution)
}

// Records is Providers.Records.
func (l *Local) Records() ([]world.Record, error) { return l.Providers().Records() }

// RecordsPage is Providers.RecordsPage.
func (l *Local) RecordsPage(from string, limit int) ([]world.Record, error) {
	return l.Providers().RecordsPage(from, limit)
}

// CRMWrites is Providers.CRMWrites.
func (l *Local) CRMWrites(from uint64, limit int) ([]world.CRMWrite, error) {
	return l.Providers().CRMWrites(from, limit)
}

// AdvanceClock is Providers.AdvanceClock.
func (l *Local) AdvanceClock(d time.Duration) error { return l.Providers().AdvanceClock(d) }

// WorldOffset is Providers.WorldOffset.
func (l *Local) WorldOffset() time.Duration { return l.Providers().WorldOffset() }

// ResetWorld is Providers.ResetWorld.
func (l *Local) ResetWorld() error { return l.Providers().ResetWorld() }

// MailURL is the mail API's address.
func (l *Local) MailURL() string { return l.Providers().MailURL() }

// CRMURL is the CRM service's address.
func (l *Local) CRMURL() string { return l.Providers().CRMURL() }

// Arm is Faults.Arm.
func (l *Local) Arm(p fault.Point) { l.Faults().Arm(p) }

// Disarm is Faults.Disarm.
func (l *Local) Disarm() { l.Faults().Disarm() }

// Armed is Faults.Armed.
func (l *Local) Armed() []fault.Point { return l.Faults().Armed() }

// DBPath is the database file the host owns.
func (l *Local) DBPath() string { return l.Store().Path() }

// Scenarios lists the catalogue in lesson order.
func (l *Local) Scenarios() ([]*scenario.Scenario, error) { return l.Catalog().All() }

// Reset wipes everything: executions, histories, journals and the world,
// like the article's `reset`. It refuses while a worker runs.
func (l *Local) Reset() error { return l.Host.Reset() }
