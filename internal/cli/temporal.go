package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// temporalCommand is the command that holds everything needing the
// Temporal SDK (the temporal/ module).
const temporalCommand = "retrylab-temporal"

// runOnTemporal hands 'run --engine temporal' to retrylab-temporal run,
// which runs the scenario's agent as a Temporal workflow and records it
// into this database; its output and exit status are run's.
func (a *app) runOnTemporal(scenario, addr string, policyFlags bool) error {
	if policyFlags {
		return &exitError{code: 2, msg: "run: --keys and --journal are for the local engine; with --engine temporal the scenario's policy applies"}
	}
	// The catalogue is here too: an unknown name (or a bad file) is said
	// as the local engine says it (exit 2), before retrylab-temporal is
	// looked for.
	if _, err := scenarioCatalog().Get(scenario); err != nil {
		return err
	}
	return a.handToTemporal("run", scenario, "--address", addr, "--db", a.dbPath)
}

// handToTemporal runs retrylab-temporal with args, on this terminal.
func (a *app) handToTemporal(args ...string) error {
	bin, err := exec.LookPath(temporalCommand)
	if err != nil {
		what := "run --engine temporal"
		if args[0] == "explore" {
			what = "--temporal"
		}
		return fmt.Errorf("%s needs the %s command on PATH (cd temporal && go install ./cmd/%s: it goes to $GOBIN, or $(go env GOPATH)/bin when GOBIN is unset): %w",
			what, temporalCommand, temporalCommand, errors.Unwrap(err))
	}
	c := exec.Command(bin, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, a.out, a.errOut
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// retrylab-temporal said why on stderr already.
		return &exitError{code: ee.ExitCode()}
	}
	return err
}
