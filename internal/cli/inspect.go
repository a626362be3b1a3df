package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
)

func (a *app) showCmd() *cobra.Command {
	var asJSON, asMarkdown bool
	cmd := &cobra.Command{
		Use:   "show [EXECUTION]",
		Short: "Print an execution's recorded history (default: the latest)",
		Long: `Print every event of an execution's history: turns, tool calls, every attempt
with its outcome, retries, journal writes and replays, faults, crashes, and
the gaps while no worker ran. --json prints the record and the raw events;
--markdown writes a handout: the trace, the outbox and the scenario's lesson;
for a mistake or its fix, the pair's diff line (the other half from this
database, or run on a scratch database when this one has none).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asMarkdown {
				return &exitError{code: 2, msg: "show: --json and --markdown exclude each other"}
			}
			return a.withReader(func(h engine.Service) error {
				id, err := pickExecution(h, args)
				if err != nil {
					return err
				}
				x, err := h.Execution(id)
				if err != nil {
					return err
				}
				if x.Imported != "" {
					if asMarkdown {
						return &exitError{code: 2, msg: fmt.Sprintf("show: %s is imported: it has no handout (try show --json, or audit --markdown)", x.ID)}
					}
					return a.showImported(h, x, asJSON)
				}
				switch {
				case asMarkdown:
					return a.showMarkdown(h, x)
				case asJSON:
					return printHistoryJSON(a.out, h, x)
				}
				return printHistory(a.out, h, x)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&asMarkdown, "markdown", false, "write a Markdown handout")
	return a.withTimeline(cmd)
}

func pickExecution(h engine.Service, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	list, _, err := h.Executions(0, 1)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("no executions yet (run a scenario first: retrylab run naive)")
	}
	return list[0].ID, nil
}

// gapWorth is how long a silence must last before show points it out.
const gapWorth = time.Second

func effectTag(service string) string {
	if service == world.ServiceMail {
		return "mail-api"
	}
	return service
}

func effectVerb(service string) string {
	if service == world.ServiceMail {
		return "delivered id="
	}
	return "wrote "
}

func effectTarget(fx *history.Effect) string {
	if fx.Target != "" {
		return " to " + fx.Target
	}
	return ""
}

// ambiguousLine says that an attempt's outcome was unknown to the agent
// though its history records an effect.
func ambiguousLine(at *trace.Attempt) string {
	ids := make([]string, len(at.Effects))
	for i, fx := range at.Effects {
		ids[i] = fx.ID
	}
	return fmt.Sprintf("%-11s %s attempt %d of %s: outcome unknown, provider delivered %s", "[trace]", trace.MarkAmbiguous.Glyph(),
		at.N, at.Call, strings.Join(ids, ", "))
}

// crashedIn lists the attempts a run's worker died in.
func crashedIn(r *trace.Run) []*trace.Attempt {
	var out []*trace.Attempt
	var walk func(ns []trace.Node)
	walk = func(ns []trace.Node) {
		for _, n := range ns {
			if at, ok := n.(*trace.Attempt); ok && at.Crashed && !at.Finished {
				out = append(out, at)
			}
			walk(n.Children())
		}
	}
	walk(r.Nodes)
	return out
}

func (a *app) outboxCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "Print the mail provider's outbox: the ground truth the trace cannot show",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withReader(func(h engine.Service) error {
				msgs, err := h.Outbox()
				if err != nil {
					return err
				}
				if asJSON {
					if msgs == nil {
						msgs = []world.Message{}
					}
					return printJSON(a.out, msgs)
				}
				printOutbox(a, msgs)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printOutbox(a *app, msgs []world.Message) {
	if len(msgs) == 0 {
		fmt.Fprintln(a.out, "outbox is empty")
		return
	}
	groups := narrate.GroupByIntent(msgs)
	for _, g := range groups {
		for _, m := range g.Messages {
			at := m.Attribution
			cause := "unattributed (an external client)"
			if at.Execution != "" {
				cause = fmt.Sprintf("%s %s attempt %d", at.Execution, at.Step, at.Attempt)
				if at.Key != "" {
					cause += " key " + at.Key
				}
			}
			fmt.Fprintf(a.out, "%s → %-20s %-22q %s\n", m.ID, m.To, m.Subject, cause)
		}
	}
	fmt.Fprintln(a.out)
	for _, g := range groups {
		who := g.Intent.Execution
		if who == "" {
			who = "unattributed"
		}
		fmt.Fprintf(a.out, "%-12s %s\n", who, narrate.CountLine(g.Intent.To, len(g.Messages)))
	}
}

func (a *app) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state --json",
		Short: "Print the whole state as one JSON object (outbox, keys, journal, crm)",
		Long:  "Print the outbox, the key store, every journal record and the CRM as one JSON object, like the article's state.json.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withReader(func(h engine.Service) error {
				// Streamed a page at a time: the same JSON as State,
				// whatever the size of the world.
				return h.WriteState(a.out)
			})
		},
	}
	cmd.Flags().Bool("json", true, "print JSON (the only format)")
	return cmd
}

func (a *app) journalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "List or delete recorded step results",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list [EXECUTION]",
		Short: "List journal records",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withReader(func(h engine.Service) error {
				id := ""
				if len(args) == 1 {
					id = args[0]
					if _, err := h.Execution(id); err != nil {
						return err // no such execution, not "no journal records"
					}
				}
				entries, err := h.Journal(id)
				if err != nil {
					return err
				}
				if len(entries) == 0 {
					fmt.Fprintln(a.out, "no journal records")
				}
				for _, e := range entries {
					fmt.Fprintf(a.out, "%s %s = %s (attempt %d, run %d, recorded %s)\n", e.Execution, e.Step,
						narrate.Summary(e.Result), e.Attempt, e.Run, e.Recorded.Format(time.RFC3339))
				}
				return nil
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete EXECUTION STEP",
		Short: "Delete one step's recorded result (the article's exercise)",
		Long: `Delete one step's journal record, then run the scenario again: without the
journal, only the idempotency key stands between the retry and a duplicate.`,
		Example: "  retrylab journal delete exec_01H8 step-4",
		Args:    exactArgs(2, "EXECUTION and STEP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withService(func(h engine.Service) error {
				if err := h.DeleteJournal(args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintf(a.out, "deleted the journal record of %s %s\n", args[0], args[1])
				return nil
			})
		},
	})
	return cmd
}
