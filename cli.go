package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/jsonstream"
	"github.com/retrylab/retrylab/store"
)

// defaultDB is where the database lives unless --db or RETRYLAB_DB says otherwise.
const defaultDB = "retrylab.db"

type app struct {
	dbPath string
	in     io.Reader // standard input, for 'import -'
	out    io.Writer
	errOut io.Writer
	// ports fixes the host's ports when this process hosts the database
	// (serve --port); zero: free ports.
	mailPort, crmPort, controlPort int
	// imports are the sources of imported traces (engine/imports/all).
	imports *imports.Registry
}

// newRootCmd is the command line over the sources of imported traces in
// reg.
func newRootCmd(reg *imports.Registry) *cobra.Command {
	a := &app{imports: reg}
	var explore exploreFlags
	root := &cobra.Command{
		Use:   "retrylab",
		Short: "See why retried agent tool calls duplicate side effects, and how to stop it",
		Long: `retrylab runs scripted AI agents against simulated flaky tools (a mail API,
a CRM) on loopback HTTP with real deadlines, records every attempt in a bbolt
database, and shows the provider's outbox beside the agent's trace, so the
duplicate that the trace hides is plain to see.

Without a subcommand it opens the explorer on the database.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.explore(&explore)
		},
	}
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		// The outputs as they are when a command runs: one that drives the
		// command in-process (a test) sets them after building it.
		a.out, a.errOut = root.OutOrStdout(), root.ErrOrStderr()
		return a.checkDBFlag(cmd, args)
	}
	a.addExploreFlags(root, &explore)
	root.PersistentFlags().StringVar(&a.dbPath, "db", envOr("RETRYLAB_DB", defaultDB), "database file (env RETRYLAB_DB)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: 2, msg: err.Error() + " (see --help)"}
	})
	a.out, a.errOut = root.OutOrStdout(), root.ErrOrStderr()
	root.AddCommand(a.chaosCmd(), a.chaosHostCmd(), a.checkCmd(), a.runCmd(), a.resumeCmd(), a.resetCmd(), a.scenariosCmd(), a.showCmd(),
		a.outboxCmd(), a.stateCmd(), a.journalCmd(), a.serveCmd(), a.verifyCmd(), a.lessonCmd(), a.genCmd(), a.clockCmd(), a.diffCmd())
	root.AddCommand(otlpCommands(a)...)
	for _, c := range root.Commands() {
		usageArgs(c)
	}
	return root
}

// usageArgs makes a wrong number of arguments, as cobra's own checks word
// it, a usage error: exit 2 and a pointer to --help, as a bad flag is.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			var ee *exitError
			if err == nil || errors.As(err, &ee) || strings.HasPrefix(err.Error(), "unknown command ") {
				return err
			}
			return &exitError{code: 2, msg: fmt.Sprintf("%s: %s (see --help)", c.CommandPath(), err)}
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// service attaches to the host that already owns the database (the
// explorer in another terminal, say), or else opens the database and
// becomes its host. Either way the caller works through the same Service;
// close it with a.release. An attached process holds the host, so the host
// does not close under it (see release); a host that is closing is waited
// out, and then this process opens the database itself.
func (a *app) service() (engine.Service, error) {
	s, _, err := a.connect()
	return s, err
}

// connect is service that also says whether this process became the host:
// owned is the host it opened, nil when it attached to another process.
func (a *app) connect() (s engine.Service, owned *engine.Host, err error) {
	for try := 0; ; try++ {
		c, err := engine.Dial(a.dbPath)
		if err == nil {
			if err = c.Hold(); err == nil {
				return c, nil, nil
			}
			c.Close()
			if try < 40 {
				time.Sleep(25 * time.Millisecond) // until it has let go of the file
				continue
			}
			return nil, nil, err
		}
		h, err := a.openHost()
		if errors.Is(err, store.ErrLocked) {
			// A host may have come up while we waited for the lock.
			if c, derr := engine.Dial(a.dbPath); derr == nil {
				if derr = c.Hold(); derr == nil {
					return c, nil, nil
				}
				c.Close()
			}
		}
		if err != nil {
			return nil, nil, err
		}
		return h, h, nil
	}
}

// release closes what service returned. A host this process owns first
// waits for the runs and the processes it serves for others (a second
// 'retrylab run' attached to it, an import, say), so it never kills their
// workers nor cuts their work short; Ctrl-C stops the wait, closes at once
// and makes the exit status 130 (see releaseInto), as an interrupted run's.
func (a *app) release(s engine.Service) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := s.CloseWhenIdle(ctx, func(running []string, holds int) {
		what := fmt.Sprintf("%d attached", holds)
		if len(running) > 0 {
			what = "running " + strings.Join(running, ", ")
		}
		fmt.Fprintf(a.errOut, "retrylab: another retrylab works on %s through this process (%s); waiting for it before closing (Ctrl-C closes now and kills its runs)\n",
			s.DBPath(), what)
	})
	if errors.Is(err, context.Canceled) {
		// The other process's work fails in its own terminal (an import
		// is then not kept at all); this one says it did not wait.
		return &exitError{code: 130, msg: fmt.Sprintf("interrupted: closed %s without waiting; the work attached to it was cut short", s.DBPath())}
	}
	return err
}

// releaseInto releases s, for a deferred call in a command that returns
// *err: a wait that Ctrl-C cut short becomes the command's exit status
// (130) unless the command failed on its own. Errors closing the database
// stay unsaid, as they always were: the command's work is done.
func (a *app) releaseInto(s engine.Service, err *error) {
	var ee *exitError
	if rerr := a.release(s); *err == nil && errors.As(rerr, &ee) {
		*err = rerr
	}
}

// withService runs fn on the database's service and releases it after.
func (a *app) withService(fn func(engine.Service) error) (err error) {
	s, err := a.service()
	if err != nil {
		return err
	}
	defer a.releaseInto(s, &err)
	return fn(s)
}

// openHost opens the database and starts the world and the runtime.
func (a *app) openHost() (*engine.Host, error) {
	h, err := engine.Open(engine.Config{DBPath: a.dbPath, Scenarios: fixtures.FS,
		MailPort: a.mailPort, CRMPort: a.crmPort, ControlPort: a.controlPort, Imports: a.imports})
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("ports %d-%d: one is in use (by another serve?); pick another --port (%v)",
			a.mailPort, a.controlPort, err)}
	}
	return h, err
}

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
	var keys, journal bool
	var eng, temporalAddr string
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario and narrate every attempt",
		Long: `Run a scenario (a name from 'retrylab scenarios', or a path to a .yaml file),
narrating each attempt as it happens, and end with the provider's outbox.
If the scenario's execution already exists, this is a restart of it, as in the
article: a new run of the same execution.

With --engine temporal the agent runs as a Temporal workflow on the cluster
at --temporal, its tool calls as activities: that engine needs the Temporal
SDK, kept out of this binary, so run hands the scenario to the
retrylab-temporal command (see temporal/README.md), which must be on PATH.

Exit status: 0 when the execution completed, 137 when its worker was killed
(resume it with 'retrylab resume'), 1 when it failed or the scenario file is
invalid (its file:line says where), 3 when it escalated, 2 for a usage error
(an unknown scenario name, a scenario path with no file there, a bad flag).`,
		Example: "  retrylab run naive\n  retrylab run safe --keys off\n  retrylab run ./my-scenario.yaml\n  retrylab run agent-retry-same-step --engine temporal --temporal 127.0.0.1:7233",
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
			var opts engine.RunOptions
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
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// Events recorded before we subscribed cannot be missed: the subscription
	// starts before the run does.
	say := func(no notice.Notice) {
		for _, l := range n.Lines(no) {
			fmt.Fprintln(a.out, l)
		}
	}
	interrupted := false
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
		case <-sigs:
			// Ctrl-C kills the worker, as a crash would; the narration goes
			// on until the host has recorded it.
			interrupted = true
			_ = h.Kill(run.Execution)
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
	if interrupted {
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
		Args: cobra.NoArgs,
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

func (a *app) scenariosCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenario catalogue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := scenario.NewCatalog(fixtures.FS).All()
			if err != nil {
				return err
			}
			for _, s := range all {
				fmt.Fprintf(a.out, "%-28s %-12s %s\n", s.Name, history.Policy{Keys: s.Policy.Keys, Journal: s.Policy.Journal}, s.Title)
			}
			return nil
		},
	}
}

func printJSON(w io.Writer, v any) error { return jsonstream.Write(w, v) }

func notFound(err error) bool { return errors.Is(err, engine.ErrNoExecution) }
