package cli

// run and resume: a scenario's execution, narrated attempt by attempt as it
// runs; reset: the database wiped between experiments, as in the article.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
)

// onOff parses an on|off flag value. It shows no default of its own: an
// unset flag means what its usage line says (the scenario's policy), so
// --help states one default, not two.
type onOff struct {
	v   *bool
	set bool
}

func (o *onOff) String() string {
	if o == nil || o.v == nil || !o.set {
		return ""
	}
	if *o.v {
		return "on"
	}
	return "off"
}

func (o *onOff) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "yes", "1":
		*o.v = true
	case "off", "false", "no", "0":
		*o.v = false
	default:
		return fmt.Errorf("want on or off, not %q", s)
	}
	o.set = true
	return nil
}

func (o *onOff) Type() string { return "on|off" }

func (a *app) runCmd() *cobra.Command {
	var keys, journal, restart bool
	var eng, temporalAddr string
	var pace time.Duration
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario and narrate every attempt",
		Long: `Run a scenario (a name from 'retrylab scenarios', or a path to a .yaml file),
narrating each attempt as it happens, and end with the provider's outbox.
Every run is a new execution: the first run of a scenario on a database has
the scenario's own id (naive's exec_7K2Q, as in the article), later ones a
new id, so each group sees the lesson from the start. A scenario whose lesson
is running its execution again (safe, journal-deleted: the journal answers
the second run, as in the article) restarts it instead, and --restart does so
for any scenario: a new run of the same execution. 'retrylab resume'
continues a killed one.

--slow runs in slow motion for a room to follow: the worker waits (2s, or
--slow=5s) before each attempt and the history records each wait; the
scenario's timeouts and retry delays stay what they are.

With --engine temporal the agent runs as a Temporal workflow on the cluster
at --temporal, its tool calls as activities: that engine needs the Temporal
SDK, kept out of this binary, so run hands the scenario to the
retrylab-temporal command (see temporal/README.md), which must be on PATH.

Exit status: 0 when the execution completed, 137 when its worker was killed
(resume it with 'retrylab resume'), 1 when it failed or the scenario file is
invalid (its file:line says where), 3 when it escalated, 2 for a usage error
(an unknown scenario name, a scenario path with no file there, a bad flag).`,
		Example: "  retrylab run naive\n  retrylab run safe --keys off\n  retrylab run ./my-scenario.yaml\n  retrylab run safe --restart\n  retrylab run agent-retry-same-step --engine temporal --temporal 127.0.0.1:7233",
		Args:    exactArgs(1, "SCENARIO"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch eng {
			case "temporal":
				return a.runOnTemporal(args[0], temporalAddr, cmd.Flags().Changed("keys") || cmd.Flags().Changed("journal"))
			case "local":
			default:
				return &exitError{code: 2, msg: fmt.Sprintf("run: unknown --engine %q (valid: local, temporal)", eng)}
			}
			name, err := scenarioArg(args[0])
			if err != nil {
				return err
			}
			if pace < 0 {
				return &exitError{code: 2, msg: "run: --slow wants a positive duration (e.g. --slow=3s)"}
			}
			opts := engine.RunOptions{Restart: restart, Pace: pace}
			if cmd.Flags().Changed("keys") {
				opts.Keys = &keys
			}
			if cmd.Flags().Changed("journal") {
				opts.Journal = &journal
			}
			return a.runAndNarrate(func(h engine.Service) (*engine.Run, error) { return h.Start(name, opts) })
		},
	}
	cmd.Flags().Var(&onOff{v: &keys}, "keys", "send idempotency keys: on|off (default: the scenario's policy)")
	cmd.Flags().Var(&onOff{v: &journal}, "journal", "journal step results: on|off (default: the scenario's policy)")
	cmd.Flags().BoolVar(&restart, "restart", false, "run the scenario's own execution again when it exists, instead of a new execution")
	slowFlag(cmd, &pace)
	cmd.Flags().StringVar(&eng, "engine", "local", "local (retrylab's own workers) or temporal (a Temporal workflow, by retrylab-temporal)")
	cmd.Flags().StringVar(&temporalAddr, "temporal", "127.0.0.1:7233", "the Temporal cluster's frontend, with --engine temporal")
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume [EXECUTION]",
		Short: "Continue the latest (or the named) unfinished execution",
		Long: `Start a new worker for an execution whose worker was killed. The worker knows
nothing but what the database holds: with a journal, recorded steps are
replayed; without one, they run again.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return a.runAndNarrate(func(h engine.Service) (*engine.Run, error) { return h.Resume(id) })
		},
	}
}

// scenarioArg is a scenario as run hands it to the host: a name as given; a
// path made absolute, since the host that reads it may be another process
// in another directory (the explorer in a second terminal). Either is
// looked up here first, before any database is opened or made, so that an
// unknown name or a missing or invalid file is said as the user wrote it
// and leaves nothing behind.
func scenarioArg(arg string) (string, error) {
	if _, err := scenarioCatalog().Get(arg); err != nil {
		return "", err
	}
	if !scenario.IsPath(arg) {
		return arg, nil
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", fmt.Errorf("scenario file %s: %w", arg, err)
	}
	return abs, nil
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &exitError{code: 2, msg: fmt.Sprintf("%s needs %s (see --help)", cmd.CommandPath(), names)}
		}
		return nil
	}
}

// runAndNarrate starts a run, prints its narration as it happens, then the
// outbox, and turns the run's end into the exit status.
func (a *app) runAndNarrate(start func(engine.Service) (*engine.Run, error)) (err error) {
	h, err := a.service()
	if err != nil {
		return err
	}
	defer a.releaseInto(h, &err)
	notices, stop := h.Subscribe(1 << 14)
	defer stop()
	run, err := start(h)
	if err != nil {
		return err
	}
	if run.Deduplicated {
		fmt.Fprintf(a.out, "[runtime]   start deduplicated: execution %s already exists (%s); nothing started\n", run.Execution, run.Result().Status)
		return nil
	}
	n := narrate.New(run.Execution)
	// SIGPIPE too: a reader that leaves (run … | head) must not kill this
	// process mid-run, leaving the execution "running" and the database's
	// host file behind; it stops the run as Ctrl-C does.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	// Events recorded before we subscribed cannot be missed: the subscription
	// starts before the run does.
	say := func(no notice.Notice) {
		for _, l := range n.Lines(no) {
			fmt.Fprintln(a.out, l)
		}
	}
	var interrupted os.Signal
	for done := false; !done; {
		select {
		case no, ok := <-notices:
			if !ok {
				done = true
				break
			}
			say(no)
		case <-run.Done():
			done = true
		case sig := <-sigs:
			// Ctrl-C kills the worker, as a crash would; the narration goes
			// on until the host has recorded it.
			if interrupted == nil {
				interrupted = sig
				_ = h.Kill(run.Execution)
			}
		}
	}
	// Drain what was published before the run ended.
	for drained := false; !drained; {
		select {
		case no, ok := <-notices:
			if !ok {
				drained = true
				break
			}
			say(no)
		case <-time.After(50 * time.Millisecond):
			drained = true
		}
	}
	res, _ := run.Wait(context.Background())
	msgs, err := h.Outbox()
	if err != nil {
		return err
	}
	fmt.Fprintln(a.out)
	for _, l := range narrate.OutboxSummary(msgs, run.Execution) {
		fmt.Fprintln(a.out, l)
	}
	if res.Err != nil {
		return res.Err
	}
	switch interrupted {
	case nil:
	case syscall.SIGPIPE:
		return &exitError{code: 141, msg: fmt.Sprintf("the output was closed: worker of %s killed; resume it with 'retrylab resume %s'", run.Execution, run.Execution)}
	default:
		return &exitError{code: 130, msg: fmt.Sprintf("interrupted: worker of %s killed; resume it with 'retrylab resume %s'", run.Execution, run.Execution)}
	}
	switch res.Status {
	case history.StatusCompleted:
		return nil
	case history.StatusKilled:
		return &exitError{code: engine.ExitKilled, msg: fmt.Sprintf("worker of %s was killed (exit 137); continue it with 'retrylab resume'", run.Execution)}
	case history.StatusEscalated:
		return &exitError{code: 3, msg: fmt.Sprintf("execution %s escalated: a human must check before anything is retried", run.Execution)}
	}
	x, _ := h.Execution(run.Execution)
	return &exitError{code: 1, msg: fmt.Sprintf("execution %s %s: %s", run.Execution, res.Status, x.Error)}
}

func (a *app) resetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reset",
		Short: "Wipe executions, journals, the outbox, keys and the CRM",
		Long: `Wipe executions, journals, the outbox, keys and the CRM, and set the world
clock back to 0, like the article's reset between experiments.

While another retrylab holds the database (the explorer, serve), that one
resets it; it refuses (exit 1) while a worker runs, or while an import or an
export works through it: wait for it to finish.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withService(func(h engine.Service) error {
				if err := h.Reset(); err != nil {
					return err
				}
				fmt.Fprintf(a.out, "reset %s: no executions, empty outbox, no keys, empty CRM\n", h.DBPath())
				return nil
			})
		},
	}
}
