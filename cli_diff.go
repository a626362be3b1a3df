package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
)

func (a *app) diffCmd() *cobra.Command {
	var asJSON, asMarkdown bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Line up two executions call by call: where they part, and what each did to the world",
		Long: `Compare two executions of the database, attempt by attempt: calls are lined up
by step id, then by tool and canonical arguments (an agent's retry under a new
step id), then by position. Each row shows both sides' attempts with their
marks (= the same, ≠ they differ, < only in A, > only in B), then where the
executions part and what each did to the world:

  effects  naive: 2 messages to jordan@acme.dev; safe: 1

Executions of different scenarios may be compared; the comparison says when
they have nothing in common. --json prints the alignment; --markdown writes it
for a handout. FILE#id (an execution of an imported trace file) is not
supported yet: import the file into the database first.`,
		Example: "  retrylab diff exec_7K2Q exec_01H8\n  retrylab diff exec_9F1Z exec_01H8 --markdown > handout.md",
		Args:    exactArgs(2, "two executions, A and B"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asMarkdown {
				return &exitError{code: 2, msg: "diff: --json and --markdown exclude each other"}
			}
			for _, id := range args {
				if file, _, ok := strings.Cut(id, "#"); ok {
					return fmt.Errorf("diff %s: comparing an execution of a trace file (%s#ID) is not supported yet; give two execution ids of the database", id, file)
				}
			}
			return a.withService(func(s engine.Service) error {
				// The two histories are read and folded at once: reading
				// (decoding every event) is most of the command's time. It
				// allocates a lot that lives until the command exits, so a
				// lazier collector saves a third of it (BENCHMARKS.md, 7).
				defer debug.SetGCPercent(debug.SetGCPercent(400))
				var tb *trace.Trace
				var errB error
				done := make(chan struct{})
				go func() {
					defer close(done)
					tb, errB = loadTrace(s, args[1], "B")
				}()
				ta, errA := loadTrace(s, args[0], "A")
				<-done
				if errA != nil {
					return errA
				}
				if errB != nil {
					return errB
				}
				r := diff.Compare(ta, tb, "", "")
				switch {
				case asJSON:
					return printJSON(a.out, r)
				case asMarkdown:
					return diff.Markdown(a.out, r)
				}
				return diff.Text(a.out, r)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the alignment as JSON")
	cmd.Flags().BoolVar(&asMarkdown, "markdown", false, "write the comparison as Markdown")
	return cmd
}

// scratchOpener opens throwaway hosts for the other half of a
// mistake/fix pair that the database at hand does not hold.
func scratchOpener() verify.Opener {
	return verify.Scratch(engine.Config{Scenarios: fixtures.FS, NoSync: true})
}

// loadTrace folds one execution's whole history.
func loadTrace(s engine.Service, id, side string) (*trace.Trace, error) {
	if _, err := s.Execution(id); err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("diff %s: no such execution: %s in %s", side, id, s.DBPath())
		}
		return nil, fmt.Errorf("diff %s: %w", side, err)
	}
	events, err := s.Events(id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", side, err)
	}
	return trace.FoldHistory(id, events), nil
}
