package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/store"
)

// noDB names the commands that never open --db (chaos checks it itself,
// since it only uses --db when given).
var noDB = map[string]bool{"scenarios": true, "verify": true, "chaos": true, "chaos-host": true, "salvage": true,
	"help": true, "completion": true, "__complete": true}

// checkDBFlag checks --db before a command that opens it runs.
func (a *app) checkDBFlag(cmd *cobra.Command, _ []string) error {
	for c := cmd; c != nil; c = c.Parent() {
		if noDB[c.Name()] {
			return nil
		}
	}
	return checkDBPath(a.dbPath)
}

// checkDBPath says, in one line, what is wrong with a --db path before
// anything tries to open it: an empty path, a directory, a parent directory
// that does not exist or is not a directory. A missing file in an existing
// directory is fine: opening creates it.
func checkDBPath(path string) error {
	if path == "" {
		return &exitError{code: 2, msg: "--db is empty: name a database file, e.g. --db retrylab.db"}
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return &exitError{code: 2, msg: fmt.Sprintf("--db %s is a directory, not a database file; name a file in it, e.g. --db %s",
			path, filepath.Join(path, defaultDB))}
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return &exitError{code: 2, msg: fmt.Sprintf("--db %s: a directory in that path is a file", path)}
	case !errors.Is(err, fs.ErrNotExist):
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("--db %s: permission denied", path)
		}
		return fmt.Errorf("--db %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	dinfo, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &exitError{code: 2, msg: fmt.Sprintf("--db %s: directory %s does not exist (create it first: mkdir -p %s)", path, dir, dir)}
	case err != nil:
		return fmt.Errorf("--db %s: directory %s: %w", path, dir, err)
	case !dinfo.IsDir():
		return &exitError{code: 2, msg: fmt.Sprintf("--db %s: %s is not a directory", path, dir)}
	}
	return nil
}

// readDB opens the database for a reader that needs the file itself (check):
// read-only when no retrylab holds it, and otherwise a consistent copy that
// the host holding it writes, so a reader never fails because the explorer
// (or serve, or a run) is open. It returns the database, a function that
// rewords errors naming the copy to name --db instead, and one that closes
// the database and removes any copy.
func (a *app) readDB() (*store.DB, func(error) error, func(), error) {
	same := func(err error) error { return err }
	if err := a.needDB(); err != nil {
		return nil, nil, nil, err
	}
	if _, err := os.Stat(a.dbPath); err != nil {
		return nil, nil, nil, fmt.Errorf("read %s: %w", a.dbPath, err)
	}
	c, err := control.Dial(a.dbPath)
	if err != nil {
		db, err := store.Open(a.dbPath, store.Options{ReadOnly: true})
		if !errors.Is(err, store.ErrLocked) {
			if err != nil {
				return nil, nil, nil, err
			}
			return db, same, func() { db.Close() }, nil
		}
		// A host may have come up while we waited for the lock.
		if c, err = control.Dial(a.dbPath); err != nil {
			return nil, nil, nil, fmt.Errorf("read %s: %w, and it announces no retrylab to ask for a copy", a.dbPath, store.ErrLocked)
		}
	}
	defer c.Close()
	dir, err := os.MkdirTemp("", "retrylab-read-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("make a directory for a copy of %s: %w", a.dbPath, err)
	}
	copyPath := filepath.Join(dir, filepath.Base(a.dbPath))
	removeCopy := func() { os.RemoveAll(dir) }
	f, err := os.OpenFile(copyPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err == nil {
		err = c.CopyDB(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		removeCopy()
		return nil, nil, nil, fmt.Errorf("read %s through the retrylab that has it open (pid %d): %w", a.dbPath, c.HostPID(), err)
	}
	name := func(err error) error {
		if err == nil {
			return nil
		}
		return errors.New(strings.ReplaceAll(err.Error(), copyPath, a.dbPath))
	}
	db, err := store.Open(copyPath, store.Options{ReadOnly: true})
	if err != nil {
		removeCopy()
		return nil, nil, nil, name(err)
	}
	return db, name, func() { db.Close(); removeCopy() }, nil
}

// fixPorts makes the host this process opens listen on port (mail API),
// port+1 (CRM) and port+2 (control API). Another process already hosting
// the database cannot move its ports, so that is an error here.
func (a *app) fixPorts(port int) error {
	if port < 1 || port > 65535-2 {
		return &exitError{code: 2, msg: fmt.Sprintf("--port %d: want a port from 1 to 65533 (the CRM takes N+1, the control API N+2)", port)}
	}
	if c, err := control.Dial(a.dbPath); err == nil {
		defer c.Close()
		return &exitError{code: 1, msg: fmt.Sprintf("--port %d: another retrylab (pid %d) already hosts %s, its mail API on %s; close it, or leave out --port to use its addresses",
			port, c.HostPID(), a.dbPath, c.MailURL())}
	}
	a.mailPort, a.crmPort, a.controlPort = port, port+1, port+2
	return nil
}

// executionIDs lists db's executions in stored order, those keep accepts
// (nil keeps all); keep sees each one's stored record in the same read.
func executionIDs(db *store.DB, keep func(tx *store.Tx, id string, rec []byte) bool) ([]string, error) {
	var ids []string
	err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			if keep == nil || keep(tx, id, rec) {
				ids = append(ids, id)
			}
			return true
		})
	})
	return ids, err
}
