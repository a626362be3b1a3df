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

// Faults arms the fault points of the next tool call and disarms them.
type Faults interface {
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

// Source is every role together: what the explorer (package tui) reads
// and does on a database retrylab runs in, which Service extends for the
// CLI.
type Source interface {
	Reader
	Runner
	Faults
	WorldControl
}

// ReadOnly is src with its reads only: a face given it finds no Runner,
// Faults or WorldControl in it, so it offers no run, resume, fault or world
// key. A host shows a database of imported traces only this way: no
// scenario of retrylab's ran there, and none is to be run there.
func ReadOnly(src Reader) Reader { return readOnly{src} }

// readOnly hides every method of its Reader but Reader's.
type readOnly struct{ Reader }

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
// *Host provides it in the process that owns the database; *Client provides
// it in a second process attached to that host, so both can work on one
// database at the same time without fighting over the file.
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

var (
	_ Service = (*Host)(nil)
	_ Service = (*Client)(nil)
)

// Outbox lists every message the mail API delivered, in order.
func (h *Host) Outbox() ([]world.Message, error) { return h.world.Outbox(0, 0) }
