package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

func (a *app) auditCmd() *cobra.Command {
	var (
		effects          string
		window           time.Duration
		asJSON, markdown bool
		failOn           string
	)
	cmd := &cobra.Command{
		Use:   "audit [EXECUTION...]",
		Short: "Find tool calls whose side effects probably happened twice",
		Long: `Audit executions (all of them, or those named) for repeated side effects, as an
outbox would show them where no simulated provider saw the effects: imported
OpenTelemetry traces above all. Side-effecting tool calls are grouped by tool
and canonical arguments, within an execution and across executions whose
attempts lie within --window of each other, and graded:

  duplicate  two attempts of the same effect succeeded (or took effect: an
             attempt whose caller saw no answer but whose effect the trace
             records, ◆, counts as one that succeeded)
  possible   an attempt whose outcome is unknown (timeout, cancellation, a
             dead worker) was followed by another, or an attempt that acted
             by one still in flight (started, no answer yet: "the repeat is
             in flight")
  absorbed   the repeat carried the same idempotency key (read from
             retrylab.idempotency_key or http.request.header.idempotency-key),
             or the provider answered it from its key store

Each finding shows its evidence: every attempt's outcome, start time,
execution, call, attempt number and span id; attempts the source did not keep
(Temporal's before the one it records) are "attempts 1-2", outcome
"not-kept" (--json: "attempt" the last, "not_kept" how many). Tool-call ids are not trusted to
tell calls apart (real frameworks give each retry a new one); the arguments
are. Which tools have side effects is --effects: patterns of tool names,
matched case-insensitively; tools whose names start with get_, list_, read_,
search_, fetch_, find_, lookup_, query_, describe_ or check_ are reads and
never count.

While another retrylab holds the database (the explorer, serve), that
retrylab reads the executions for the audit, and the output is the same.

Exit status: 1 when a duplicate is found (so a CI job can gate on it; with
--fail-on possible, a possible one too; with --fail-on never, neither) or the
audit cannot be made (an unknown execution, a damaged database), 0 otherwise,
2 for bad flags.`,
		Example: "  retrylab audit\n  retrylab audit --effects 'send_*,charge_*' --markdown >> $GITHUB_STEP_SUMMARY\n  retrylab audit otlp-conv-session-42 --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && markdown {
				return &exitError{code: 2, msg: "audit: --json and --markdown exclude each other"}
			}
			pats, err := audit.ParseEffects(effects)
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			gate, ok := failGrades[failOn]
			if !ok {
				return &exitError{code: 2, msg: "audit: --fail-on must be duplicate, possible or never, not " + failOn}
			}
			if window <= 0 {
				return &exitError{code: 2, msg: "audit: --window must be positive"}
			}
			t, err := a.readTraces()
			if err != nil {
				return err
			}
			defer t.Close()
			rep, err := t.Audit(args, audit.Options{Effects: pats, Window: window})
			if err != nil {
				return err
			}
			defer rep.Close()
			switch {
			case asJSON:
				err = rep.JSON(a.out)
			case markdown:
				err = rep.Markdown(a.out)
			default:
				err = rep.Text(a.out)
			}
			if err != nil {
				return err
			}
			counts := rep.Head().Counts
			if dup := counts.Duplicate; dup > 0 && gate >= 1 {
				return &exitError{code: 1, msg: "audit: " + plural.Count(dup, "duplicate effect") + " found"}
			}
			if pos := counts.Possible; pos > 0 && gate >= 2 {
				return &exitError{code: 1, msg: "audit: " + plural.Count(pos, "possible duplicate effect") + " found"}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&effects, "effects", audit.DefaultEffects, "tool-name patterns that have side effects, comma-separated")
	cmd.Flags().DurationVar(&window, "window", audit.DefaultWindow, "how close in time repeats in different executions must be")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the findings as Markdown")
	cmd.Flags().StringVar(&failOn, "fail-on", "duplicate", "the grade that makes the exit status 1: duplicate, possible (or worse) or never")
	return cmd
}

// failGrades are --fail-on's values: how many grades, worst first, fail
// the audit.
var failGrades = map[string]int{"never": 0, "duplicate": 1, "possible": 2}

// foldOne folds one execution of db from its own source (retrylab's
// history, or an imported trace read by its source in reg).
func foldOne(reg *imports.Registry, db *store.DB, id string) (*trace.Trace, error) {
	return imports.Fold(engine.ReadStore(db, reg), id, 0)
}
