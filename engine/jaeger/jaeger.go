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
	"errors"
	"fmt"

	"github.com/retrylab/retrylab/engine/otlp"
)

// Format names the source in the registry; the executions it imports are
// otlp.ImportedFormat's.
const Format = "jaeger"

// The formats the import's summary names.
const (
	FormatUI otlp.Format = "Jaeger JSON"
	FormatV3 otlp.Format = "Jaeger API v3 JSON"
)

// Source is Jaeger's trace JSON as a source of imported executions: a
// top-level "data" key (API v1, the UI's download) or a "result" one (API
// v2/v3).
func Source() otlp.EnvelopeSource {
	return otlp.EnvelopeSource{Name: Format, Keys: []string{"data", "result"}, Default: FormatUI,
		Decode: func(data []byte, fn func(otlp.Batch) error) (otlp.Format, string, error) {
			format, err := Decode(data, fn)
			return format, "", err
		}}
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
