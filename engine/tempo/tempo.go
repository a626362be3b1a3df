// Package tempo imports traces downloaded from Grafana Tempo's API: the
// trace-by-id JSON of API v1 ({"batches": [...]}, each batch a
// ResourceSpans, with the scopes under their older name
// instrumentationLibrarySpans or the current scopeSpans, ids in base64 or
// hex) and of API v2 (tempopb.TraceByIDResponse as Tempo's jsonpb writes
// it: {"trace": {"resourceSpans": [...]}, "metrics": {...}}, with
// "status": "PARTIAL" and a "message" when Tempo cut the trace short).
// Both are OTLP in another envelope: this package unwraps them and hands
// the spans to the OTLP importer (engine/otlp), so the executions are
// stored, read back and audited as imported OTLP.
package tempo

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/retrylab/retrylab/engine/otlp"
)

// Format names the source in the registry; the executions it imports are
// otlp.ImportedFormat's.
const Format = "tempo"

// FileFormat is what the import's summary calls a Tempo file.
const FileFormat otlp.Format = "Tempo JSON"

// Source is Tempo's trace JSON as a source of imported executions: a
// top-level "batches" (API v1) or "trace" (API v2) key. A trace Tempo
// answered as partial is imported as far as it goes, and the summary says
// so with Tempo's message.
func Source() otlp.EnvelopeSource {
	return otlp.EnvelopeSource{Name: Format, Keys: []string{"batches", "trace"}, Default: FileFormat,
		Decode: func(data []byte, fn func(otlp.Batch) error) (otlp.Format, string, error) {
			partial, err := decode(data, fn)
			return FileFormat, partial, err
		}}
}

// renames are Tempo's keys for OTLP's.
var renames = map[string]string{"batches": "resourceSpans"}

// Decode decodes a Tempo trace download and calls fn with its spans.
// Errors name the line, and the span where there is one.
func Decode(data []byte, fn func(otlp.Batch) error) error {
	_, err := decode(data, fn)
	return err
}

// decode is Decode, and says when an API v2 answer is marked partial:
// "Tempo says the trace is partial: MESSAGE".
func decode(data []byte, fn func(otlp.Batch) error) (partial string, err error) {
	if err := otlp.SyntaxFault(data, FileFormat); err != nil {
		return "", err
	}
	traces, err := otlp.Members(data, "trace")
	if err != nil {
		return "", fmt.Errorf("not %s: %w", FileFormat, err)
	}
	if len(traces) == 0 { // API v1: the document is the trace
		batches, err := otlp.Members(data, "batches")
		if err != nil {
			return "", fmt.Errorf("not %s: %w", FileFormat, err)
		}
		if len(batches) == 0 {
			return "", errors.New("no spans in this Tempo file (no \"batches\" or \"trace\")")
		}
		return "", otlp.DecodeEnvelope(data, 1, FileFormat, renames, fn)
	}
	for _, t := range traces {
		if string(t.Value) == "null" {
			continue // a trace Tempo did not find
		}
		if err := otlp.DecodeEnvelope(t.Value, t.Line, FileFormat, renames, fn); err != nil {
			return "", err
		}
	}
	return partialStatus(data)
}

// partialStatus reads API v2's status: tempopb.PartialStatus, COMPLETE (0,
// which jsonpb leaves out) or PARTIAL (1), by name or number, with the
// message Tempo gives why. Any other value is taken as complete.
func partialStatus(data []byte) (string, error) {
	statuses, err := otlp.Members(data, "status")
	if err != nil {
		return "", fmt.Errorf("not %s: %w", FileFormat, err)
	}
	partial := false
	for _, s := range statuses {
		switch strings.TrimSpace(string(s.Value)) {
		case `"PARTIAL"`, "1":
			partial = true
		}
	}
	if !partial {
		return "", nil
	}
	why := "Tempo says the trace is partial"
	messages, err := otlp.Members(data, "message")
	if err != nil {
		return "", fmt.Errorf("not %s: %w", FileFormat, err)
	}
	for _, m := range messages {
		var text string
		if json.Unmarshal(m.Value, &text) == nil && strings.TrimSpace(text) != "" {
			why += ": " + strings.Join(strings.Fields(text), " ") // one line
		}
	}
	return why, nil
}
