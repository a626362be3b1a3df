package otlp

import (
	"bufio"
	"io"
	"slices"

	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/store"
)

// EnvelopeSource is a source of traces that are OTLP in another system's
// envelope (Tempo's trace JSON, Jaeger's): a registry entry made of its
// name, the top-level keys that mark its files and its decoder. What it
// imports is stored, read back and audited as imported OTLP.
type EnvelopeSource struct {
	StoredAsOTLP
	// Name names the source in the registry ("tempo").
	Name string
	// Keys are the top-level JSON keys, any of which marks its files.
	Keys []string
	// Default is what the import's summary calls its files ("Tempo JSON")
	// when Decode does not say.
	Default Format
	// Decode decodes a whole file (gzip undone) and calls fn with its
	// spans, a batch at a time. It says which of the system's formats the
	// file is ("" for Default) and a note the import's summary adds ("" for
	// none). Its errors name the line and the span where they can.
	Decode func(data []byte, fn func(Batch) error) (format Format, note string, err error)
}

var _ imports.Source = EnvelopeSource{}

// Format is the source's name in the registry.
func (e EnvelopeSource) Format() string { return e.Name }

// Sniff takes a JSON object with one of the source's top-level keys.
func (e EnvelopeSource) Sniff(br *bufio.Reader) bool {
	keys := PeekKeys(br)
	return slices.ContainsFunc(e.Keys, func(k string) bool { return slices.Contains(keys, k) })
}

// ImportFile imports a file of the source's.
func (e EnvelopeSource) ImportFile(db *store.DB, path string) (imports.Result, error) {
	return e.Import(db, path, nil)
}

// Import imports a file of the source's read once from r (the file at
// name when r is nil).
func (e EnvelopeSource) Import(db *store.DB, name string, r io.Reader) (imports.Result, error) {
	format, note := e.Default, ""
	res, err := ImportWith(db, name, r, e.Default, func(data []byte, fn func(Batch) error) error {
		f, n, err := e.Decode(data, fn)
		if f != "" {
			format = f
		}
		note = n
		return err
	})
	res.Format = format
	out := res.Result()
	out.Format = e.Name
	if err == nil && note != "" {
		out.Summary += "; " + note
	}
	return out, err
}
