package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/store"
)

// Traces is what 'retrylab import', 'audit' and 'export' do with a
// database's traces. LocalTraces does it on a database the command opened
// itself; a control.Client does it through the host that holds the
// database (the explorer, 'retrylab serve'), which runs the same code on
// its own store (Host.Traces), so the results, and the errors, are the
// same either way.
type Traces interface {
	// ImportFile imports the regular file at path, as the source of
	// format says (imports.Registry.SniffFile: the caller sniffed it).
	ImportFile(path string, format ImportFormat) (ImportResult, error)
	// ImportStream imports what r holds (standard input, a pipe), read
	// once; what it is is told from its first bytes. name stands for it in
	// the result and in errors.
	ImportStream(name string, r io.Reader) (ImportResult, error)
	// Audit folds the executions named (all but those whose spans show in
	// an imported workflow, when none are) one at a time and audits them;
	// the report is listed a finding at a time. Close the listing.
	Audit(ids []string, opts audit.Options) (*audit.Listing, error)
	// PlanOTLPExport finds the executions to export (retrylab's own, when
	// none are named) before anything is written.
	PlanOTLPExport(ids []string, o OTLPExportOptions) (OTLPExport, error)
	Close() error
}

// OTLPExportOptions say how an export is written.
type OTLPExportOptions struct {
	// Version is the scope's version: the build's.
	Version string
	// Lines writes OTLP/JSON Lines (batches of spans, a document a line)
	// instead of one document.
	Lines bool
}

// OTLPExport is an export whose executions are found, ready to write.
type OTLPExport interface {
	// Executions is how many executions it writes.
	Executions() int
	// Write writes them to w as one OTLP/JSON document (and a newline), or
	// as JSON Lines, streamed, and says how many spans it wrote. Call it
	// once.
	Write(w io.Writer) (spans int, err error)
	// Close lets go of an export that is not written.
	Close() error
}

// ImportFormat says how an imported file is to be read: the Format of
// one of the registry's sources (imports.Source).
type ImportFormat string

// ImportResult is what importing one file did.
type ImportResult = imports.Result

// MissingExecution is an execution named that the database does not hold.
// It is ErrNoExecution; its words name the database (DB) as the caller
// named it, and it crosses the control API with its ID, so the attached
// side can name its own.
type MissingExecution struct{ ID, DB string }

func (e *MissingExecution) Error() string {
	return fmt.Sprintf("no execution %q in %s", e.ID, e.DB)
}

// Is makes a MissingExecution ErrNoExecution.
func (e *MissingExecution) Is(target error) bool { return target == ErrNoExecution }

// LocalTraces works on the traces of a database this process opened (no
// host, no world, no workers), imported ones through the sources in reg
// (engine/imports/all); Close closes the database.
func LocalTraces(db *store.DB, reg *imports.Registry) Traces { return localTraces{stored{db, reg}} }

type localTraces struct{ s stored }

func (l localTraces) Close() error { return l.s.db.Close() }

func (l localTraces) ImportFile(path string, format ImportFormat) (ImportResult, error) {
	return l.s.importFile(path, format)
}

func (l localTraces) ImportStream(name string, r io.Reader) (ImportResult, error) {
	return l.s.importStream(name, "", r)
}

func (l localTraces) Audit(ids []string, opts audit.Options) (*audit.Listing, error) {
	rep, err := l.s.audit(ids, opts)
	if err != nil {
		return nil, err
	}
	return audit.ListingOf(rep), nil
}

func (l localTraces) PlanOTLPExport(ids []string, o OTLPExportOptions) (OTLPExport, error) {
	e, err := l.s.planOTLPExport(ids, o)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// sourceOf is the registry's source of format.
func (s stored) sourceOf(format ImportFormat) (imports.Source, error) {
	src, ok := s.reg.Lookup(string(format))
	if !ok {
		return nil, fmt.Errorf("unknown import format %q", format)
	}
	return src, nil
}

// importFile imports the regular file at path, as format says.
func (s stored) importFile(path string, format ImportFormat) (ImportResult, error) {
	src, err := s.sourceOf(format)
	if err != nil {
		return ImportResult{}, err
	}
	return src.ImportFile(s.db, path)
}

// importStream imports r, read once: as format says, or, when format is
// empty, as its first bytes say (imports.Registry.Sniff).
func (s stored) importStream(name string, format ImportFormat, r io.Reader) (ImportResult, error) {
	br := bufio.NewReaderSize(r, imports.SniffBuffer)
	var src imports.Source
	if format != "" {
		var err error
		if src, err = s.sourceOf(format); err != nil {
			return ImportResult{}, err
		}
	} else if sniffed, ok := s.reg.Sniff(br); ok {
		src = sniffed
	} else {
		return ImportResult{}, fmt.Errorf("%s: not a trace of any format this retrylab reads", name)
	}
	return src.Import(s.db, name, br)
}

// executionRecord is execution id's record in tx, decoded; a missing one
// is a MissingExecution of db.
func executionRecord(tx *store.Tx, db *store.DB, id string) (history.Execution, error) {
	rec := tx.Execution(id)
	if rec == nil {
		return history.Execution{}, &MissingExecution{id, db.Path()}
	}
	x, err := history.DecodeExecution(rec)
	if err != nil {
		return history.Execution{}, tx.ExecutionDamaged(id, err)
	}
	return x, nil
}

// audit audits the executions named, or all (eachFolded).
func (s stored) audit(ids []string, opts audit.Options) (audit.Report, error) {
	au := audit.NewAuditor(opts)
	if err := s.eachFolded(ids, au.Add); err != nil {
		return audit.Report{}, err
	}
	return au.Report(), nil
}

// executionIDs lists db's executions in stored order, those keep accepts;
// keep sees each one's stored record in the same read.
func executionIDs(db *store.DB, keep func(tx *store.Tx, id string, rec []byte) bool) ([]string, error) {
	var ids []string
	err := db.View(func(tx *store.Tx) error {
		var damaged error
		err := tx.Executions(false, 0, func(id string, rec []byte) bool {
			if rec == nil {
				// The creation order names it: its record is lost.
				damaged = tx.ExecutionDamaged(id, errors.New("the creation order names it, but it has no record"))
				return false
			}
			if keep(tx, id, rec) {
				ids = append(ids, id)
			}
			return true
		})
		if err != nil {
			return err
		}
		return damaged
	})
	return ids, err
}

// exportPage is how many history events an export reads a transaction.
const exportPage = 512

// otlpExport is an export planned on a store.
type otlpExport struct {
	s        stored
	exporter imports.Exporter
	version  string
	lines    bool
	ids      []string
	imported []bool
}

// planOTLPExport finds the executions to export: those named (every one
// must exist), or all that retrylab ran.
func (s stored) planOTLPExport(ids []string, o OTLPExportOptions) (*otlpExport, error) {
	exporter, err := s.reg.Exporter("otlp")
	if err != nil {
		return nil, err
	}
	if _, ok := exporter.(imports.LinesExporter); o.Lines && !ok {
		return nil, errors.New("the otlp source does not write JSON Lines")
	}
	db := s.db
	if len(ids) == 0 {
		var err error
		ids, err = executionIDs(db, func(_ *store.Tx, _ string, rec []byte) bool {
			// An undecodable record is kept: reading it reports the damage.
			x, err := history.DecodeExecution(rec)
			return err != nil || x.Imported == ""
		})
		if err != nil {
			return nil, err
		}
	}
	e := &otlpExport{s: s, exporter: exporter, version: o.Version, lines: o.Lines, ids: ids, imported: make([]bool, len(ids))}
	for i, id := range ids {
		err := db.View(func(tx *store.Tx) error {
			x, err := executionRecord(tx, db, id)
			if err != nil {
				return err
			}
			e.imported[i] = x.Imported != ""
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *otlpExport) Executions() int { return len(e.ids) }

func (e *otlpExport) Close() error { return nil }

func (e *otlpExport) Write(w io.Writer) (int, error) {
	var jw imports.Writer
	if e.lines {
		jw = e.exporter.(imports.LinesExporter).NewLinesWriter(w, e.version)
	} else {
		jw = e.exporter.NewWriter(w, e.version)
	}
	for i, id := range e.ids {
		if err := e.one(jw, id, e.imported[i]); err != nil {
			return jw.Spans(), err
		}
	}
	if err := jw.Close(); err != nil {
		return jw.Spans(), err
	}
	if e.lines {
		return jw.Spans(), nil // each line ends with its newline
	}
	_, err := io.WriteString(w, "\n")
	return jw.Spans(), err
}

// one writes one execution's spans: retrylab's own streamed from its
// history (read once, never whole), an imported one from its model.
func (e *otlpExport) one(jw imports.Writer, id string, imported bool) error {
	notOurs := fmt.Errorf("%s was imported, not run by retrylab: its source file is its export", id)
	if imported {
		t, err := e.s.fold(id)
		if err != nil {
			return err
		}
		if t.Events == 0 {
			return notOurs
		}
		if err := jw.Trace(t); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		return nil
	}
	// The history is read a page a transaction, and each page is written
	// after its transaction: a host that streams an export to a reader who
	// stops reading (a pager) holds no read transaction meanwhile, which
	// would keep its writers from growing the file.
	err := jw.History(id, func(fn func(history.Event) error) error {
		page := make([]history.Event, 0, exportPage)
		for from := uint64(0); ; {
			page = page[:0]
			var bad error
			if err := e.s.db.View(func(tx *store.Tx) error {
				return tx.Events(id, from, func(seq uint64, data []byte) bool {
					ev, err := history.Decode(data)
					if err != nil {
						bad = tx.EventDamaged(id, seq, err)
						return false
					}
					page = append(page, ev)
					from = seq + 1
					return len(page) < exportPage
				})
			}); err != nil {
				return err
			}
			for _, ev := range page {
				if err := fn(ev); err != nil {
					return err
				}
			}
			if bad != nil || len(page) < exportPage {
				return bad
			}
		}
	})
	switch {
	case errors.Is(err, imports.ErrNoEvents):
		// No history: an execution that ran lost it (damage).
		var lost error
		if verr := e.s.db.View(func(tx *store.Tx) error { lost = lostHistory(tx, id); return nil }); verr != nil {
			return verr
		}
		if lost != nil {
			return lost
		}
		return notOurs
	case err != nil:
		return fmt.Errorf("%s: %w", id, err)
	}
	return nil
}
