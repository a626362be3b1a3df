// Command retrylab-temporal holds what of retrylab needs the Temporal server
// or SDK, kept out of the main module so that `go run .` and `go test ./...`
// there stay fast: `retrylab-temporal dev` runs a Temporal cluster in this
// process, with nothing to install.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	sdklog "go.temporal.io/sdk/log"

	"github.com/retrylab/retrylab/temporal/devserver"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run executes the command line; stop, when not nil, replaces the wait for
// Ctrl-C (tests).
func run(args []string, out, errOut io.Writer, stop <-chan struct{}) int {
	root := &cobra.Command{
		Use:   "retrylab-temporal",
		Short: "retrylab's Temporal tools (the parts that need the Temporal server or SDK)",
		Long: `retrylab's Temporal tools, the parts that need the Temporal server or SDK:
dev runs a Temporal cluster in this process; list and import read a cluster's
workflows and store their histories in retrylab's database, where 'retrylab
show', 'retrylab audit' and the explorer read them; explore opens the explorer
on a cluster, live and read-only; run runs a demo scenario's agent as a
workflow on worker processes (worker) against the simulated world.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(devCmd(out, stop), listCmd(out), importCmd(out), runAgentCmd(out), workerCmd(out), exploreCmd())
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(errOut, "retrylab-temporal: %s\n", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// stopWait bounds how long dev waits for the server to stop.
const stopWait = 20 * time.Second

func devCmd(out io.Writer, stop <-chan struct{}) *cobra.Command {
	var opts devserver.Options
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a Temporal server in this process, on loopback, with SQLite",
		Long: `Run Temporal's own server (frontend, history, matching and worker services)
in this process, bound to 127.0.0.1, with SQLite for storage: a cluster for
trying retrylab with Temporal, with nothing to download or install. Clients
and the temporal CLI find it at 127.0.0.1:7233, namespace "default".

State is kept in memory unless --db names a SQLite file (created with its
schema when missing). Stop with Ctrl-C.`,
		Example: "  retrylab-temporal dev\n  retrylab-temporal dev --db temporal.db --namespace default --namespace agents",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := devserver.Start(opts)
			if err != nil {
				return err
			}
			where := "in memory"
			if opts.DBPath != "" {
				where = "in " + opts.DBPath
			}
			fmt.Fprintf(out, "Temporal dev server on %s, namespaces %v, state %s\npress Ctrl-C to stop\n", s.Address(), namespaces(opts), where)
			sigs := make(chan os.Signal, 2)
			if stop == nil {
				signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
				defer signal.Stop(sigs)
				<-sigs
			} else {
				<-stop
			}
			// The services stop in turn; a second Ctrl-C, or a stop that
			// takes too long, leaves without waiting.
			fmt.Fprintln(out, "stopping (Ctrl-C again to leave at once)")
			done := make(chan error, 1)
			go func() { done <- s.Stop() }()
			select {
			case err := <-done:
				if err != nil {
					return errors.Join(errors.New("stop the server"), err)
				}
				fmt.Fprintln(out, "stopped")
				return nil
			case <-sigs:
				return errors.New("left before the server stopped")
			case <-time.After(stopWait):
				return fmt.Errorf("the server did not stop within %s; left anyway", stopWait)
			}
		},
	}
	cmd.Flags().StringVar(&opts.Address, "addr", devserver.DefaultAddress, "frontend address (loopback only; port 0 picks a free one)")
	cmd.Flags().StringVar(&opts.DBPath, "db", "", "SQLite file that keeps the state (default: memory)")
	cmd.Flags().StringSliceVar(&opts.Namespaces, "namespace", []string{"default"}, "namespaces to register (repeat)")
	return cmd
}

func namespaces(o devserver.Options) []string {
	if len(o.Namespaces) == 0 {
		return []string{"default"}
	}
	return o.Namespaces
}

// quietLogger keeps the SDK client's own logs off the terminal.
var quietLogger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
