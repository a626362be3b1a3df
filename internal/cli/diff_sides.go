package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// diffSide is one side of a diff as given: an execution of the database,
// or an execution of a trace file (FILE, FILE#ID).
type diffSide struct {
	side string // "A" or "B"
	arg  string
	// file is set for a trace file; id is the execution in it, empty when
	// the file holds one.
	file, id string
}

// parseDiffSide tells a trace file from an execution id: an argument that
// names a file, or FILE#ID where FILE exists, is a file; FILE#ID where
// FILE does not exist is an error; anything else is an execution of the
// database.
func parseDiffSide(side, arg string) (diffSide, error) {
	d := diffSide{side: side, arg: arg}
	if info, err := os.Stat(arg); err == nil && !info.IsDir() {
		d.file = arg
		return d, notADatabase(side, arg)
	}
	i := strings.LastIndex(arg, "#")
	if i < 0 {
		return d, nil
	}
	d.file, d.id = arg[:i], arg[i+1:]
	if d.file == "" || d.id == "" {
		return d, &exitError{code: 2, msg: fmt.Sprintf("diff %s: %q: want FILE#ID, an execution of a trace file, or an execution id", side, arg)}
	}
	info, err := os.Stat(d.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d, fmt.Errorf("diff %s: %s: no such trace file", side, d.file)
	case err != nil:
		return d, fmt.Errorf("diff %s: %w", side, err)
	case info.IsDir():
		return d, fmt.Errorf("diff %s: %s is a directory, not a trace file", side, d.file)
	}
	return d, notADatabase(side, d.file)
}

// notADatabase refuses a retrylab database given where a trace file goes,
// saying how to compare its executions, rather than failing to decode it.
func notADatabase(side, file string) error {
	if !store.IsDatabaseFile(file) {
		return nil
	}
	return fmt.Errorf("diff %s: %s is a retrylab database, not a trace file: export its execution (retrylab --db %s export --otlp x.json ID) and give x.json#ID", side, file, file)
}

// name is the side in a label: the file's base name (with #ID), or the
// execution id.
func (d diffSide) name() string {
	if d.file == "" {
		return d.arg
	}
	if d.id == "" {
		return filepath.Base(d.file)
	}
	return filepath.Base(d.file) + "#" + d.id
}

// traceFiles imports trace files into throwaway databases, one per file,
// with the same importers as `retrylab import`, so an execution of a file
// folds exactly as it would once imported; the user's database is never
// opened for it.
type traceFiles struct {
	reg *imports.Registry
	dir string
	dbs map[string]*store.DB
}

func (tf *traceFiles) close() {
	for _, db := range tf.dbs {
		db.Close()
	}
	if tf.dir != "" {
		os.RemoveAll(tf.dir)
	}
}

// open imports path into its scratch database, once.
func (tf *traceFiles) open(path string) (*store.DB, error) {
	if db := tf.dbs[path]; db != nil {
		return db, nil
	}
	if tf.dir == "" {
		dir, err := os.MkdirTemp("", "retrylab-diff-")
		if err != nil {
			return nil, fmt.Errorf("make a directory for a scratch database: %w", err)
		}
		tf.dir, tf.dbs = dir, map[string]*store.DB{}
	}
	// Thrown away when the command ends: nothing to fsync.
	db, err := store.Open(filepath.Join(tf.dir, fmt.Sprintf("file%d.db", len(tf.dbs))), store.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	tf.dbs[path] = db
	src, known, err := tf.reg.SniffFile(path)
	if err != nil {
		return db, err
	}
	if !known {
		return db, fmt.Errorf("%s: not a trace of any format this retrylab reads", path)
	}
	_, err = src.ImportFile(db, path)
	return db, err
}

// fold imports d's file and folds the execution d names in it (or its
// only one).
func (tf *traceFiles) fold(d diffSide) (*trace.Trace, error) {
	db, err := tf.open(d.file)
	if err != nil {
		return nil, fmt.Errorf("diff %s: read %s", d.side, oneLine(err.Error()))
	}
	ids, err := executionIDs(db, nil)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %s: %w", d.side, d.file, err)
	}
	slices.Sort(ids)
	id := d.id
	switch {
	case id == "" && len(ids) == 1:
		id = ids[0]
	case id == "":
		return nil, fmt.Errorf("diff %s: %s holds %d executions; name one as %s#ID: %s",
			d.side, d.file, len(ids), d.file, listIDs(ids))
	case !slices.Contains(ids, id):
		return nil, fmt.Errorf("diff %s: no execution %s in %s; it holds %s", d.side, id, d.file, listIDs(ids))
	}
	t, err := foldOne(tf.reg, db, id)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %s: %w", d.side, d.file, err)
	}
	return t, nil
}

// listIDs names the first few ids and counts the rest.
func listIDs(ids []string) string {
	const shown = 5
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], ", "), len(ids)-shown)
}

// loadTrace folds one execution of the database: its history, or, for an
// imported execution, its spans or Temporal history translated by the
// importer (Service.ImportedEvents).
func loadTrace(s engine.Service, d diffSide) (*trace.Trace, error) {
	x, err := s.Execution(d.arg)
	if err != nil {
		if info, serr := os.Stat(d.arg); notFound(err) && serr == nil && info.IsDir() {
			// No execution has the name, and it names a directory: a
			// directory of trace files given instead of one of them.
			return nil, fmt.Errorf("diff %s: %s is a directory, not a trace file, nor an execution in %s; name a file in it",
				d.side, d.arg, s.DBPath())
		}
		if notFound(err) && (strings.ContainsAny(d.arg, `/\`) || filepath.Ext(d.arg) != "") {
			return nil, fmt.Errorf("diff %s: %s: no such trace file, nor an execution in %s", d.side, d.arg, s.DBPath())
		}
		if notFound(err) {
			return nil, fmt.Errorf("diff %s: no such execution: %s in %s", d.side, d.arg, s.DBPath())
		}
		return nil, fmt.Errorf("diff %s: %w", d.side, err)
	}
	t, err := imports.FoldExecution(s, x, 0)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", d.side, err)
	}
	return t, nil
}
