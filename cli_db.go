package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// noDB names the commands that never open --db (chaos checks it itself,
// since it only uses --db when given).
var noDB = map[string]bool{"scenarios": true, "verify": true, "chaos": true, "chaos-host": true,
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
