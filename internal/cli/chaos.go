package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/chaos"
	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/dur"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

// maxListedViolations bounds the violations a table lists.
const maxListedViolations = 25

func (a *app) chaosCmd() *cobra.Command {
	var cfg chaos.Config
	var policy string
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run many executions through random faults and real kills, then check them",
		Long: `Run --runs executions of randomly planned scenarios (a single send, or two
steps: send then CRM, CRM create then send, upsert then read) with random fault
plans over every fault point (docs/FAULTS.md), workers killed with SIGKILL by crash
faults and from outside at random moments, and the host process itself killed
with SIGKILL at random moments and started again on the same database (which
must pass the consistency check). Every killed execution is resumed until it
finishes. Then the checker classes every operation and holds each count to the
model.

The plan is deterministic for a given --seed; only the kill timing is not.
Without --db, the database is a new file in a temporary directory, kept for
'retrylab check --db'.

Exit status: 0 when the check passes, 1 when it finds a violation.`,
		Example: "  retrylab chaos --runs 200\n  retrylab chaos --runs 10000 --seed 7 --concurrency 8 --db chaos.db",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Policy = policy
			if policy == "all" {
				cfg.Policy = ""
			}
			// Bad flags are usage errors, said before the header is
			// printed or a temporary directory made for the database.
			switch _, perr := chaos.ParsePolicy(cfg.Policy); {
			case cfg.Runs < 1:
				return &exitError{code: 2, msg: "chaos: --runs must be at least 1"}
			case cfg.Concurrency < 1:
				return &exitError{code: 2, msg: "chaos: --concurrency must be at least 1"}
			case perr != nil:
				return &exitError{code: 2, msg: "chaos: " + perr.Error()}
			}
			db, err := a.chaosDB(cmd, cfg.Seed)
			if err != nil {
				return err
			}
			cfg.DB = db
			return a.runChaos(cfg)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", 200, "number of executions")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the run plans")
	f.IntVar(&cfg.Concurrency, "concurrency", 8, "executions in flight at once")
	f.StringVar(&policy, "policy", "all", "none, keys, journal, keys+journal, or all (a random policy per run)")
	f.IntVar(&cfg.HostKills, "host-kills", -1, "how often to kill the host with SIGKILL (default: one per 40 runs)")
	f.StringVar(&cfg.Bug, "break", "", "plant a bug to show the checker catching it (tests only): "+chaos.BugKeyFromAttempt)
	_ = f.MarkHidden("break")
	return cmd
}

// chaosDB is --db when given, and otherwise a new file in a new temporary
// directory.
func (a *app) chaosDB(cmd *cobra.Command, seed uint64) (string, error) {
	if cmd.Flags().Changed("db") || os.Getenv("RETRYLAB_DB") != "" {
		return a.dbPath, checkDBPath(a.dbPath)
	}
	dir, err := os.MkdirTemp("", "retrylab-chaos-")
	if err != nil {
		return "", fmt.Errorf("make a directory for the chaos database: %w", err)
	}
	return filepath.Join(dir, fmt.Sprintf("chaos-%d.db", seed)), nil
}

func (a *app) runChaos(cfg chaos.Config) error {
	// Ctrl-C (or q on the progress display) stops the job cleanly.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fmt.Fprintf(a.out, "chaos: %s, seed %d, concurrency %d, policy %s, database %s\n",
		plural.Count(cfg.Runs, "run"), cfg.Seed, cfg.Concurrency, orAll(cfg.Policy), cfg.DB)

	var res *chaos.Result
	var err error
	if onTerminal(a.out) {
		res, err = withProgress(ctx, cancel, a.out, func(report func(float64, ...string)) (*chaos.Result, error) {
			cfg.Progress = func(p chaos.Progress) {
				report(float64(p.Runs)/float64(max(p.Total, 1)), chaosFigures(p)...)
			}
			return chaos.Run(ctx, cfg)
		})
	} else {
		every := max(cfg.Runs/20, 1)
		cfg.Progress = func(p chaos.Progress) {
			if strings.HasPrefix(p.Line, "run ") && p.Runs%every != 0 && p.Runs != p.Total && !strings.Contains(p.Line, ": ") {
				return
			}
			fmt.Fprintf(a.out, "[%d/%d %s · workers killed %d · hosts killed %d · %s] %s\n",
				p.Runs, p.Total, plural.Noun(p.Total, "run"), p.WorkersKilled, p.HostKills, plural.Count(p.Violations, "violation"), p.Line)
		}
		res, err = chaos.Run(ctx, cfg)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, msg: "interrupted; the database is " + cfg.DB}
		}
		return err
	}
	fmt.Fprintf(a.out, "\nchaos: %s in %s with %s (hosts killed %d); database %s\n\n",
		plural.Count(res.Runs, "run"), dur.Text(res.Elapsed.Round(100*time.Millisecond)), plural.Count(res.Hosts, "host"), res.HostKills, res.DB)
	res.Report.Write(a.out, maxListedViolations)
	if !res.Report.OK() {
		return &exitError{code: 1, msg: fmt.Sprintf("chaos: the check found %s (re-check with: retrylab check --db %s)", plural.Count(len(res.Report.Violations), "violation"), res.DB)}
	}
	return nil
}

func orAll(p string) string {
	if p == "" {
		return "all"
	}
	return p
}

// chaosHostCmd is the host process the chaos runner starts and kills.
func (a *app) chaosHostCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "chaos-host",
		Short:  "A host process of 'retrylab chaos' (started by it; reads its job on stdin)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return chaos.ServeHost(os.Stdin, os.Stdout)
		},
	}
}

func (a *app) checkCmd() *cobra.Command {
	var externalOK bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Class every operation of a database like Jepsen: ok, recovered, failed, lost, duplicated, unexpected",
		Long: `Compare every execution's history with the providers' ledgers (the outbox and
the CRM's write log, where every effect names the execution, step, attempt and
key that caused it) and class each logical operation: ok (one effect, done),
recovered (an outcome unknown to the caller, exactly one effect), failed (no
effect, not done), lost (done, but no effect), duplicated (more than one effect
for one intent), unexpected (an effect nobody asked for). Each count is also
held to the model of the fault matrix (docs/FAULTS.md).

The database is opened read-only. While another retrylab has it open (the
explorer, serve, a run), check reads a consistent copy of it that that
retrylab writes, as of the moment check starts.

Exit status: 0 when the check passes; 1 when the keys+journal policy shows a
lost, duplicated or unexpected operation, when any count departs from the
model, or when the history breaks an invariant.`,
		Example: "  retrylab check --db chaos.db",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCheck(externalOK)
		},
	}
	cmd.Flags().BoolVar(&externalOK, "external-ok", false, "accept effects without attribution (external clients of 'retrylab serve')")
	return cmd
}

func (a *app) runCheck(externalOK bool) error {
	db, name, done, err := a.readDB()
	if err != nil {
		return err
	}
	defer done()
	// The heading goes out first: the verdict follows once the store's
	// consistency check and every history have streamed through.
	fmt.Fprintf(a.out, "retrylab check %s\n", a.dbPath)
	if err := db.Check(); err != nil {
		return name(err)
	}
	// Every record is read before the model, so that damage is told as
	// damage, not as the violations it would cause.
	damaged, err := engine.CheckRecords(db, a.imports, maxListedDamage+1, otlp.CheckRecords)
	if err != nil {
		return name(err)
	}
	if len(damaged) > 0 {
		for i, d := range damaged {
			if i == maxListedDamage {
				fmt.Fprintf(a.out, "damaged: ... (more not listed)\n")
				break
			}
			fmt.Fprintf(a.out, "damaged: %s\n", name(d))
		}
		n := plural.Count(len(damaged), "damaged record")
		if len(damaged) > maxListedDamage {
			n = fmt.Sprintf("more than %d damaged records", maxListedDamage)
		}
		first := oneLine(name(damaged[0]).Error())
		if !strings.Contains(first, store.ErrCorrupt.Error()) {
			first = fmt.Sprintf("%s: %v: %s", a.dbPath, store.ErrCorrupt, first)
		}
		return &exitError{code: 1, msg: fmt.Sprintf("check: %s (%s in all); `retrylab salvage` copies what is readable into a new file",
			first, n)}
	}
	rep, err := check.CheckDB(db, check.Options{Resolve: planResolver(scenario.NewCatalog(fixtures.FS)), ExternalOK: externalOK})
	if err != nil {
		return name(err)
	}
	rep.Write(a.out, maxListedViolations)
	if !rep.OK() {
		msg := "check: " + plural.Count(len(rep.Violations), "violation")
		if rep.Unattributed > 0 && !externalOK {
			// The usual cause: the database served an agent of one's own.
			msg += fmt.Sprintf("; %d of the effects have no attribution, as an HTTP client of 'retrylab serve' makes them: if that client was yours, accept them with --external-ok",
				rep.Unattributed)
		}
		return &exitError{code: 1, msg: msg}
	}
	return nil
}

// planResolver finds a scenario for the exact model: a chaos scenario is
// regenerated from its name, anything else is looked up in cat, which
// parses its files once. The checker asks up to three times per execution,
// one execution after another, so the last answer is kept.
// maxListedDamage bounds the damaged records check lists.
const maxListedDamage = 20

func planResolver(cat *scenario.Catalog) func(name string) (check.Plan, bool) {
	var (
		mu       sync.Mutex
		lastName string
		last     check.Plan
		lastOK   bool
		asked    bool
	)
	return func(name string) (check.Plan, bool) {
		mu.Lock()
		defer mu.Unlock()
		if asked && name == lastName {
			return last, lastOK
		}
		last, lastOK = resolvePlan(cat, name)
		lastName, asked = name, true
		return last, lastOK
	}
}

func resolvePlan(cat *scenario.Catalog, name string) (check.Plan, bool) {
	if p, ok := chaos.Resolve(name); ok {
		return p, true
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		return check.Plan{}, false
	}
	s, err := cat.Get(name)
	if err != nil {
		return check.Plan{}, false
	}
	return check.PlanOf(s), true
}

// violationStyle marks violations on the progress display; built once.
var violationStyle = lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#C0392B", Dark: "#FF6B6B"}).Bold(true)

// chaosFigures are the lines under the progress bar.
func chaosFigures(p chaos.Progress) []string {
	vio := fmt.Sprintf("violations %d", p.Violations)
	if p.Violations > 0 {
		vio = violationStyle.Render(vio)
	}
	return []string{fmt.Sprintf("runs %d/%d · workers killed %d · hosts killed %d · %s", p.Runs, p.Total, p.WorkersKilled, p.HostKills, vio), p.Line}
}
