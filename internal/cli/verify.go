package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
)

func (a *app) verifyCmd() *cobra.Command {
	var keys, journal, startKeys, allPolicies bool
	var jobs int
	cmd := &cobra.Command{
		Use:   "verify [SCENARIO...]",
		Short: "Run scenarios on scratch databases and check their expected outcomes",
		Long: `Run each scenario (default: the whole catalogue) on its own scratch database,
follow its expect.script (run, resume, delete-journal STEP, advance DURATION,
reset-world, submit, submit-twice), and compare what happened with what the
scenario expects: messages per recipient in the outbox, CRM rows, the final
status, and any other count it promises. One line per scenario; exit status 1
if any fails or a scenario file is invalid, 2 for an unknown scenario name, a
scenario path with no file there, or a bad flag. The --db database is not
touched.

--keys and --journal override every scenario's policy, so you can show that a
scenario protected by a defence fails without it. --all-policies runs each
scenario under all four policies and prints the outbox under each.`,
		Example: "  retrylab verify\n  retrylab verify safe crash\n  retrylab verify safe --keys off\n  retrylab verify ./my-scenario.yaml",
		RunE: func(cmd *cobra.Command, args []string) error {
			if jobs < 1 {
				return &exitError{code: 2, msg: "verify: --jobs must be at least 1"}
			}
			var opts verify.Options
			if cmd.Flags().Changed("keys") {
				opts.Keys = &keys
			}
			if cmd.Flags().Changed("journal") {
				opts.Journal = &journal
			}
			if cmd.Flags().Changed("start-keys") {
				opts.StartKeys = &startKeys
			}
			scns, err := verifyTargets(args)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			open := verify.Scratch(engine.Config{Scenarios: fixtures.FS, NoSync: true})
			if allPolicies {
				return a.verifyAllPolicies(ctx, open, scns, opts, jobs)
			}
			failed := 0
			err = verifyEach(ctx, open, scns, []verify.Options{opts}, jobs, func(reps []verify.Report) {
				fmt.Fprintln(a.out, reps[0].Line())
				if !reps[0].Passed() {
					failed++
				}
			})
			if err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d of %d scenarios failed", failed, len(scns))}
			}
			return nil
		},
	}
	cmd.Flags().Var(&onOff{v: &keys}, "keys", "send idempotency keys: on|off (default: each scenario's policy)")
	cmd.Flags().Var(&onOff{v: &journal}, "journal", "journal step results: on|off (default: each scenario's policy)")
	cmd.Flags().Var(&onOff{v: &startKeys}, "start-keys", "submit with a run-level idempotency key: on|off (default on)")
	cmd.Flags().BoolVar(&allPolicies, "all-policies", false, "run each scenario under all four policies")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "scenarios verified at once (at least 1)")
	return cmd
}

// verifyTargets resolves the named scenarios, or the whole catalogue.
func verifyTargets(args []string) ([]*scenario.Scenario, error) {
	cat := scenario.NewCatalog(fixtures.FS)
	if len(args) == 0 {
		return cat.All()
	}
	out := make([]*scenario.Scenario, 0, len(args))
	for _, name := range args {
		s, err := cat.Get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// verifyEach verifies every scenario under every option set, jobs at a time,
// and hands each scenario's reports to report in catalogue order.
func verifyEach(ctx context.Context, open verify.Opener, scns []*scenario.Scenario, variants []verify.Options,
	jobs int, report func([]verify.Report)) error {
	if jobs < 1 {
		return fmt.Errorf("verify: %d jobs at once, want at least 1", jobs)
	}
	type result struct {
		reps []verify.Report
		err  error
		done chan struct{}
	}
	results := make([]*result, len(scns))
	for i := range results {
		results[i] = &result{reps: make([]verify.Report, len(variants)), done: make(chan struct{})}
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, scn := range scns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := results[i]
			defer close(res.done)
			for j, opts := range variants {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					res.err = ctx.Err()
					return
				}
				rep, err := verify.Verify(ctx, open, scn, opts)
				<-sem
				if err != nil {
					res.err = err
					return
				}
				res.reps[j] = rep
			}
		}()
	}
	defer wg.Wait()
	for _, res := range results {
		<-res.done
		if res.err != nil {
			return res.err
		}
		report(res.reps)
	}
	return nil
}

// policies are the four combinations, in the fault matrix's column order (docs/FAULTS.md).
var policies = []history.Policy{{}, {Keys: true}, {Journal: true}, {Keys: true, Journal: true}}

func (a *app) verifyAllPolicies(ctx context.Context, open verify.Opener, scns []*scenario.Scenario, base verify.Options, jobs int) error {
	variants := make([]verify.Options, len(policies))
	for i, p := range policies {
		keys, journal := p.Keys, p.Journal
		variants[i] = base
		variants[i].Keys, variants[i].Journal = &keys, &journal
	}
	fmt.Fprintf(a.out, "%-28s %-6s %-6s %-8s %-13s %s\n", "scenario", "none", "keys", "journal", "keys+journal", "(outbox messages, or CRM rows; * = the scenario's own policy)")
	failed := 0
	i := 0
	err := verifyEach(ctx, open, scns, variants, jobs, func(reps []verify.Report) {
		scn := scns[i]
		i++
		own := history.Policy{Keys: scn.Policy.Keys, Journal: scn.Policy.Journal}
		cells := make([]string, len(reps))
		verdict := ""
		for j, rep := range reps {
			cells[j] = measure(rep)
			if rep.Policy == own {
				cells[j] += "*"
				if !rep.Passed() {
					failed++
					verdict = rep.Line()
				}
			}
		}
		fmt.Fprintf(a.out, "%-28s %-6s %-6s %-8s %-13s\n", scn.Name, cells[0], cells[1], cells[2], cells[3])
		if verdict != "" {
			fmt.Fprintln(a.out, "  "+verdict)
		}
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d scenarios failed under their own policy", failed, len(scns))}
	}
	return nil
}

// measure is the number a policy table shows: outbox messages, or CRM rows
// when nothing was sent; "err" when the script could not run.
func measure(rep verify.Report) string {
	if rep.Err != nil {
		return "err"
	}
	if n := rep.Outcome.OutboxTotal(); n > 0 || rep.Outcome.CRMRows == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d row", rep.Outcome.CRMRows)
}
