package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
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
	cat := scenario.NewCatalog(fixtures.FS)
	if scn, err := cat.Get(x.Scenario); err == nil {
		ho.Scenario = scn
	}
	// A mistake's or a fix's handout compares the pair before its closing
	// note.
	if ho.Scenario != nil {
		scn := ho.Scenario
		ho.More = func(w io.Writer) error { return a.pairMarkdown(w, h, cat, scn, x) }
	}
	return narrate.Markdown(a.out, ho)
}

// pairMarkdown ends the handout of a mistake or its fix with the diff
// line of the pair: this execution beside the latest execution of the
// other half in the database, or else a run of the other half on a scratch
// database.
func (a *app) pairMarkdown(w io.Writer, h engine.Service, cat *scenario.Catalog, scn *scenario.Scenario, x history.Execution) error {
	pair, ok := lesson.PairOf(cat, scn)
	if !ok {
		return nil
	}
	this, err := lesson.FoldExecution(h, x.ID)
	if err != nil {
		return err
	}
	other := pair.Fix
	if scn == pair.Fix {
		other = pair.Mistake
	}
	var that *trace.Trace
	where := ""
	if id, found := latestOf(h, other); found {
		t, err := lesson.FoldExecution(h, id)
		if err != nil {
			return err
		}
		that = t
		if scn == pair.Fix {
			where = fmt.Sprintf("`%s` lines the two up call by call.", lesson.Command(id, x.ID))
		} else {
			where = fmt.Sprintf("`%s` lines the two up call by call.", lesson.Command(x.ID, id))
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		t, err := lesson.RunScratch(ctx, scratchOpener(), other)
		if err != nil {
			return fmt.Errorf("handout: compare with %s: %w", other.Name, err)
		}
		that = t
		where = fmt.Sprintf("This database holds no execution of %s: it was run on a scratch database for this comparison.", other.Name)
	}
	mistake, fix := that, this
	if scn == pair.Mistake {
		mistake, fix = this, that
	}
	_, err = fmt.Fprintf(w, "## What the fix changes\n\n%s fixes %s:\n\n%s\n\n%s\n", pair.Fix.Name, pair.Mistake.Name,
		lesson.DiffLine(mistake, fix), where)
	return err
}

// latestOf finds the newest execution of a scenario: its fixed id, or the
// newest of the last thousand executions that ran it.
func latestOf(h engine.Service, scn *scenario.Scenario) (string, bool) {
	if scn.Execution != "" {
		if x, err := h.Execution(scn.Execution); err == nil && x.Scenario == scn.Name {
			return x.ID, true
		}
	}
	list, _, err := h.Executions(0, 1000)
	if err != nil {
		return "", false
	}
	for _, x := range list {
		if x.Scenario == scn.Name {
			return x.ID, true
		}
	}
	return "", false
}
