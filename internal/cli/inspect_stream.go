package cli

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/dur"
	"github.com/retrylab/retrylab/internal/jsonstream"
)

// The readers of one history (show, show --json, show --markdown) stream:
// they read the history a page at a time, never all of it into memory,
// and write each line as soon as it is final, so the first line of an
// execution of any length comes at once and memory stays flat.

// eventPage is how many events a streaming reader reads at once.
const eventPage = 1024

// eachEvent calls fn for every event of an execution's history, in order,
// reading it from the service a page at a time; after each page it calls
// flushed (when not nil), so output written for the page reaches the
// reader before the next page is read.
func eachEvent(h engine.Source, id string, fn func(history.Event) error, flushed func() error) error {
	from := uint64(0)
	for {
		page, err := h.Events(id, from, eventPage)
		if err != nil {
			return err
		}
		for _, ev := range page {
			if err := fn(ev); err != nil {
				return err
			}
		}
		if flushed != nil {
			if err := flushed(); err != nil {
				return err
			}
		}
		if len(page) < eventPage {
			return nil
		}
		from = page[len(page)-1].Seq + 1
	}
}

// printHistory narrates each recorded event, as `run` does live, with what
// only the history can tell, read from the fold as it goes: the gaps where
// no worker ran, the effects each attempt caused, and the attempts whose
// outcome the agent never learnt though the provider acted (◆). Each
// attempt is forgotten by the fold once its answer is written, so ◆ is
// decided at the answer: an effect the history records after it (none of
// retrylab's faults does that) shows on its own line only.
func printHistory(out io.Writer, h engine.Source, x history.Execution) error {
	w := bufio.NewWriter(out)
	took := x.Updated.Sub(x.Started)
	fmt.Fprintf(w, "%s  scenario %s  policy %s  %s  runs %d  started %s  took %s\n\n",
		x.ID, x.Scenario, x.Policy, x.Status, x.Runs, x.Started.Format(time.RFC3339), dur.Text(took.Round(time.Millisecond)))
	if err := w.Flush(); err != nil {
		return err
	}
	t := trace.New(x.ID)
	t.Stream()
	n := narrate.New(x.ID)
	runs := 0
	line := func(rel float64, l string) { fmt.Fprintf(w, "%+8.3fs  %s\n", rel, l) }
	err := eachEvent(h, x.ID, func(ev history.Event) error {
		history.Apply(t, ev)
		if len(t.Runs) > runs {
			// The event opened a run: say how long nothing ran before it.
			runs = len(t.Runs)
			if r := t.Runs[runs-1]; r.Number > 1 && r.Idle >= gapWorth {
				fmt.Fprintf(w, "%9s   %s %s with no worker running\n", "", trace.MarkGap.Glyph(), dur.Text(r.Idle.Round(100*time.Millisecond)))
			}
		}
		rel := ev.Time.Sub(x.Started).Seconds()
		for _, l := range n.Lines(notice.Notice{Execution: x.ID, Event: &ev}) {
			line(rel, l)
		}
		switch ev.Type {
		case history.EffectObserved:
			if fx := ev.Effect; fx != nil {
				line(rel, fmt.Sprintf("%-11s %s%s%s for %s attempt %d (recorded)", "["+effectTag(fx.Service)+"]",
					effectVerb(fx.Service), fx.ID, effectTarget(fx), ev.Step, ev.Attempt))
			}
		case history.AttemptFinished:
			if at := t.Attempt(ev.Step, ev.Attempt); at != nil {
				if at.Ambiguous() {
					line(rel, ambiguousLine(at))
				}
				t.Forget(at)
			}
		case history.WorkerCrashed:
			for _, r := range t.Runs {
				if r.Number == ev.Run {
					for _, at := range crashedIn(r) {
						if at.Ambiguous() {
							line(rel, ambiguousLine(at))
						}
						t.Forget(at)
					}
				}
			}
		}
		return nil
	}, w.Flush)
	if err != nil {
		return err
	}
	return w.Flush()
}

// printHistoryJSON writes {"execution": x, "events": [...]} exactly as
// printJSON would, but an event at a time.
func printHistoryJSON(out io.Writer, h engine.Source, x history.Execution) error {
	o := jsonstream.NewObject(out)
	if err := o.Field("execution", x); err != nil {
		return err
	}
	o.Array("events")
	if err := o.Flush(); err != nil {
		return err
	}
	err := eachEvent(h, x.ID, func(ev history.Event) error {
		return o.Elem(ev)
	}, o.Flush)
	if err != nil {
		return err
	}
	return o.Close()
}
