package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/timeline"
	"github.com/retrylab/retrylab/engine/trace"
)

// timelineWidth is the width `show --timeline` draws at: the explorer's
// wide layout, and what a handout's code block holds.
const timelineWidth = 120

// withTimeline adds --timeline to show: instead of the history it prints
// the execution's timeline (engine/timeline), the picture the explorer's
// Timeline view (w) draws, then its moments in words.
func (a *app) withTimeline(cmd *cobra.Command) *cobra.Command {
	var on bool
	cmd.Flags().BoolVar(&on, "timeline", false, "print the timeline: attempts, deadlines, backoff and effects on one time axis")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !on {
			return run(c, args)
		}
		if c.Flags().Changed("json") || c.Flags().Changed("markdown") {
			return &exitError{code: 2, msg: "show: --timeline excludes --json and --markdown"}
		}
		// A read, as show is: it neither writes to the file nor creates
		// one (withReader).
		return a.withReader(func(h engine.Service) error {
			id, err := pickExecution(h, args)
			if err != nil {
				return err
			}
			x, err := h.Execution(id)
			if err != nil {
				return err
			}
			tl, err := buildTimeline(h, x)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "%s  %s  timeline\n\n", x.ID, x.Scenario)
			for _, l := range tl.Text(timelineWidth) {
				fmt.Fprintln(a.out, l)
			}
			return nil
		})
	}
	return cmd
}

// buildTimeline folds an execution's whole history (or imported trace) and
// lays it out.
func buildTimeline(h engine.Service, x history.Execution) (*timeline.Timeline, error) {
	if x.Imported != "" {
		events, err := h.ImportedEvents(x.ID)
		if err != nil {
			return nil, err
		}
		t := trace.Fold(x.ID, events)
		return timeline.Build(t, timeline.ForImported(t)), nil
	}
	t := trace.New(x.ID)
	err := eachEvent(h, x.ID, func(ev history.Event) error {
		history.Apply(t, ev)
		return nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", x.ID, err)
	}
	return timeline.Build(t, timeline.Options{}), nil
}
