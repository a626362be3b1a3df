package otlp

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Where an OTLP/JSON document holds a value of the wrong JSON type (or an
// id that is not hex of its length, an enum name OTLP has not), pdata's
// decoder says so in its parser's words ("ReadArray: expect [ or , or ] or
// n, but found {, error found in #10 byte of ..."). typeFault walks the
// document again, once decoding has failed, against the shape OTLP/JSON
// gives each field, and names the first such value by its line, its span
// (and event) and its field.

// typeFault finds the first value of doc whose JSON type (or form)
// OTLP/JSON does not allow there, and says on which line of doc it is and
// what it is, in one line; ok is false when there is none (the fault is
// elsewhere: broken syntax, a value pdata refuses for a reason of its own).
func typeFault(doc []byte) (line int, what string, ok bool) {
	if !json.Valid(doc) {
		return 0, "", false
	}
	w := &shapeWalker{dec: json.NewDecoder(bytes.NewReader(doc))}
	w.dec.UseNumber()
	err := w.value(tracesDataShape)
	var f *shapeFault
	if !errors.As(err, &f) {
		return 0, "", false
	}
	line = 1 + bytes.Count(doc[:min(f.offset, int64(len(doc)))], []byte{'\n'})
	return line, fmt.Sprintf("%s%s: expected %s, found %s", where(doc, f.path), fieldPath(f.path), f.want, f.got), true
}

// shape is what OTLP/JSON allows at a place in the document.
type shape struct {
	kind   shapeKind
	names  []string          // an enum's names
	hexLen int               // an id's length in hex digits
	fields map[string]*shape // an object's known fields (others are skipped)
	elem   *shape            // an array's elements
}

type shapeKind int

const (
	anyJSON shapeKind = iota
	objectOf
	arrayOf
	stringValue
	numberValue   // a number, or a string of one (int64 fields)
	enumValue     // a number or a name
	booleanValue  // true or false
	doubleValue   // a number, or "NaN", "Infinity" ...
	bytesOrString // a string
	idValue       // hexLen hex digits, or "" (no id)
)

func (k shapeKind) String() string {
	switch k {
	case objectOf:
		return "an object"
	case arrayOf:
		return "an array"
	case stringValue, bytesOrString:
		return "a string"
	case idValue:
		return "an id in hex"
	case numberValue, doubleValue:
		return "a number"
	case enumValue:
		return "a number or a name"
	case booleanValue:
		return "true or false"
	}
	return "a value"
}

// The shapes of OTLP/JSON's messages (opentelemetry-proto's trace/v1).
var (
	traceIDShape = &shape{kind: idValue, hexLen: 32}
	spanIDShape  = &shape{kind: idValue, hexLen: 16}
	kindShape    = &shape{kind: enumValue, names: []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
		"SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}}
	codeShape      = &shape{kind: enumValue, names: []string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}}
	anyValueShape  = &shape{kind: objectOf}
	keyValueShape  = &shape{kind: objectOf, fields: map[string]*shape{"key": {kind: stringValue}, "value": anyValueShape}}
	keyValuesShape = &shape{kind: arrayOf, elem: keyValueShape}
	eventShape     = &shape{kind: objectOf, fields: map[string]*shape{"timeUnixNano": {kind: numberValue}, "name": {kind: stringValue},
		"attributes": keyValuesShape, "droppedAttributesCount": {kind: numberValue}}}
	linkShape = &shape{kind: objectOf, fields: map[string]*shape{"traceId": traceIDShape, "spanId": spanIDShape,
		"traceState": {kind: stringValue}, "attributes": keyValuesShape, "droppedAttributesCount": {kind: numberValue}, "flags": {kind: numberValue}}}
	spanShape = &shape{kind: objectOf, fields: map[string]*shape{
		"traceId": traceIDShape, "spanId": spanIDShape, "parentSpanId": spanIDShape,
		"traceState": {kind: stringValue}, "name": {kind: stringValue}, "kind": kindShape, "flags": {kind: numberValue},
		"startTimeUnixNano": {kind: numberValue}, "endTimeUnixNano": {kind: numberValue},
		"attributes": keyValuesShape, "droppedAttributesCount": {kind: numberValue},
		"events": {kind: arrayOf, elem: eventShape}, "droppedEventsCount": {kind: numberValue},
		"links": {kind: arrayOf, elem: linkShape}, "droppedLinksCount": {kind: numberValue},
		"status": {kind: objectOf, fields: map[string]*shape{"code": codeShape, "message": {kind: stringValue}}},
	}}
	scopeShape = &shape{kind: objectOf, fields: map[string]*shape{"name": {kind: stringValue}, "version": {kind: stringValue},
		"attributes": keyValuesShape, "droppedAttributesCount": {kind: numberValue}}}
	scopeSpansShape = &shape{kind: objectOf, fields: map[string]*shape{"scope": scopeShape, "instrumentationLibrary": scopeShape,
		"spans": {kind: arrayOf, elem: spanShape}, "schemaUrl": {kind: stringValue}}}
	resourceSpansShape = &shape{kind: objectOf, fields: map[string]*shape{
		"resource":                    {kind: objectOf, fields: map[string]*shape{"attributes": keyValuesShape, "droppedAttributesCount": {kind: numberValue}}},
		"scopeSpans":                  {kind: arrayOf, elem: scopeSpansShape},
		"instrumentationLibrarySpans": {kind: arrayOf, elem: scopeSpansShape},
		"schemaUrl":                   {kind: stringValue},
	}}
	tracesDataShape = &shape{kind: objectOf, fields: map[string]*shape{"resourceSpans": {kind: arrayOf, elem: resourceSpansShape}}}
)

func init() {
	anyValueShape.fields = map[string]*shape{
		"stringValue": {kind: stringValue}, "boolValue": {kind: booleanValue}, "intValue": {kind: numberValue},
		"doubleValue": {kind: doubleValue}, "bytesValue": {kind: bytesOrString},
		"arrayValue":  {kind: objectOf, fields: map[string]*shape{"values": {kind: arrayOf, elem: anyValueShape}}},
		"kvlistValue": {kind: objectOf, fields: map[string]*shape{"values": keyValuesShape}},
	}
}

// shapeWalker reads a document token by token, keeping the path to where
// it is: object keys and array indexes.
type shapeWalker struct {
	dec  *json.Decoder
	path []any
}

// shapeFault is a value of the wrong type: where it is and what it is.
type shapeFault struct {
	offset    int64
	path      []any
	want, got string
}

func (f *shapeFault) Error() string { return "expected " + f.want + ", found " + f.got }

func (w *shapeWalker) fault(want string, tok json.Token) error {
	return &shapeFault{offset: w.dec.InputOffset(), path: append([]any(nil), w.path...), want: want, got: tokenKind(tok)}
}

// value reads one value, which must have shape s.
func (w *shapeWalker) value(s *shape) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil // null is the field's default
	}
	switch s.kind {
	case anyJSON:
		return w.skip(tok)
	case objectOf:
		if tok != json.Delim('{') {
			return w.fault(s.kind.String(), tok)
		}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			fs := s.fields[key]
			if fs == nil {
				fs = &shape{kind: anyJSON} // a field OTLP does not name: pdata skips it
			}
			w.path = append(w.path, key)
			if err := w.value(fs); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, err = w.dec.Token() // }
		return err
	case arrayOf:
		if tok != json.Delim('[') {
			return w.fault(s.kind.String(), tok)
		}
		for i := 0; w.dec.More(); i++ {
			w.path = append(w.path, i)
			if err := w.value(s.elem); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, err = w.dec.Token() // ]
		return err
	case stringValue, bytesOrString:
		if _, ok := tok.(string); !ok {
			return w.fault(s.kind.String(), tok)
		}
	case numberValue, doubleValue:
		switch v := tok.(type) {
		case json.Number:
		case string:
			if _, err := strconv.ParseFloat(v, 64); err != nil && s.kind == numberValue {
				return w.fault("a number (or a string of digits)", tok)
			}
		default:
			return w.fault(s.kind.String(), tok)
		}
	case enumValue:
		switch v := tok.(type) {
		case json.Number:
		case string:
			if !slices.Contains(s.names, v) {
				return w.fault("a number or one of "+strings.Join(s.names, ", "), tok)
			}
		default:
			return w.fault(s.kind.String(), tok)
		}
	case idValue:
		v, ok := tok.(string)
		if !ok {
			return w.fault(s.kind.String(), tok)
		}
		if _, err := hex.DecodeString(v); v != "" && (err != nil || len(v) != s.hexLen) {
			return w.fault(fmt.Sprintf("%d hex digits", s.hexLen), tok)
		}
	case booleanValue:
		if _, ok := tok.(bool); !ok {
			return w.fault(s.kind.String(), tok)
		}
	}
	return nil
}

// skip reads past the rest of a value whose first token is tok.
func (w *shapeWalker) skip(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// tokenKind says what a token is, in words.
func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		if len(v) > 20 {
			v = v[:20] + "…"
		}
		return "the string " + strconv.Quote(v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return "null"
}

// fieldPath is path as the field's name: the part below the innermost span
// or event, or the whole path when the fault is above any span.
func fieldPath(path []any) string {
	from := 0
	for i := 0; i+1 < len(path); i++ {
		if k, ok := path[i].(string); ok && (k == "spans" || k == "events") {
			if _, ok := path[i+1].(int); ok {
				from = i + 2
			}
		}
	}
	var b strings.Builder
	for _, p := range path[from:] {
		switch v := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		}
	}
	if b.Len() == 0 {
		return "the document"
	}
	return "field " + b.String()
}

// where names the span (and event) the fault is in, from the document
// itself: "span ID ("name"), " or "span #N, " when the span has no readable
// id; "" above any span.
func where(doc []byte, path []any) string {
	var out strings.Builder
	raw := json.RawMessage(doc)
	for i := 0; i < len(path); i++ {
		raw = child(raw, path[i])
		if raw == nil {
			break
		}
		k, ok := path[i].(string)
		if !ok || (k != "spans" && k != "events") || i+1 >= len(path) {
			continue
		}
		n, ok := path[i+1].(int)
		if !ok {
			continue
		}
		i++
		raw = child(raw, n)
		var named struct {
			SpanID any `json:"spanId"`
			Name   any `json:"name"`
		}
		_ = json.Unmarshal(raw, &named)
		id, _ := named.SpanID.(string)
		name, _ := named.Name.(string)
		switch {
		case k == "events" && name != "":
			fmt.Fprintf(&out, "event %q, ", name)
		case k == "events":
			fmt.Fprintf(&out, "event #%d, ", n+1)
		case id != "":
			fmt.Fprintf(&out, "span %s", id)
			if name != "" {
				fmt.Fprintf(&out, " (%q)", name)
			}
			out.WriteString(", ")
		default:
			fmt.Fprintf(&out, "span #%d, ", n+1)
		}
	}
	return out.String()
}

// child is the value at key (a string) or index (an int) of raw, or nil.
func child(raw json.RawMessage, key any) json.RawMessage {
	switch k := key.(type) {
	case string:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		return m[k]
	case int:
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil || k >= len(a) {
			return nil
		}
		return a[k]
	}
	return nil
}
