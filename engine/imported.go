package engine

import (
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/trace"
)

// Announce tells subscribers (a running explorer) that an execution
// changed outside a run, as when imported spans arrive.
func (h *Host) Announce(exec string) { h.bus.publish(notice.Notice{Execution: exec}) }

// ImportedEvents is an imported execution's trace as the fold's input
// events, translated by its source (Config.Imports); an execution
// retrylab ran has none.
func (h *Host) ImportedEvents(id string) ([]trace.Event, error) {
	return h.stored().ImportedEvents(id)
}

// stored reads the host's database, imported executions through the
// host's sources.
func (h *Host) stored() stored { return stored{h.db, h.cfg.Imports} }
