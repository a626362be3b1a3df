package engine

import (
	"context"
	"io"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
)

// Source is everything the explorer (package tui) reads and does: the
// one definition of it, which Service extends for the CLI.
type Source interface {
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
	Scenarios() ([]*scenario.Scenario, error)

	Start(name string, opts RunOptions) (*Run, error)
	Resume(id string) (*Run, error)
	Kill(id string) error
	Arm(p fault.Point)
	Disarm()
	Armed() []fault.Point
	DeleteJournal(id, step string) error
	AdvanceClock(d time.Duration) error
	WorldOffset() time.Duration
	ResetWorld() error
	Running() []string
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
