// Package tui is retrylab's explorer: a Bubble Tea interface that shows an
// execution's trace beside the provider's outbox, live, with hotkeys that
// inject timeouts and crashes.
//
// The explorer never touches the database: it reads and acts through a
// Source (the engine's Host, or a client attached to a host in another
// process), always from tea.Cmds, so Update and View never block.
package tui

import (
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
)

// Source is everything the explorer reads and does. *engine.Host is one.
type Source interface {
	Execution(id string) (history.Execution, error)
	Executions(skip, limit int) ([]history.Execution, int, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
	MessagesFor(execution string) ([]world.Message, error)
	RecentMessages(limit int) ([]world.Message, int, error)
	Records() ([]world.Record, error)
	Subscribe(buffer int) (<-chan engine.Notice, func())
	Scenarios() ([]*scenario.Scenario, error)

	Start(name string, opts engine.RunOptions) (*engine.Run, error)
	Resume(id string) (*engine.Run, error)
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

var _ Source = (*engine.Host)(nil)
