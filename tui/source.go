// Package tui is retrylab's explorer: a Bubble Tea interface that shows an
// execution's trace beside the provider's outbox, live, with hotkeys that
// inject timeouts and crashes.
//
// The explorer never touches the database: it reads and acts through a
// Source (the engine's Host, or a client attached to a host in another
// process), always from tea.Cmds, so Update and View never block
// (TestUpdateAndViewDoNoIO holds it to that).
//
// The screen is made of components (context.go): the executions list
// (execsPane), the trace (tracePane), the outbox and CRM (outboxPane), the
// detail (detailPane), lesson mode (lessonPane), the executions filter
// (filterBox), the scenario picker (scenarioPicker), the comparison
// (comparePane) and the help page (helpPage). Each has Update, View,
// SetSize and its own key bindings, and shares one Context (theme, keymap,
// size, focus). The Model owns the source: it makes the reads and actions
// and hands their results to the components; the footer's short help is
// bubbles' help.Model over the keys of the component in front.
package tui

import (
	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
)

// Source is everything the explorer reads and does, as the engine defines
// it (engine.Source). *engine.Local (a host in this process),
// *control.Server (one other processes attach to) and *control.Client (one
// in another process) are ones.
type Source = engine.Source

var (
	_ Source = (*engine.Local)(nil)
	_ Source = (*control.Server)(nil)
	_ Source = (*control.Client)(nil)
)

// GrowingImports is what a Source may add when an imported execution's
// trace only ever grows while it is followed: each ImportedEvents of it
// holds the events of the one before, unchanged, then new ones (a Temporal
// cluster's follower translates each committed batch on its own). The
// explorer then folds only the new events into the trace it shows instead
// of the whole trace again.
type GrowingImports interface {
	ImportedGrows(id string) bool
}
