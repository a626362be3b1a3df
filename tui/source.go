// Package tui is retrylab's explorer: a Bubble Tea interface that shows an
// execution's trace beside the provider's outbox, live, with hotkeys that
// inject timeouts and crashes.
//
// The explorer never touches the database: it reads through a Source (an
// engine.Reader: the engine's Host, a client attached to a host in another
// process, a Temporal cluster) and acts through the roles the source also
// has (engine.Runner, Faults, WorldControl), always from tea.Cmds, so
// Update and View never block (TestUpdateAndViewDoNoIO holds it to that).
// A key whose role the source lacks is neither offered nor run.
//
// The screen is made of components (context.go): the executions list
// (execsPane), the trace (tracePane), the outbox and CRM (outboxPane), the
// detail (detailPane), lesson mode (lessonPane), the executions filter
// (filterBox), the scenario picker (scenarioPicker), the comparison
// (comparePane), the help page (helpPage), the workshop room's view
// (roomPane, over a RoomReader) and the slide view (slideView). Each has Update, View,
// SetSize and its own key bindings, and shares one Context (theme, keymap,
// size, focus, the source's roles). Each owns its state; the Model owns the
// source: it makes the reads and actions and hands their results to the
// components through their methods (TestModelKeepsOutOfComponents).
//
// Keys: the explorer's keys are lists of bindings {keys and help, group,
// enabled, action} (bindings.go): each pane declares its own (the moves,
// the trace's folds) and the explorer its own, and the dispatch, the
// footer's short help and the help page are built from them. Help,
// filter, picker, confirm, compare and lesson are modes on an overlay
// stack (modes.go): the top one gets a key first and may pass it down;
// under the stack the focused pane's bindings answer, then the
// explorer's. The room view and the slide view are modes too.
package tui

import (
	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
)

// Source is what the explorer needs of a source at least: its reads
// (engine.Reader). What else the source can do, the explorer asks it by
// type assertion (rolesOf) and offers only that: a Temporal cluster or a
// database of imported traces only (engine.ImportsOnly) gets no run, resume,
// fault or world key, in the footer, the help or the dispatch.
// *engine.Local (a host in this process), *control.Server (one other
// processes attach to) and *control.Client (one in another process) do
// everything.
type Source = engine.Reader

var (
	_ engine.Source = (*engine.Local)(nil)
	_ engine.Source = (*control.Server)(nil)
	_ engine.Source = (*control.Client)(nil)
	// S (slow motion) works on a host in this process, served or not.
	_ engine.Pacer = (*engine.Local)(nil)
	_ engine.Pacer = (*control.Server)(nil)
)

// roles are what the source shown can do besides reading; each is nil
// where it cannot.
type roles struct {
	run    engine.Runner
	faults engine.FaultInjector
	world  engine.WorldControl
	// erase empties the whole database (E).
	erase resetter
	// pace sets slow motion for the runs to come (S).
	pace engine.Pacer
	// importsOnly: the source holds imported traces only (a database of
	// imports, a Temporal cluster): no simulated outbox or CRM to name.
	importsOnly bool
}

// importsOnlySource is a source that says it holds imported traces only
// (engine.ImportsOnly).
type importsOnlySource interface{ ShowsImportsOnly() bool }

// resetter is a Source that can wipe its database (*engine.Local and
// *control.Client): executions, histories, journals and the world.
type resetter interface {
	Reset() error
}

// rolesOf asks src for each role. It calls nothing: a type assertion only.
func rolesOf(src Source) roles {
	var r roles
	r.run, _ = src.(engine.Runner)
	r.faults, _ = src.(engine.FaultInjector)
	r.world, _ = src.(engine.WorldControl)
	r.erase, _ = src.(resetter)
	r.pace, _ = src.(engine.Pacer)
	if io, ok := src.(importsOnlySource); ok {
		r.importsOnly = io.ShowsImportsOnly()
	}
	return r
}

// GrowingImports is what a Source may add when an imported execution's
// trace only ever grows while it is followed: each ImportedEvents of it
// holds the events of the one before, unchanged, then new ones (a Temporal
// cluster's follower translates each committed batch on its own). The
// explorer then folds only the new events into the trace it shows instead
// of the whole trace again.
type GrowingImports interface {
	ImportedGrows(id string) bool
}
