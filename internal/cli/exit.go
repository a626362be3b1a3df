package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/store"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Main runs the command line args (without the program's name), prints any
// error on standard error, and returns the process's exit code.
func Main(args []string) int {
	cmd := newRootCmd()
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
