// Package jaeger imports traces downloaded from Jaeger: the JSON of its
// UI's "Download" and of its query API v1 (/api/traces/{id}:
// {"data": [{"traceID", "spans", "processes"}]}), mapped to OpenTelemetry
// spans as Jaeger documents its model (tags, process tags, references,
// logs), and the JSON of its API v2/v3 (/api/v3/traces/{id}:
// {"result": {...}}, OTLP in an envelope, one or a stream of them). The
// spans go to the OTLP importer (engine/otlp), so the executions are
// stored, read back and audited as imported OTLP.
//
// The mapping is written here against Jaeger's documented JSON model
// rather than through the collector-contrib Jaeger translator: that
// translator reads Jaeger's protobuf model (not this JSON, which would
// still need decoding into it) and pulls gogo/protobuf, Apache Thrift,
// jaeger-idl and collector-contrib internals into the build.
package jaeger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

// Format names the source in the registry; the executions it imports are
// otlp.ImportedFormat's.
const Format = "jaeger"

// The formats the import's summary names.
const (
	FormatUI otlp.Format = "Jaeger JSON"
	FormatV3 otlp.Format = "Jaeger API v3 JSON"
)

// Source is Jaeger's trace JSON as a source of imported executions.
type Source struct {
	// What it imports is stored as OTLP's, and read back as OTLP's.
	otlp.StoredAsOTLP
}

var _ imports.Source = Source{}

// Format is Format.
func (Source) Format() string { return Format }

// Sniff takes a JSON object with a top-level "data" key whose start
// mentions spans (API v1, the UI's download), or a "result" one (API
// v2/v3).
func (Source) Sniff(br *bufio.Reader) bool {
	keys := otlp.PeekKeys(br)
	return slices.Contains(keys, "data") || slices.Contains(keys, "result")
}

// ImportFile imports a Jaeger download.
func (s Source) ImportFile(db *store.DB, path string) (imports.Result, error) {
	return s.Import(db, path, nil)
}

// Import imports a Jaeger download read once from r (the file at name
// when r is nil).
func (Source) Import(db *store.DB, name string, r io.Reader) (imports.Result, error) {
	format := FormatUI
	res, err := otlp.ImportWith(db, name, r, format, func(data []byte, fn func(otlp.Batch) error) error {
		f, err := Decode(data, fn)
		format = f
		return err
	})
	res.Format = format
	out := res.Result()
	out.Format = Format
	return out, err
}

// Decode decodes a Jaeger trace download, says which of Jaeger's formats
// it is, and calls fn with its spans, a trace at a time. Errors name the
// line, and the span where there is one.
func Decode(data []byte, fn func(otlp.Batch) error) (otlp.Format, error) {
	if err := otlp.SyntaxFault(data, FormatUI); err != nil {
		return FormatUI, err
	}
	results, err := otlp.Members(data, "result")
	if err != nil {
		return FormatV3, fmt.Errorf("not %s: %w", FormatV3, err)
	}
	if len(results) > 0 {
		for _, r := range results {
			if err := otlp.DecodeEnvelope(r.Value, r.Line, FormatV3, nil, fn); err != nil {
				return FormatV3, err
			}
		}
		return FormatV3, nil
	}
	data2, err := otlp.Members(data, "data")
	if err != nil {
		return FormatUI, fmt.Errorf("not %s: %w", FormatUI, err)
	}
	if len(data2) == 0 {
		return FormatUI, errors.New(`no spans in this Jaeger file (no "data" or "result")`)
	}
	return FormatUI, decodeUI(data, fn)
}
