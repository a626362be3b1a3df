package cli

import (
	"runtime/debug"
	"sync"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/trace"
)

func (a *app) diffCmd() *cobra.Command {
	var asJSON, asMarkdown bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Line up two executions call by call: where they part, and what each did to the world",
		Long: `Compare two executions of the database, attempt by attempt: calls are lined up
by step id, then by tool and canonical arguments (an agent's retry under a new
step id), then by tool in order; a call of a tool the other side never called
stands alone. Each row shows both sides' attempts with their
marks (= the same, ≠ they differ, < only in A, > only in B), then where the
executions part and what each did to the world:

  effects  naive: 2 messages to jordan@acme.dev; safe: 1

A or B may be an execution of a trace file instead, OpenTelemetry or a
Temporal history (the files 'retrylab import' reads): FILE#ID, or FILE alone
when it holds one execution. The file is imported into a scratch database
that is thrown away, never into --db. A trace that recorded no effects (most
imported ones; retrylab's own export records them) has them inferred as
'retrylab audit' infers them: calls of side-effecting tools (the audit's
default --effects) that answered ok and were not deduplicated, "(inferred)";
outcomes unknown are counted apart.

Executions of different scenarios may be compared; the comparison says when
they have nothing in common. --json prints the alignment; --markdown writes it
for a handout.`,
		Example: "  retrylab diff exec_7K2Q exec_01H8\n  retrylab diff exec_9F1Z exec_01H8 --markdown > handout.md\n" +
			"  retrylab diff order-run1.json order-run2.json\n  retrylab diff traces.json#otlp-conv-42 otlp-conv-42",
		Args: exactArgs(2, "two executions, A and B"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asMarkdown {
				return &exitError{code: 2, msg: "diff: --json and --markdown exclude each other"}
			}
			var sides [2]diffSide
			for i, arg := range args {
				d, err := parseDiffSide([]string{"A", "B"}[i], arg)
				if err != nil {
					return err
				}
				sides[i] = d
			}
			// The two histories are read and folded at once: reading
			// (decoding every event) is most of the command's time. It
			// allocates a lot that lives until the command exits, so a
			// lazier collector saves a third of it (BENCHMARKS.md, 7).
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			var traces [2]*trace.Trace
			// Trace files first, each imported into a scratch database:
			// two files never open the user's database at all.
			files := &traceFiles{reg: a.imports}
			defer files.close()
			for i, d := range sides {
				if d.file == "" {
					continue
				}
				t, err := files.fold(d)
				if err != nil {
					return err
				}
				traces[i] = t
			}
			show := func() error {
				r := diff.Compare(traces[0], traces[1], "", "")
				if r.A.Label == r.B.Label {
					// The same execution id (two runs of one Temporal
					// workflow, a file against its import): name the sides
					// as they were given.
					r = diff.Compare(traces[0], traces[1], sides[0].name(), sides[1].name())
				}
				switch {
				case asJSON:
					return printJSON(a.out, r)
				case asMarkdown:
					return diff.Markdown(a.out, r)
				}
				return diff.Text(a.out, r)
			}
			if traces[0] != nil && traces[1] != nil {
				return show()
			}
			return a.withReader(func(s engine.Service) error {
				var errs [2]error
				var wg sync.WaitGroup
				for i, d := range sides {
					if traces[i] != nil {
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						traces[i], errs[i] = loadTrace(s, d)
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						return err // A's first: one line
					}
				}
				return show()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the alignment as JSON")
	cmd.Flags().BoolVar(&asMarkdown, "markdown", false, "write the comparison as Markdown")
	return cmd
}
