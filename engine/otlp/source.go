package otlp

import (
	"bufio"
	"fmt"
	"io"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

// Source is OpenTelemetry traces as a source of imported executions
// (engine/imports): files and streams of OTLP in any of its encodings,
// and, as an Exporter, 'retrylab export --otlp'.
type Source struct{}

var (
	_ imports.Source   = Source{}
	_ imports.Holder   = Source{}
	_ imports.Counter  = Source{}
	_ imports.Exporter = Source{}
)

// Format is ImportedFormat.
func (Source) Format() string { return ImportedFormat }

// Sniff takes any stream: OTLP has encodings (protobuf) that cannot be
// told from their first bytes, and its importer says what is wrong with a
// file that is none of them. Register it after the sources that can tell.
func (Source) Sniff(*bufio.Reader) bool { return true }

// ImportFile is ImportFile, its result in words.
func (Source) ImportFile(db *store.DB, path string) (imports.Result, error) {
	res, err := ImportFile(db, path)
	return res.Result(), err
}

// Import is ImportReader, its result in words.
func (Source) Import(db *store.DB, name string, r io.Reader) (imports.Result, error) {
	res, err := ImportReader(db, name, r)
	return res.Result(), err
}

// Events is an imported execution's spans, translated.
func (Source) Events(tx *store.Tx, id string) ([]trace.Event, error) {
	spans, err := Load(tx, id)
	if err != nil {
		return nil, err
	}
	return Events(spans), nil
}

// Verdict is Verdict.
func (Source) Verdict(tx *store.Tx, id string) (audit.Grade, error) { return Verdict(tx, id) }

// Holds reports whether the database holds any imported span.
func (Source) Holds(tx *store.Tx) (bool, error) {
	holds := false
	err := tx.Scan(BucketIndex, nil, false, func(_, _ []byte) bool { holds = true; return false })
	return holds, err
}

// Units: an execution is read from spans, an attempt is a span.
func (Source) Units() (unit, ref string) { return "spans", "span " }

// NewWriter is NewJSONWriter.
func (Source) NewWriter(w io.Writer, version string) imports.Writer { return NewJSONWriter(w, version) }

// NewLinesWriter is NewJSONLinesWriter.
func (Source) NewLinesWriter(w io.Writer, version string) imports.Writer {
	return NewJSONLinesWriter(w, version)
}

// Result is what the import did, in words: "OTLP/JSON, 3 spans imported,
// 1 already there", and the executions.
func (r FileResult) Result() imports.Result {
	s := fmt.Sprintf("%s, %s imported", r.Format, plural.Count(r.Spans, "span"))
	if r.Repeated > 0 {
		s += fmt.Sprintf(", %d already there", r.Repeated)
	}
	return imports.Result{Format: ImportedFormat, Summary: s, Executions: r.Executions}
}
