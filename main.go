// Command retrylab shows, live, why retried AI-agent tool calls duplicate
// side effects, and how idempotency keys and a journal of recorded results
// stop it. Run without arguments it opens the explorer; the subcommands are
// the same engine without a screen.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/store"
)

func main() {
	// A worker is this same binary, started by the host with its address in
	// the environment; it never reaches the CLI.
	agent.MainIfWorker()
	os.Exit(execute(os.Args[1:]))
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func execute(args []string) int {
	cmd := newRootCmd(all.Registry())
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "retrylab:", ee.msg)
		}
		return ee.code
	}
	msg := oneLine(err.Error())
	if errors.Is(err, store.ErrCorrupt) {
		// A damaged record is found deep in a read that does not know the
		// file's name: say which database it is in.
		if f := cmd.PersistentFlags().Lookup("db"); f != nil && !strings.Contains(msg, f.Value.String()) {
			msg = f.Value.String() + ": " + msg
		}
	}
	if errors.Is(err, scenario.ErrUnknown) || strings.HasPrefix(msg, scenario.ErrUnknown.Error()+" ") ||
		errors.Is(err, scenario.ErrNoFile) || strings.HasPrefix(msg, scenario.ErrNoFile.Error()+": ") {
		// A scenario name that is none of the catalogue's, or a scenario
		// path with no file, is a usage error, like an unknown --engine. The
		// text counts too: when another process hosts the database, its
		// error arrives as text.
		fmt.Fprintln(os.Stderr, "retrylab:", msg)
		return 2
	}
	if strings.HasPrefix(msg, "unknown command ") {
		// A usage error, like a bad flag or a missing argument.
		fmt.Fprintln(os.Stderr, "retrylab:", msg+" (see --help)")
		return 2
	}
	fmt.Fprintln(os.Stderr, "retrylab:", msg)
	return 1
}
