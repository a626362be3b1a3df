package cli

// The host of --db: this process's own, or another retrylab's it attaches to.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

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
func (a *app) connect() (s engine.Service, owned *control.Server, err error) {
	for try := 0; ; try++ {
		c, err := control.Dial(a.dbPath)
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
			if c, derr := control.Dial(a.dbPath); derr == nil {
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
		fmt.Fprintln(a.errOut, waitLine(s.DBPath(), running, holds))
	})
	if errors.Is(err, context.Canceled) {
		// The other process's work fails in its own terminal (an import
		// is then not kept at all); this one says it did not wait.
		return &exitError{code: 130, msg: fmt.Sprintf("interrupted: closed %s without waiting; the work attached to it was cut short", s.DBPath())}
	}
	return err
}

// waitLine is what a host closing says while work goes on through it: the
// runs of this process (holds 0), the runs another process started through
// it, or another process attached to it that runs nothing (an idle
// explorer, an import), which the wait lasts until it quits. Each says how
// to stop waiting.
func waitLine(db string, running []string, holds int) string {
	switch {
	case holds == 0:
		// Nothing attached: the runs are this process's own.
		return fmt.Sprintf("retrylab: this process's runs on %s are not over (running %s); waiting for them before closing (Ctrl-C closes now and kills them)",
			db, strings.Join(running, ", "))
	case len(running) > 0:
		return fmt.Sprintf("retrylab: another retrylab works on %s through this process (running %s); waiting for it before closing (Ctrl-C closes now and kills its runs)",
			db, strings.Join(running, ", "))
	}
	return fmt.Sprintf("retrylab: another retrylab works on %s through this process (%d attached); waiting for it to end or quit before closing (quit the other retrylab, or Ctrl-C closes now and cuts its work short)",
		db, holds)
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

// openHost opens the database, starts the world and the runtime, and
// serves the control API for other processes.
func (a *app) openHost() (*control.Server, error) {
	h, err := control.Open(engine.Config{DBPath: a.dbPath, Scenarios: fixtures.FS,
		MailPort: a.mailPort, CRMPort: a.crmPort, ControlPort: a.controlPort, Imports: a.imports, Companion: a.roomCompanion(a.dbPath)})
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("ports %d-%d: one is in use (by another serve?); pick another --port (%v)",
			a.mailPort, a.controlPort, err)}
	}
	return h, err
}

// withReader runs fn on the database for a command that only reads it
// (show, state, outbox, journal list, diff): through the retrylab that has
// it open, if one does, and otherwise on a host opened read-only
// (engine.OpenReadOnly), which writes no byte of the file and reads a file
// this user may not write. A missing file is not created.
func (a *app) withReader(fn func(engine.Service) error) (err error) {
	if err := a.needDB(); err != nil {
		return err
	}
	// attach reads through the retrylab that has the file open, if one
	// does and holds it for us.
	attach := func() (*control.Client, error) {
		c, err := control.Dial(a.dbPath)
		if err != nil {
			return nil, err
		}
		if err := c.Hold(); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	for try := 0; ; try++ {
		c, derr := attach()
		if derr == nil {
			defer a.releaseInto(c, &err)
			return fn(c)
		}
		if !errors.Is(derr, control.ErrNoHost) && try < 40 {
			time.Sleep(25 * time.Millisecond) // a host that is closing: until it has let go of the file
			continue
		}
		h, oerr := engine.OpenReadOnly(engine.Config{DBPath: a.dbPath, Scenarios: fixtures.FS, Imports: a.imports})
		if errors.Is(oerr, store.ErrLocked) {
			// A host may have come up while we waited for the lock.
			if c, derr := attach(); derr == nil {
				defer a.releaseInto(c, &err)
				return fn(c)
			}
		}
		if oerr != nil {
			return oerr
		}
		defer h.Close()
		notes, err := h.Notes()
		if err != nil {
			return err
		}
		for _, n := range notes {
			fmt.Fprintf(a.errOut, "retrylab: %s\n", n)
		}
		return fn(engine.NewLocal(h))
	}
}

// needDB fails, in one line, when --db names no file: a command that only
// reads never creates a database.
func (a *app) needDB() error {
	if _, err := os.Stat(a.dbPath); errors.Is(err, fs.ErrNotExist) {
		return &exitError{code: 1, msg: fmt.Sprintf("no database at %s: `retrylab run naive` makes one", a.dbPath)}
	}
	return nil
}
