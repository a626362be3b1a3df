// Package tui is retrylab's explorer: a Bubble Tea interface that shows an
// execution's trace beside the provider's outbox, live, with hotkeys that
// inject timeouts and crashes.
//
// The explorer never touches the database: it reads and acts through a
// Source (the engine's Host, or a client attached to a host in another
// process), always from tea.Cmds, so Update and View never block.
package tui

import "github.com/retrylab/retrylab/engine"

// Source is everything the explorer reads and does, as the engine defines
// it (engine.Source). *engine.Host and *engine.Client are ones.
type Source = engine.Source

var (
	_ Source = (*engine.Host)(nil)
	_ Source = (*engine.Client)(nil)
)
