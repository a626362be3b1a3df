package engine

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// Announce tells subscribers (a running explorer) that an execution
// changed outside a run, as when imported spans arrive.
func (h *Host) Announce(exec string) { h.bus.publish(notice.Notice{Execution: exec}) }

// ImportedEvents is an imported execution's trace as the fold's input
// events, translated from its spans or its Temporal history; an execution
// retrylab ran has none.
func (h *Host) ImportedEvents(id string) ([]trace.Event, error) {
	x, err := h.Execution(id)
	if err != nil {
		return nil, err
	}
	if x.Imported == temporal.ImportedFormat {
		var evs []trace.Event
		err := h.db.View(func(tx *store.Tx) error {
			var err error
			evs, err = temporal.LoadEvents(tx, id)
			return err
		})
		return evs, err
	}
	if x.Imported != otlp.ImportedFormat {
		return nil, fmt.Errorf("execution %s was not imported: read its history", id)
	}
	spans, err := otlp.LoadSpans(h.db, id)
	if err != nil {
		return nil, err
	}
	return otlp.Events(spans), nil
}
