// Package notice holds Notice, what the host publishes to its subscribers
// (the explorer, attached clients, the narration) as it records. It is a
// leaf: readers of notices need not import the engine.
package notice

import (
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
)

// Notice is one thing that happened: an event recorded in a history, or an
// activity of the world. Lagged means the subscriber fell behind and missed
// notices: it should re-read what it shows from the store.
type Notice struct {
	Execution string          `json:"execution,omitempty"`
	Event     *history.Event  `json:"event,omitempty"`
	Activity  *world.Activity `json:"activity,omitempty"`
	Lagged    bool            `json:"lagged,omitempty"`
	// Host is a line the host says to whoever watches, about no execution
	// in particular: an import committed after its client went away. The
	// explorer shows it in its status line; serve prints it.
	Host string `json:"host,omitempty"`
	// Gone is the last notice a reader gets when the retrylab it watched
	// through (an attached client's host) quit or was killed; Host says so
	// in words. What the reader shows is no longer live.
	Gone bool `json:"gone,omitempty"`
}
