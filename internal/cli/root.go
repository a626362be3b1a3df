// Package cli is retrylab's command line: the root command and one file
// per family of subcommands (run.go: run, resume and reset; inspect*.go:
// show, outbox, state, journal; traces*.go: import, export, audit;
// diff*.go; lesson.go; serve.go; chaos.go, gen.go, verify.go: chaos,
// check, gen, verify; db.go: the --db flag and reading a database;
// clock.go; explore.go, the explorer), the helpers they share in files
// named for what they are (service.go: the database's host, attached or
// owned; hosts.go: the other hosts; catalog.go; output.go; progress.go),
// and exit.go, where a failed command gets its exit code (from
// engine/errkind's table).
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/imports"
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
		Args:          noArgs,
		// cobra's default, which SuggestionsFor (noArgs) does not apply.
		SuggestionsMinimumDistance: 2,
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
		return usageError(err.Error())
	})
	a.out, a.errOut = root.OutOrStdout(), root.ErrOrStderr()
	root.AddCommand(a.chaosCmd(), a.chaosHostCmd(), a.checkCmd(), a.runCmd(), a.resumeCmd(), a.resetCmd(), a.scenariosCmd(), a.showCmd(),
		a.outboxCmd(), a.stateCmd(), a.journalCmd(), a.serveCmd(), a.verifyCmd(), a.lessonCmd(), a.genCmd(), a.clockCmd(), a.diffCmd())
	root.AddCommand(a.handoutCmd())
	root.AddCommand(otlpCommands(a)...)
	root.AddCommand(a.roomCommands()...)
	root.AddCommand(a.salvageCmd())
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
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return usageError(fmt.Sprintf("%s: %s", c.CommandPath(), err))
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

// noArgs is cobra.NoArgs as a usage error: an argument where a command
// takes none names a command that is not there, and cobra's suggestions
// say which were meant ("rnu": run). cobra makes them only for a root
// without Args and RunE; the root here has both (it opens the explorer).
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		msg := err.Error()
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, " or ") + "?"
		}
		return usageError(msg)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
