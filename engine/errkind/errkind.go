// Package errkind is the one table of the errors that have a name beyond
// their words: each sentinel error, the kind it is called by when it
// crosses from the host to an attached process, and the exit code the
// command line ends with when a command fails with it.
//
// The host names an error with KindOf, the client turns the name and the
// words back into an error with FromWire, and the command line picks its
// exit code with ExitCode, so an attached command fails as one that opened
// the database itself does: same words, same code, and errors.Is still
// finds the sentinel.
package errkind

import (
	"errors"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/store"
)

// ErrNoExecution means the execution id is not in the database.
var ErrNoExecution = errors.New("no such execution")

// ErrBusy means an execution already has a live worker.
var ErrBusy = errors.New("execution is already running")

// ErrHostClosing means the host is closing and takes no new runs or holds.
var ErrHostClosing = errors.New("the retrylab hosting this database is closing")

// Exit codes of the command line.
const (
	// ExitFailure is a command that failed.
	ExitFailure = 1
	// ExitUsage is a command given wrongly: a bad flag, argument or name.
	ExitUsage = 2
)

// row is one named error.
type row struct {
	err  error  // the sentinel
	kind string // its name on the wire
	exit int    // the command line's exit code
}

// rows is the table; the first row whose sentinel an error is names it.
// It is never written to.
var rows = [...]row{
	{ErrNoExecution, "no_execution", ExitFailure},
	{ErrBusy, "busy", ExitFailure},
	{ErrHostClosing, "closing", ExitFailure},
	// A scenario name that is none of the catalogue's, or a scenario path
	// with no file, is a usage error, like an unknown --engine.
	{scenario.ErrUnknown, "unknown_scenario", ExitUsage},
	{scenario.ErrNoFile, "no_scenario_file", ExitUsage},
	{store.ErrCorrupt, "corrupt", ExitFailure},
	{store.ErrLocked, "locked", ExitFailure},
	{store.ErrNewerSchema, "newer_schema", ExitFailure},
	{store.ErrClosed, "store_closed", ExitFailure},
}

// KindOf names err for the wire: the kind of the first sentinel in the
// table that err is (errors.Is), or "" when it is none of them.
func KindOf(err error) string {
	if r, ok := find(err); ok {
		return r.kind
	}
	return ""
}

// FromWire is the error that arrived from another process as its kind and
// its words msg: its Error() is msg exactly, and it is (errors.Is) the
// kind's sentinel. A kind that is "" or not in the table (a newer host's)
// gives an error of the words alone.
func FromWire(kind, msg string) error {
	if kind != "" {
		for _, r := range rows {
			if r.kind == kind {
				return &remote{msg: msg, sentinel: r.err}
			}
		}
	}
	return errors.New(msg)
}

// ExitCode is the exit code of a command that failed with err: 0 for nil,
// the table's code for a sentinel err is, ExitFailure for any other error.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if r, ok := find(err); ok {
		return r.exit
	}
	return ExitFailure
}

func find(err error) (row, bool) {
	if err == nil {
		return row{}, false
	}
	for _, r := range rows {
		if errors.Is(err, r.err) {
			return r, true
		}
	}
	return row{}, false
}

// remote is an error that crossed from another process: its words as they
// were, and the sentinel they stand for.
type remote struct {
	msg      string
	sentinel error
}

func (e *remote) Error() string { return e.msg }

func (e *remote) Unwrap() error { return e.sentinel }
