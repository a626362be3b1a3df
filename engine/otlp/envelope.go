package otlp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// Other systems hand out traces as OTLP in an envelope of their own
// (Tempo's {"batches": ...} and {"trace": ...}, Jaeger's API v3
// {"result": ...}) or in a model of their own (Jaeger's UI JSON). Their
// sources (engine/tempo, engine/jaeger) decode the file and give the
// spans to the OTLP importer through ImportWith: the executions are
// stored as imported OTLP, and read back through this package's Source.

// Decoder decodes a whole file's bytes (gzip undone) and calls fn with
// its spans, a batch at a time. Its errors name the line and the span
// where they can, not the file.
type Decoder func(data []byte, fn func(Batch) error) error

// ImportWith imports a file of another system's format into db, as
// ImportReader does OTLP: r is read whole (gzip-compressed or not; the
// file at name when r is nil) and decode turns it into spans; format
// names it in the result ("Tempo JSON"). A failed import leaves nothing
// behind, and its error names the file.
func ImportWith(db *store.DB, name string, r io.Reader, format Format, decode Decoder) (FileResult, error) {
	read := func(fn func(Batch) error) (Format, error) {
		src := r
		if src == nil {
			f, err := os.Open(name)
			if err != nil {
				return format, err
			}
			defer f.Close()
			src = f
		}
		data, err := readWhole(src)
		if err == nil {
			err = decode(data, fn)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return format, err
	}
	return importWith(db, name, read, defaultLimits)
}

// readWhole reads a document whole, gzip undone, up to MaxDocument.
func readWhole(r io.Reader) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		return readAll(zr)
	}
	return readAll(br)
}

// DecodeEnvelope decodes doc, an OTLP/JSON document (TracesData) that
// starts on line firstLine of its file, and calls fn with its spans.
// renames are the keys another system writes for OTLP's ("batches" for
// "resourceSpans"); OTLP's own older names (instrumentationLibrarySpans,
// instrumentationLibrary) and ids in base64 (protobuf's JSON mapping, as
// Tempo writes them) are read too. Errors say "not <format>" and name the
// line and the span.
func DecodeEnvelope(doc []byte, firstLine int, format Format, renames map[string]string, fn func(Batch) error) error {
	doc, spanLines := rewriteJSON(doc, firstLine, renames)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
	if err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		line := 0
		if cutShort(doc) {
			msg = "the JSON ends early (cut short?)"
		} else if at, what, ok := typeFault(doc); ok {
			msg, line = what, firstLine-1+at
		}
		return atLine(line, fmt.Errorf("not %s: %s", format, msg))
	}
	spans, err := Spans(td)
	if err == nil {
		err = fn(Batch{Spans: spans})
	}
	return SpanLine(err, spanLines)
}

// SpanLine puts the line of the span an error names (a SpanError) before
// it, from lines (span id in hex to the line its span starts on).
func SpanLine(err error, lines map[string]int) error {
	var se *SpanError
	if errors.As(err, &se) {
		if line, ok := lines[se.SpanID]; ok {
			return atLine(line, err)
		}
	}
	return err
}

// legacyNames are OTLP/JSON's names before scopes (v0.18), which Tempo's
// API and older exporters still write.
var legacyNames = map[string]string{
	"instrumentationLibrarySpans": "scopeSpans",
	"instrumentationLibrary":      "scope",
}

// rewriteJSON renames doc's keys (legacyNames and renames), writes the
// ids given in base64 in hex, and keeps every new line where it was, so
// that a line of the result is the same line of the file (firstLine is
// doc's first). It also says on which line each span's id is, by the id
// in hex. doc is taken to be valid JSON; what is not is copied as it is.
func rewriteJSON(doc []byte, firstLine int, renames map[string]string) ([]byte, map[string]int) {
	out := make([]byte, 0, len(doc)+len(doc)/16)
	spanLines := map[string]int{}
	line := firstLine
	var open []string // the key of each open container; "" for an array's element
	key := ""         // the key whose value comes next
	for i := 0; i < len(doc); {
		c := doc[i]
		switch c {
		case '"':
			end := stringEnd(doc, i)
			s := doc[i:end]
			j := end
			for j < len(doc) && (doc[j] == ' ' || doc[j] == '\t' || doc[j] == '\r' || doc[j] == '\n') {
				j++
			}
			if j < len(doc) && doc[j] == ':' {
				key = string(s[1 : len(s)-1])
				if to, ok := renames[key]; ok {
					s = []byte(`"` + to + `"`)
				} else if to, ok := legacyNames[key]; ok {
					s = []byte(`"` + to + `"`)
				}
			} else if isIDKey(key) {
				if h, ok := base64ID(s[1 : len(s)-1]); ok {
					s = []byte(`"` + h + `"`)
				}
				if key == "spanId" && len(open) >= 2 && open[len(open)-1] == "" && open[len(open)-2] == "spans" {
					id := strings.ToLower(string(s[1 : len(s)-1]))
					if _, seen := spanLines[id]; !seen {
						spanLines[id] = line
					}
				}
			}
			out = append(out, s...)
			i = end
			continue
		case '{', '[':
			open = append(open, key)
			key = ""
		case '}', ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			key = ""
		case ',':
			key = ""
		case '\n':
			line++
		}
		out = append(out, c)
		i++
	}
	return out, spanLines
}

// stringEnd is the index just past the JSON string that starts at doc[i]
// (a quote), or len(doc) for one that does not end.
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

func isIDKey(key string) bool {
	return key == "traceId" || key == "spanId" || key == "parentSpanId"
}

// base64ID is an id written in base64 (24 characters for a trace id's 16
// bytes, 12 for a span id's 8), in hex; hex ids are never of those
// lengths.
func base64ID(s []byte) (string, bool) {
	if len(s) != 24 && len(s) != 12 {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(string(s))
	if err != nil || (len(b) != 16 && len(b) != 8) {
		return "", false
	}
	return hex.EncodeToString(b), true
}

// PeekKeys are the keys of the JSON object br's stream starts with
// (gzip-compressed or not), as far as what br can peek holds them (its
// buffer should be imports.SniffBuffer), without reading anything: how
// a source of an enveloped format tells its files.
func PeekKeys(br *bufio.Reader) []string {
	head, _ := br.Peek(br.Size())
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return nil
		}
		head, _ = io.ReadAll(io.LimitReader(zr, int64(br.Size()))) // a cut stream ends early: what came is enough
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		k, ok := tok.(string)
		if !ok {
			break
		}
		keys = append(keys, k)
		if err := skipValue(dec); err != nil {
			break
		}
	}
	return keys
}

// skipValue reads the next value of dec without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// Member is the value of one top-level object's key in a document: its
// bytes and the line of the document it starts on.
type Member struct {
	Value []byte
	Line  int
}

// Members are the values of key in each of the JSON objects doc holds
// one after another (one, or a stream of them as a gRPC gateway writes
// it); an object without key has none. doc must be valid JSON values.
func Members(doc []byte, key string) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var out []Member
	for dec.More() {
		if tok, err := dec.Token(); err != nil {
			return nil, err
		} else if tok != json.Delim('{') {
			return nil, fmt.Errorf("line %d: a JSON object was expected", lineAt(doc, dec.InputOffset()))
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if tok != key {
				if err := skipValue(dec); err != nil {
					return nil, err
				}
				continue
			}
			start := int(dec.InputOffset())
			for start < len(doc) && (doc[start] == ':' || doc[start] == ' ' || doc[start] == '\t' || doc[start] == '\r' || doc[start] == '\n') {
				start++
			}
			if err := skipValue(dec); err != nil {
				return nil, err
			}
			end := int(dec.InputOffset())
			out = append(out, Member{Value: doc[start:end], Line: lineAt(doc, int64(start))})
		}
		if _, err := dec.Token(); err != nil { // the object's end
			return nil, err
		}
	}
	return out, nil
}

// lineAt is the line of doc byte offset off is on.
func lineAt(doc []byte, off int64) int {
	return 1 + bytes.Count(doc[:min(off, int64(len(doc)))], []byte{'\n'})
}

// SyntaxFault says what is wrong with doc when it is not JSON (one value,
// or several one after another, as a stream), with its line ("line 3: not
// Tempo JSON: invalid character ..."), or nil.
func SyntaxFault(doc []byte, format Format) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	for n := 0; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return errors.New("empty file: no spans")
			}
			return nil
		}
		if err == nil {
			continue
		}
		var syn *json.SyntaxError
		switch {
		case cutShort(doc) || errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("not %s: the JSON ends early (cut short?)", format)
		case errors.As(err, &syn):
			return atLine(lineAt(doc, syn.Offset), fmt.Errorf("not %s: %s", format, syn.Error()))
		}
		return fmt.Errorf("not %s: %w", format, err)
	}
}

// StoredAsOTLP is embedded by a source whose imports are stored as
// OTLP's (Tempo, Jaeger: OTLP in another envelope, or mapped to it): the
// events and the verdict of what it imported are OTLP's.
type StoredAsOTLP struct{}

// Events are OTLP's (Source.Events).
func (StoredAsOTLP) Events(tx *store.Tx, id string) ([]trace.Event, error) {
	return Source{}.Events(tx, id)
}

// Verdict is OTLP's (Source.Verdict).
func (StoredAsOTLP) Verdict(tx *store.Tx, id string) (audit.Grade, error) {
	return Source{}.Verdict(tx, id)
}
