package engine

import "github.com/retrylab/retrylab/store"

// Store is the host's database, for adapters that keep their own
// collections in it (engine/otlp's receiver of live traces).
func (h *Host) Store() *store.DB { return h.db }

// Announce tells subscribers (a running explorer) that an execution
// changed outside a run, as when imported spans arrive.
func (h *Host) Announce(exec string) { h.bus.publish(Notice{Execution: exec}) }
