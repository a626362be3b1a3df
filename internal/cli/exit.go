package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/store"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Main runs the command line args (without the program's name) over the
// sources of imported traces in reg, prints any error on standard error,
// and returns the process's exit code.
func Main(reg *imports.Registry, args []string) int {
	cmd := newRootCmd(reg)
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
		msg = corruptLine(msg, cmd.PersistentFlags().Lookup("db").Value.String())
	}
	// The code is the table's, for an error of this process or one that
	// arrived from the host of the database (errkind keeps its sentinel).
	fmt.Fprintln(os.Stderr, "retrylab:", msg)
	return errkind.ExitCode(err)
}

// usageError is a command given wrongly (exit 2), its words msg followed
// by a pointer to --help, as cobra's own complaints are.
func usageError(msg string) error {
	return &exitError{code: errkind.ExitUsage, msg: msg + " (see --help)"}
}

// notFound says err means the execution named is not in the database.
func notFound(err error) bool { return errors.Is(err, engine.ErrNoExecution) }

// corruptLine is the line for msg, an error that says the database at db
// is damaged or not a database. A damaged record is found deep in a read
// that does not know the file's name: the line says which database it is
// in. Salvage is suggested for a database with damage only: a file that
// is not a database at all (a text file given as --db) has nothing to
// salvage, and the line asks whether --db names the right file.
func corruptLine(msg, db string) string {
	if !strings.Contains(msg, db) {
		msg = db + ": " + msg
	}
	if strings.Contains(msg, "retrylab salvage") {
		return msg
	}
	if _, err := os.Stat(db); err == nil && !store.IsDatabaseFile(db) {
		return msg + "; " + db + " does not look like a database file (no bbolt meta page; is --db the right file?)"
	}
	return msg + "; run `retrylab salvage` to copy what is readable into a new file"
}
