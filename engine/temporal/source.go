package temporal

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

// Source is Temporal workflow histories as a source of imported
// executions (engine/imports).
type Source struct{}

var (
	_ imports.Source   = Source{}
	_ imports.Holder   = Source{}
	_ imports.Absorber = Source{}
)

// Format is ImportedFormat.
func (Source) Format() string { return ImportedFormat }

// Sniff is SniffReader.
func (Source) Sniff(br *bufio.Reader) bool { return SniffReader(br) }

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

// Events is LoadEvents.
func (Source) Events(tx *store.Tx, id string) ([]trace.Event, error) { return LoadEvents(tx, id) }

// Verdict is Verdict.
func (Source) Verdict(tx *store.Tx, id string) (audit.Grade, error) { return Verdict(tx, id) }

// Holds reports whether the database holds any imported workflow run.
func (Source) Holds(tx *store.Tx) (bool, error) {
	holds := false
	err := tx.Scan(BucketRuns, nil, false, func(_, _ []byte) bool { holds = true; return false })
	return holds, err
}

// Absorbs is MergedSpans: an OTLP execution of the interceptor's spans
// shows in its workflow's execution.
func (Source) Absorbs(tx *store.Tx, id string) bool { return MergedSpans(tx, id) }

// Result is what the import did, in words: "history JSON, 12 events of
// run R imported", and the execution.
func (r FileResult) Result() imports.Result {
	s := fmt.Sprintf("%s, %s of run %s imported", r.Shape, plural.Count(r.Events, "event"), r.RunID)
	if r.Repeated > 0 {
		s += fmt.Sprintf(", %d already there", r.Repeated)
	}
	res := imports.Result{Format: ImportedFormat, Summary: s}
	if r.Execution != "" {
		res.Executions = []string{r.Execution}
	}
	return res
}
