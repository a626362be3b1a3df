// Package imports is the importer registry: every source of traces that
// retrylab imports (OpenTelemetry spans, Temporal histories, the next
// ones) is one Source, registered in one line (engine/imports/all), and
// whatever imports, reads, folds, audits or flags an imported execution
// asks the Registry for the execution's source by the format its record
// names, never a switch over the formats.
//
// The package imports no source: sources import it.
package imports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// Source is one kind of trace retrylab imports.
type Source interface {
	// Format names the source: the Imported of the execution records it
	// writes (history.Execution), and the name 'import' and the control
	// API know it by ("otlp", "temporal").
	Format() string
	// Sniff reports whether the stream br holds is this source's, from
	// what br can peek (its buffer is SniffBuffer bytes) without reading
	// it.
	Sniff(br *bufio.Reader) bool
	// ImportFile imports the regular file at path into db; Import does the
	// same with a stream read once, which name stands for in the result
	// and in errors. A failed import leaves nothing behind.
	ImportFile(db *store.DB, path string) (Result, error)
	Import(db *store.DB, name string, r io.Reader) (Result, error)
	// Events is an execution the source imported, as the fold's input
	// events.
	Events(tx *store.Tx, id string) ([]trace.Event, error)
	// Verdict is what the record of an execution the source imported
	// says of its audit with the default effects (audit.Verdict):
	// Duplicate, Possible or none (history.Execution's Duplicates and
	// Possible).
	Verdict(tx *store.Tx, id string) (audit.Grade, error)
}

// Holder is a Source that can tell at little cost whether a database
// holds anything it imported. A source that is not one is taken to hold
// something.
type Holder interface {
	Holds(tx *store.Tx) (bool, error)
}

// Absorber is a Source whose executions show other executions within
// them: an imported Temporal workflow shows the attempts its worker
// recorded as OTLP spans. Absorbs reports whether execution id is one of
// those, which a walk over every execution does not fold a second time.
type Absorber interface {
	Absorbs(tx *store.Tx, id string) bool
}

// Counter is a Source that says what its executions are read from: unit
// is what the importer counts ("spans"), ref what stands before an
// attempt's reference ("span "). Others count "events" and write none.
type Counter interface {
	Units() (unit, ref string)
}

// Exporter is a Source that also writes executions in its format
// ('retrylab export --otlp').
type Exporter interface {
	NewWriter(w io.Writer, version string) Writer
}

// LinesExporter is an Exporter that also writes its format's line-framed
// variant (OTLP/JSON Lines: a document of a batch of spans a line).
type LinesExporter interface {
	Exporter
	NewLinesWriter(w io.Writer, version string) Writer
}

// Writer writes executions into one document, streamed as they come.
type Writer interface {
	// Trace writes an imported execution from its fold.
	Trace(t *trace.Trace) error
	// History writes an execution retrylab ran from its history, which
	// read hands to fn a piece at a time; one with no events is
	// ErrNoEvents.
	History(id string, read func(fn func(history.Event) error) error) error
	// Spans is how many spans (items) were written so far.
	Spans() int
	// Close ends the document.
	Close() error
}

// ErrNoEvents is Writer.History's answer for an execution with no events
// of its own.
var ErrNoEvents = errors.New("no events recorded")

// Result is what importing one file or stream did, in words any face can
// print.
type Result struct {
	// Format is the source that imported it.
	Format string `json:"format"`
	// Summary says what was read and stored, to follow the file's name:
	// "OTLP/JSON, 3 spans imported, 1 already there".
	Summary string `json:"summary"`
	// Executions are the executions created or extended, in order of
	// first mention.
	Executions []string `json:"executions,omitempty"`
}

// SniffBuffer is the buffer size of the reader Sniff peeks into.
const SniffBuffer = 1 << 20

// Registry is the sources a process knows, built once at start-up
// (engine/imports/all) and handed to what needs it (engine.Config). It
// is not changed once in use.
type Registry struct {
	sources  []Source
	byFormat map[string]Source
}

// New is a registry of sources, asked in this order (Register).
func New(sources ...Source) *Registry {
	r := &Registry{byFormat: map[string]Source{}}
	for _, s := range sources {
		r.Register(s)
	}
	return r
}

// Register adds a source. Sniff asks the sources in the order they were
// registered: one that takes any stream (OTLP, whose importer says what is
// wrong with a file of none of its encodings) goes last. Two sources of
// one format are a mistake of the wiring: Register panics.
func (r *Registry) Register(s Source) {
	f := s.Format()
	if f == "" {
		panic("imports: a source without a format")
	}
	if r.byFormat[f] != nil {
		panic(fmt.Sprintf("imports: two sources of format %q", f))
	}
	r.sources = append(r.sources, s)
	r.byFormat[f] = s
}

// Sources are the registered sources, in order.
func (r *Registry) Sources() []Source {
	if r == nil {
		return nil
	}
	return append([]Source(nil), r.sources...)
}

// Lookup is the source of a format; a nil registry knows none.
func (r *Registry) Lookup(format string) (Source, bool) {
	if r == nil {
		return nil, false
	}
	s, ok := r.byFormat[format]
	return s, ok
}

// source is the source of an imported execution's record.
func (r *Registry) source(x history.Execution) (Source, error) {
	if x.Imported == "" {
		return nil, fmt.Errorf("execution %s was not imported: read its history", x.ID)
	}
	s, ok := r.Lookup(x.Imported)
	if !ok {
		return nil, fmt.Errorf("execution %s was imported from %q, a format this retrylab does not read", x.ID, x.Imported)
	}
	return s, nil
}

// Sniff is the first source that takes the stream br holds; br's buffer
// should be SniffBuffer bytes (bufio.NewReaderSize).
func (r *Registry) Sniff(br *bufio.Reader) (Source, bool) {
	for _, s := range r.Sources() {
		if s.Sniff(br) {
			return s, true
		}
	}
	return nil, false
}

// SniffFile is the first source that takes the file at path.
func (r *Registry) SniffFile(path string) (Source, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	s, ok := r.Sniff(bufio.NewReaderSize(f, SniffBuffer))
	return s, ok, nil
}

// Events is an imported execution, as the fold's input events.
func (r *Registry) Events(tx *store.Tx, x history.Execution) ([]trace.Event, error) {
	s, err := r.source(x)
	if err != nil {
		return nil, err
	}
	return s.Events(tx, x.ID)
}

// Verdict is an imported execution's verdict, as its source audits it.
func (r *Registry) Verdict(tx *store.Tx, x history.Execution) (audit.Grade, error) {
	s, err := r.source(x)
	if err != nil {
		return "", err
	}
	return s.Verdict(tx, x.ID)
}

// Holds reports whether tx's database may hold an imported execution.
func (r *Registry) Holds(tx *store.Tx) (bool, error) {
	for _, s := range r.Sources() {
		h, ok := s.(Holder)
		if !ok {
			return true, nil
		}
		holds, err := h.Holds(tx)
		if err != nil || holds {
			return holds, err
		}
	}
	return false, nil
}

// Absorbed reports whether execution id shows within another execution
// (Absorber), and so is not folded on its own in a walk over all.
func (r *Registry) Absorbed(tx *store.Tx, id string) bool {
	for _, s := range r.Sources() {
		if a, ok := s.(Absorber); ok && a.Absorbs(tx, id) {
			return true
		}
	}
	return false
}

// Units is what an imported execution of a format is read from, and what
// stands before an attempt's reference (Counter).
func (r *Registry) Units(format string) (unit, ref string) {
	if s, ok := r.Lookup(format); ok {
		if c, ok := s.(Counter); ok {
			return c.Units()
		}
	}
	return "events", ""
}

// Exporter is the source of a format that writes executions.
func (r *Registry) Exporter(format string) (Exporter, error) {
	s, ok := r.Lookup(format)
	if !ok {
		return nil, fmt.Errorf("no %s source in this retrylab to export with", format)
	}
	e, ok := s.(Exporter)
	if !ok {
		return nil, fmt.Errorf("the %s source does not export", format)
	}
	return e, nil
}
