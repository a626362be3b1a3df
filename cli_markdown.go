package main

import (
	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
)

// showMarkdown writes the handout of one execution: `show --markdown`.
func (a *app) showMarkdown(h *engine.Host, x history.Execution, events []history.Event) error {
	msgs, err := h.World().Outbox(0, 0)
	if err != nil {
		return err
	}
	recs, err := h.World().Records()
	if err != nil {
		return err
	}
	ho := narrate.Handout{Execution: x, Events: events, Messages: msgs, Records: recs}
	// A scenario run from a file outside the catalogue has no explanation
	// to add; the trace and the outbox still make the handout.
	if scn, err := h.Catalog().Get(x.Scenario); err == nil {
		ho.Scenario = scn
	}
	return narrate.Markdown(a.out, ho)
}
