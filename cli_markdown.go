package main

import (
	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
)

// showMarkdown writes the handout of one execution: `show --markdown`. The
// history streams through it a page at a time; the outbox part is this
// execution's messages alone.
func (a *app) showMarkdown(h engine.Service, x history.Execution) error {
	msgs, err := h.MessagesFor(x.ID)
	if err != nil {
		return err
	}
	recs, err := h.Records()
	if err != nil {
		return err
	}
	read := func(fn func(history.Event) error) error { return eachEvent(h, x.ID, fn, nil) }
	ho := narrate.Handout{Execution: x, Read: read, Messages: msgs, Records: recs}
	// A scenario run from a file outside the catalogue has no explanation
	// to add; the trace and the outbox still make the handout.
	if scn, err := scenario.NewCatalog(fixtures.FS).Get(x.Scenario); err == nil {
		ho.Scenario = scn
	}
	return narrate.Markdown(a.out, ho)
}
