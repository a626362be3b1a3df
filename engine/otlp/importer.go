package otlp

import (
	"fmt"

	"github.com/retrylab/retrylab/store"
)

// FileResult is what importing one file did.
type FileResult struct {
	Path   string
	Format Format
	Stats
}

// ImportFile decodes path whole, then stores its spans in one transaction:
// a file that fails to decode or to store leaves nothing behind. The error
// names the file, the line (JSON Lines) and the span where it can.
func ImportFile(db *store.DB, path string) (FileResult, error) {
	res := FileResult{Path: path}
	var spans []Span
	format, err := ReadFile(path, func(b Batch) error {
		spans = append(spans, b.Spans...)
		return nil
	})
	res.Format = format
	if err != nil {
		return res, err
	}
	if len(spans) == 0 {
		return res, fmt.Errorf("%s: no spans in this %s file (no resourceSpans)", path, format)
	}
	err = db.Update(func(tx *store.Tx) error {
		st, err := Save(tx, spans, path)
		res.Stats = st
		return err
	})
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// LoadSpans reads an imported execution's spans.
func LoadSpans(db *store.DB, exec string) ([]Span, error) {
	var spans []Span
	err := db.View(func(tx *store.Tx) error {
		var err error
		spans, err = Load(tx, exec)
		return err
	})
	return spans, err
}
