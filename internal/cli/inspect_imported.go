package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/dur"
)

// showImported prints an imported execution: its spans translated and
// folded, as a tree of runs, turns, calls and attempts with their span ids;
// --json prints the record and the fold's input events.
func (a *app) showImported(h engine.Service, x history.Execution, asJSON bool) error {
	events, err := h.ImportedEvents(x.ID)
	if err != nil {
		return err
	}
	unit, refWord := a.imports.Units(x.Imported)
	if asJSON {
		if events == nil {
			events = []trace.Event{}
		}
		return printJSON(a.out, struct {
			Execution history.Execution `json:"execution"`
			Events    []trace.Event     `json:"events"`
		}{x, events})
	}
	t := trace.Fold(x.ID, events)
	took := "(running)"
	if !x.Ended.IsZero() {
		took = dur.Text(x.Ended.Sub(x.Started).Round(time.Millisecond))
	}
	fmt.Fprintf(a.out, "%s  imported from %s  scenario %s  %s  runs %d  %s %s  started %s  took %s\n",
		x.ID, x.Source, x.Scenario, x.Status, x.Runs, unit, sourceCount(events, unit), x.Started.Format(time.RFC3339), took)
	if len(events) > 0 && events[0].Attrs["orphans"] != "" {
		fmt.Fprintf(a.out, "orphans (parent never arrived, kept): %s\n", events[0].Attrs["orphans"])
	}
	clock := &inOrder{start: x.Started}
	var nodes func([]trace.Node, string)
	nodes = func(ns []trace.Node, indent string) {
		for _, n := range ns {
			switch v := n.(type) {
			case *trace.Turn:
				at, stamp := clock.at(v.Time)
				fmt.Fprintf(a.out, "%s  %sturn %d  %s%s\n", at, indent, v.Number, v.Text, stamp)
				nodes(v.Nodes, indent+"  ")
			case *trace.Call:
				at, stamp := clock.at(v.Time)
				fmt.Fprintf(a.out, "%s  %s%s %s  call %s%s\n", at, indent, v.Tool, v.Args, v.Call, stamp)
				for _, at := range v.Attempts {
					col, stamp := clock.at(at.Started)
					line := fmt.Sprintf("%s  %s  %s %s  %s  %s  %s", col, indent+"  ", at.Mark(), trace.AttemptWords(at.N, at.NotKept),
						at.Mark().Word(), tookWords(at), refWord+at.Ref)
					if at.Key != "" {
						line += "  key " + at.Key
					}
					if len(at.Faults) > 0 {
						line += "  " + trace.MarkFault.Glyph() + strings.Join(at.Faults, ",")
					}
					if at.Error != "" {
						line += "  " + trace.Headline(at.Error) // whole in --json and the detail pane
					}
					if o := at.Attrs["orphan"]; o != "" {
						line += "  (orphan: " + o + ")"
					}
					fmt.Fprintln(a.out, line+stamp)
				}
			case *trace.Note:
				at, stamp := clock.at(v.Time)
				fmt.Fprintln(a.out, strings.TrimRight(fmt.Sprintf("%s  %s%s %s", at, indent, v.Mark, noteWords(v)), " ")+stamp)
			}
		}
	}
	for _, r := range t.Runs {
		at, stamp := clock.at(r.Started)
		fmt.Fprintf(a.out, "%s  run %d%s\n", at, r.Number, stamp)
		nodes(r.Nodes, "  ")
	}
	return nil
}

// sourceCount is how many spans or history events the importer read for
// the trace, as its first event says.
func sourceCount(events []trace.Event, unit string) string {
	if len(events) == 0 || events[0].Attrs[unit] == "" {
		return "0"
	}
	return events[0].Attrs[unit]
}

// noteWords are what show says of a note of an imported trace: an
// execution's end as its source gave it ("execution timed out", "execution
// failed: boom"), any other note by its kind, text and error.
func noteWords(v *trace.Note) string {
	if v.Kind == trace.ExecutionEnded {
		status, why := v.EndWords()
		if why == "" {
			return "execution " + status
		}
		return "execution " + status + ": " + why
	}
	return fmt.Sprintf("%s %s %s", strings.ReplaceAll(string(v.Kind), ".", " "), v.Text, v.Error)
}

// tookWords are how long an imported attempt took, as the explorer says it
// (dur.Short: "<1ms" below a millisecond), or "—" when nothing says: the
// source did not keep the attempts, or the attempt is in flight (its mark's
// word says so).
func tookWords(at *trace.Attempt) string {
	if at.NotKept > 0 || !at.Finished {
		return "—"
	}
	return dur.Short(at.Duration)
}
