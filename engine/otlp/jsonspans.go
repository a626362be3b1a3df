package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The importer decodes OTLP/JSON straight into Spans when it can, as the
// receivers do protobuf (protospans.go): pdata's decoder builds a
// TracesData of maps and values that Spans then walks and copies once
// again, most of an import's CPU (BENCHMARKS.md, 8g-8j).
//
// decodeJSONSpans is a fast path, not a second decoder of everything
// pdata reads: it takes the OTLP/JSON that SDKs, collectors and pdata
// write (camelCase keys, ids in hex, enums and small integers as numbers,
// 64-bit integers as numbers or strings of digits) and makes exactly the
// Spans that pdata's JSONUnmarshaler followed by Spans makes, the same
// refusal of the first bad span included. Anything else it declines with
// errJSONDecline, as soon as it meets it: a key it does not know (snake
// case, deprecated fields, string indexes; of the keys pdata skips, only
// resourceLogs and resourceMetrics are skipped, once checked), a
// duplicate key, null, an enum written as a name, a number written in a
// form whose reading by json-iterator it does not mirror, an id or bytes
// value with escapes, a lone surrogate, a control character in a string,
// nesting deeper than jsonlimit.MaxDepth, anything after the document,
// invalid JSON, and a document without resource spans. The caller then
// decodes it with pdata, whose answers and error messages stay what they
// were. TestJSONSpansCases, TestJSONSpansMutated and FuzzJSONSpans hold it
// to that.

// errJSONDecline is decodeJSONSpans declining a document: pdata decodes it.
var errJSONDecline = errors.New("otlp/json: not on the fast path")

// jsonDecoded is what decodeJSONSpans made of a document.
type jsonDecoded struct {
	// pieces are the spans converted, in order, up to the first refused:
	// deliverSpans a piece, the last perhaps fewer, as deliverDecoded
	// hands them on (no slice of all of a document's spans, grown and
	// copied as it is filled).
	pieces [][]Span
	// n is how many spans the pieces hold.
	n int
	// count is how many spans the document holds, refused ones and those
	// after them included (pdata's SpanCount).
	count int
	// refused is the first span's refusal (a *SpanError), nil for none.
	refused error
}

// jsonDecoder reads one OTLP/JSON document. Like protoDecoder, it keeps
// the strings it has made, so that a document's repeated keys and values
// are one string.
type jsonDecoder struct {
	jsonWalk
	out   jsonDecoded
	trace traceHex
	keys  map[string]*keyMemo
	names map[string]string
	// esc holds a string's unescaped bytes, kesc an attribute's key's:
	// a KeyValue's key is kept while its value is read, and the other way
	// round.
	esc, kesc []byte
	w         jsonValueText
	attrs     attrReader // a span's or event's attributes, as read
}

// decodeJSONSpans decodes an OTLP/JSON ExportTraceServiceRequest (or
// TracesData) into Spans, or declines it with errJSONDecline. The spans
// keep nothing of doc.
func decodeJSONSpans(doc []byte) (jsonDecoded, error) {
	d := &jsonDecoder{jsonWalk: jsonWalk{doc: doc}, keys: map[string]*keyMemo{}, names: map[string]string{}}
	if err := d.request(); err != nil {
		return jsonDecoded{}, err
	}
	if d.ws(); d.pos != len(d.doc) {
		return jsonDecoded{}, errJSONDecline
	}
	return d.out, nil
}

// once marks bit in seen, declining a key met twice in one object.
func once(seen *uint32, bit uint32) error {
	if *seen&bit != 0 {
		return errJSONDecline
	}
	*seen |= bit
	return nil
}

// stringBytes reads a string's content as json-iterator's ReadString
// makes it, unescaped into *buf when it holds escapes. The bytes are
// valid until *buf is used again.
func (d *jsonDecoder) stringBytes(buf *[]byte) ([]byte, error) {
	raw, escaped, err := d.rawString()
	if err != nil || !escaped {
		return raw, err
	}
	out := (*buf)[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+1:])
			if !ok {
				return nil, errJSONDecline
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// Only a pair makes a rune: json-iterator writes a lone
				// one as U+FFFD, in ways not worth mirroring.
				if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
					return nil, errJSONDecline
				}
				r2, ok := hex4(raw[i+3:])
				if !ok {
					return nil, errJSONDecline
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return nil, errJSONDecline
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, errJSONDecline
		}
	}
	*buf = out
	return out, nil
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// name reads a string kept whole (a span's or event's name, a status
// message, a scope's name), one already made when met before.
func (d *jsonDecoder) name() (string, error) {
	b, err := d.stringBytes(&d.esc)
	if err != nil || len(b) == 0 {
		return "", err
	}
	if s, ok := d.names[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(d.names) < internLimit {
		d.names[s] = s
	}
	return s, nil
}

// skipString reads a string whose value is not kept.
func (d *jsonDecoder) skipString() error {
	_, err := d.stringBytes(&d.esc)
	return err
}

// numberToken reads a number as JSON writes it, strictly: -?(0|[1-9]d*)
// (.d+)?([eE][+-]?d+)?. It says whether it has a fraction or exponent.
func (d *jsonDecoder) numberToken() (tok []byte, integer bool, err error) {
	start := d.pos
	end, integer, ok := numberEnd(d.doc, d.pos)
	if !ok {
		return nil, false, errJSONDecline
	}
	d.pos = end
	return d.doc[start:end], integer, nil
}

// numberEnd scans a JSON number in b from i, returning where it ends.
func numberEnd(b []byte, i int) (end int, integer, ok bool) {
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false, false
		}
		integer = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false, false
		}
		integer = false
	}
	return i, integer, true
}

// uint64Value reads a uint64 (a time) written as a number, or a string
// of digits that strconv.ParseUint reads, as pdata takes either.
func (d *jsonDecoder) uint64Value() (uint64, error) {
	if d.peek() == '"' {
		raw, escaped, err := d.rawString()
		if err != nil || escaped || !allDigits(raw) {
			return 0, errJSONDecline
		}
		v, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return 0, errJSONDecline
		}
		return v, nil
	}
	tok, integer, err := d.numberToken()
	// Up to 19 digits never overflows, in json-iterator's reading or
	// ours.
	if err != nil || !integer || tok[0] == '-' || len(tok) > 19 {
		return 0, errJSONDecline
	}
	var v uint64
	for _, c := range tok {
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// int64Value reads an int64 (an attribute's int) written as a number, or
// a string of digits, perhaps negative.
func (d *jsonDecoder) int64Value() (int64, error) {
	if d.peek() == '"' {
		raw, escaped, err := d.rawString()
		digits := raw
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		if err != nil || escaped || !allDigits(digits) {
			return 0, errJSONDecline
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return 0, errJSONDecline
		}
		return v, nil
	}
	tok, integer, err := d.numberToken()
	if err != nil || !integer || len(tok) > 19 { // 18 digits and a sign
		return 0, errJSONDecline
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return 0, errJSONDecline
	}
	return v, nil
}

// smallInt reads an integer of up to nine digits written as a number (an
// enum, a count or flags), or with str also as a string of digits.
func (d *jsonDecoder) smallInt(str, negative bool) (int32, error) {
	var tok []byte
	if d.peek() == '"' {
		raw, escaped, err := d.rawString()
		if err != nil || escaped || !str || !allDigits(raw) || len(raw) > 9 {
			return 0, errJSONDecline
		}
		tok = raw
	} else {
		var integer bool
		var err error
		tok, integer, err = d.numberToken()
		if err != nil || !integer || (tok[0] == '-' && !negative) || len(tok) > 10 {
			return 0, errJSONDecline
		}
	}
	v, err := strconv.ParseInt(string(tok), 10, 32)
	if err != nil || len(tok) > 9 && tok[0] != '-' {
		return 0, errJSONDecline
	}
	return int32(v), nil
}

// count reads a uint32 whose value is not kept (a dropped count, flags).
func (d *jsonDecoder) count() error {
	_, err := d.smallInt(true, false)
	return err
}

// float64Value reads a double written as a number, or as a string that
// is one or "NaN", "Infinity" or "-Infinity": all as strconv.ParseFloat
// reads them, as json-iterator does (its fast reading of short decimals
// rounds the same).
func (d *jsonDecoder) float64Value() (float64, error) {
	var tok []byte
	if d.peek() == '"' {
		raw, escaped, err := d.rawString()
		if err != nil || escaped {
			return 0, errJSONDecline
		}
		switch string(raw) {
		case "NaN", "Infinity", "-Infinity":
			// What pdata's marshaler writes of a double JSON cannot hold.
		default:
			if end, _, ok := numberEnd(raw, 0); !ok || end != len(raw) {
				return 0, errJSONDecline
			}
		}
		tok = raw
	} else {
		var err error
		if tok, _, err = d.numberToken(); err != nil {
			return 0, err
		}
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, errJSONDecline
	}
	return f, nil
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// boolValue reads true or false.
func (d *jsonDecoder) boolValue() (bool, error) {
	d.ws()
	switch rest := d.doc[d.pos:]; {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.pos += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.pos += 5
		return false, nil
	}
	return false, errJSONDecline
}

// id reads a trace or span id: an empty string, or hex of its length.
func (d *jsonDecoder) id(dst []byte) error {
	raw, escaped, err := d.rawString()
	if err != nil || escaped {
		return errJSONDecline
	}
	switch len(raw) {
	case 0:
		clear(dst)
	case 2 * len(dst):
		if _, err := hex.Decode(dst, raw); err != nil {
			return errJSONDecline
		}
	default:
		return errJSONDecline
	}
	return nil
}

// request reads the document: an object of resourceSpans, perhaps with
// the logs and metrics an exporter wrote beside them (as Google's ADK
// does), which pdata skips and so does it, once checked to be JSON. One
// without resource spans is declined: pdata's path says what it is (logs
// or metrics, or an empty trace document).
func (d *jsonDecoder) request() error {
	var seen uint32
	resources := 0
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "resourceSpans":
			if err = once(&seen, 1); err == nil {
				err = d.array(func() error {
					resources++
					return d.resourceSpans()
				})
			}
		case "resourceLogs":
			if err = once(&seen, 2); err == nil {
				err = d.skipValue()
			}
		case "resourceMetrics":
			if err = once(&seen, 4); err == nil {
				err = d.skipValue()
			}
		default:
			err = errJSONDecline
		}
		return err
	})
	if err == nil && resources == 0 {
		return errJSONDecline
	}
	return err
}

// skipValue reads any JSON value, not kept, as strictly as the rest:
// json-iterator's Skip, more lenient, passes over what it passes.
func (d *jsonDecoder) skipValue() error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skipValue() })
	case c == '[':
		return d.array(d.skipValue)
	case c == '"':
		return d.skipString()
	case c == '-' || c >= '0' && c <= '9':
		_, _, err := d.numberToken()
		return err
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(d.doc)-d.pos >= len(lit) && string(d.doc[d.pos:d.pos+len(lit)]) == lit {
			d.pos += len(lit)
			return nil
		}
	}
	return errJSONDecline
}

// resourceSpans reads a ResourceSpans. Its resource may come after its
// spans: their service is set once it is known.
func (d *jsonDecoder) resourceSpans() error {
	var seen uint32
	service := ""
	first := d.out.n
	// The scopes of one resource share a traceHex, as in eachScope.
	d.trace = traceHex{}
	resourceLate := false
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "resource":
			if err := once(&seen, 1); err != nil {
				return err
			}
			resourceLate = d.out.n > first
			return d.resource(&service)
		case "scopeSpans":
			if err := once(&seen, 2); err != nil {
				return err
			}
			return d.array(func() error { return d.scopeSpans(service) })
		case "schemaUrl":
			if err := once(&seen, 4); err != nil {
				return err
			}
			return d.skipString()
		}
		return errJSONDecline
	})
	if resourceLate {
		for i := first; i < d.out.n; i++ {
			d.out.at(i).Service = service
		}
	}
	return err
}

// resource reads a Resource for its first service.name attribute.
func (d *jsonDecoder) resource(service *string) error {
	var seen uint32
	return d.object(func(key []byte) error {
		switch string(key) {
		case "attributes":
			if err := once(&seen, 1); err != nil {
				return err
			}
			found := false
			return d.array(func() error {
				return d.keyValue(func(k *keyMemo, v jsonValue) {
					if !found && k.key == "service.name" {
						found = true
						*service = d.text(&v, false)
					}
				})
			})
		case "droppedAttributesCount":
			if err := once(&seen, 2); err != nil {
				return err
			}
			return d.count()
		case "entityRefs":
			if err := once(&seen, 4); err != nil {
				return err
			}
			return d.array(d.entityRef)
		}
		return errJSONDecline
	})
}

func (d *jsonDecoder) entityRef() error {
	var seen uint32
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "schemaUrl":
			if err = once(&seen, 1); err == nil {
				err = d.skipString()
			}
		case "type":
			if err = once(&seen, 2); err == nil {
				err = d.skipString()
			}
		case "idKeys":
			if err = once(&seen, 4); err == nil {
				err = d.array(d.skipString)
			}
		case "descriptionKeys":
			if err = once(&seen, 8); err == nil {
				err = d.array(d.skipString)
			}
		default:
			err = errJSONDecline
		}
		return err
	})
}

// scopeSpans reads a ScopeSpans; its scope may come after its spans.
func (d *jsonDecoder) scopeSpans(service string) error {
	var seen uint32
	scope := ""
	first := d.out.n
	scopeLate := false
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "scope":
			if err := once(&seen, 1); err != nil {
				return err
			}
			scopeLate = d.out.n > first
			return d.scope(&scope)
		case "spans":
			if err := once(&seen, 2); err != nil {
				return err
			}
			return d.array(func() error { return d.span(service, scope) })
		case "schemaUrl":
			if err := once(&seen, 4); err != nil {
				return err
			}
			return d.skipString()
		}
		return errJSONDecline
	})
	if scopeLate {
		for i := first; i < d.out.n; i++ {
			d.out.at(i).Scope = scope
		}
	}
	return err
}

// scope reads an InstrumentationScope for its name.
func (d *jsonDecoder) scope(name *string) error {
	var seen uint32
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = once(&seen, 1); err == nil {
				*name, err = d.name()
			}
		case "version":
			if err = once(&seen, 2); err == nil {
				err = d.skipString()
			}
		case "attributes":
			if err = once(&seen, 4); err == nil {
				err = d.array(func() error { return d.keyValue(nil) })
			}
		case "droppedAttributesCount":
			if err = once(&seen, 8); err == nil {
				err = d.count()
			}
		default:
			err = errJSONDecline
		}
		return err
	})
}

// span reads a Span and converts it as convert does, or counts it once a
// span before it was refused.
func (d *jsonDecoder) span(service, scope string) error {
	var (
		seen          uint32
		tid           pcommon.TraceID
		sid, pid      pcommon.SpanID
		start, end    uint64
		kind, code    int32
		name, message string
		attrs         Attrs
		events        []SpanEvent
	)
	d.out.count++
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "traceId":
			if err = once(&seen, 1<<0); err == nil {
				err = d.id(tid[:])
			}
		case "spanId":
			if err = once(&seen, 1<<1); err == nil {
				err = d.id(sid[:])
			}
		case "parentSpanId":
			if err = once(&seen, 1<<2); err == nil {
				err = d.id(pid[:])
			}
		case "traceState":
			if err = once(&seen, 1<<3); err == nil {
				err = d.skipString()
			}
		case "flags":
			if err = once(&seen, 1<<4); err == nil {
				err = d.count()
			}
		case "name":
			if err = once(&seen, 1<<5); err == nil {
				name, err = d.name()
			}
		case "kind":
			if err = once(&seen, 1<<6); err == nil {
				kind, err = d.smallInt(false, true)
			}
		case "startTimeUnixNano":
			if err = once(&seen, 1<<7); err == nil {
				start, err = d.uint64Value()
			}
		case "endTimeUnixNano":
			if err = once(&seen, 1<<8); err == nil {
				end, err = d.uint64Value()
			}
		case "attributes":
			if err = once(&seen, 1<<9); err == nil {
				attrs, err = d.attributes()
			}
		case "droppedAttributesCount":
			if err = once(&seen, 1<<10); err == nil {
				err = d.count()
			}
		case "events":
			if err = once(&seen, 1<<11); err == nil {
				err = d.array(func() error {
					e, err := d.event()
					events = append(events, e)
					return err
				})
			}
		case "droppedEventsCount":
			if err = once(&seen, 1<<12); err == nil {
				err = d.count()
			}
		case "links":
			if err = once(&seen, 1<<13); err == nil {
				err = d.array(d.link)
			}
		case "droppedLinksCount":
			if err = once(&seen, 1<<14); err == nil {
				err = d.count()
			}
		case "status":
			if err = once(&seen, 1<<15); err == nil {
				err = d.status(&message, &code)
			}
		default:
			err = errJSONDecline
		}
		return err
	})
	if err != nil || d.out.refused != nil {
		return err
	}
	sp := Span{Name: name, Service: service, Scope: scope, Start: int64(start), End: int64(end)}
	if err := d.trace.check(&sp, tid, sid, pid); err != nil {
		d.out.refused = err
		return nil
	}
	sp.Status = statusName(ptrace.StatusCode(code))
	sp.Message = message
	sp.Kind = spanKind(ptrace.SpanKind(kind))
	sp.Attrs = attrs
	sp.Events = events
	d.out.add(sp)
	return nil
}

// add appends sp to the last piece, or to a new one once that is full.
// The first piece grows as a slice does: a JSON line holds a few spans.
func (o *jsonDecoded) add(sp Span) {
	n := len(o.pieces)
	if n == 0 || len(o.pieces[n-1]) == deliverSpans {
		var piece []Span
		if n > 0 {
			piece = make([]Span, 0, deliverSpans)
		}
		o.pieces = append(o.pieces, piece)
		n++
	}
	o.pieces[n-1] = append(o.pieces[n-1], sp)
	o.n++
}

// at is the i-th span of the pieces.
func (o *jsonDecoded) at(i int) *Span { return &o.pieces[i/deliverSpans][i%deliverSpans] }

// status reads a span's Status.
func (d *jsonDecoder) status(message *string, code *int32) error {
	var seen uint32
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "message":
			if err = once(&seen, 1); err == nil {
				*message, err = d.name()
			}
		case "code":
			if err = once(&seen, 2); err == nil {
				*code, err = d.smallInt(false, true)
			}
		default:
			err = errJSONDecline
		}
		return err
	})
}

func (d *jsonDecoder) event() (SpanEvent, error) {
	var seen uint32
	var e SpanEvent
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "timeUnixNano":
			if err = once(&seen, 1); err == nil {
				var t uint64
				t, err = d.uint64Value()
				e.Time = int64(t)
			}
		case "name":
			if err = once(&seen, 2); err == nil {
				e.Name, err = d.name()
			}
		case "attributes":
			if err = once(&seen, 4); err == nil {
				e.Attrs, err = d.attributes()
			}
		case "droppedAttributesCount":
			if err = once(&seen, 8); err == nil {
				err = d.count()
			}
		default:
			err = errJSONDecline
		}
		return err
	})
	return e, err
}

// link reads a span's link, which the spans do not keep.
func (d *jsonDecoder) link() error {
	var seen uint32
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "traceId":
			if err = once(&seen, 1); err == nil {
				err = d.id(tid[:])
			}
		case "spanId":
			if err = once(&seen, 2); err == nil {
				err = d.id(sid[:])
			}
		case "traceState":
			if err = once(&seen, 4); err == nil {
				err = d.skipString()
			}
		case "attributes":
			if err = once(&seen, 8); err == nil {
				err = d.array(func() error { return d.keyValue(nil) })
			}
		case "droppedAttributesCount":
			if err = once(&seen, 16); err == nil {
				err = d.count()
			}
		case "flags":
			if err = once(&seen, 32); err == nil {
				err = d.count()
			}
		default:
			err = errJSONDecline
		}
		return err
	})
}

// attributes reads KeyValues and flattens them as flatten does: nil for
// none, the last of equal keys kept, values cut by cutAttr.
func (d *jsonDecoder) attributes() (Attrs, error) {
	err := d.array(func() error {
		return d.keyValue(func(memo *keyMemo, v jsonValue) {
			var s string
			if v.kind == valueStr && v.raw != nil {
				s = memo.value(v.raw)
			} else {
				s = d.text(&v, strings.HasPrefix(memo.key, "http.request.header."))
			}
			d.attrs.add(memo.key, cutAttr(memo.key, s))
		})
	})
	if err != nil {
		d.attrs.forget()
		return nil, err
	}
	return d.attrs.keep(), nil
}

// jsonValue is an AnyValue read: a scalar, or an array's or key-value
// list's values (and keys).
type jsonValue struct {
	kind int // valueEmpty, valueStr, ...
	// raw is a top-level string's bytes, valid until the next string is
	// read; str a string nested in an array or list, or bytes decoded.
	raw   []byte
	str   string
	num   int64
	float float64
	bool  bool
	items []jsonValue
	keys  []string
}

// keyValue reads a KeyValue and calls kept, when set, with its key's memo
// (the key made a string once, for every KeyValue of the decoder) and its
// value.
func (d *jsonDecoder) keyValue(kept func(key *keyMemo, v jsonValue)) error {
	var seen uint32
	var key []byte
	var v jsonValue
	err := d.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "key":
			if err = once(&seen, 1); err == nil {
				key, err = d.stringBytes(&d.kesc)
			}
		case "value":
			if err = once(&seen, 2); err == nil {
				err = d.anyValue(&v, true)
			}
		default:
			err = errJSONDecline
		}
		return err
	})
	if err != nil || kept == nil {
		return err
	}
	memo := d.keys[string(key)] // a look-up by a []byte key: no string made
	if memo == nil {
		memo = &keyMemo{key: string(key)}
		if len(d.keys) < internLimit {
			d.keys[memo.key] = memo
		}
	}
	kept(memo, v)
	return nil
}

// anyValue reads an AnyValue into v: each value key met replaces the one
// before (a oneof), as in pdata. A string at the top keeps its bytes in
// raw; one nested is made a string.
func (d *jsonDecoder) anyValue(v *jsonValue, top bool) error {
	*v = jsonValue{}
	var seen uint32
	return d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "stringValue":
			if err = once(&seen, 1); err == nil {
				var b []byte
				if b, err = d.stringBytes(&d.esc); err == nil {
					*v = jsonValue{kind: valueStr, raw: b}
					if !top {
						v.raw, v.str = nil, string(b)
					} else if v.raw == nil {
						v.raw = []byte{}
					}
				}
			}
		case "boolValue":
			if err = once(&seen, 2); err == nil {
				*v = jsonValue{kind: valueBool}
				v.bool, err = d.boolValue()
			}
		case "intValue":
			if err = once(&seen, 4); err == nil {
				*v = jsonValue{kind: valueInt}
				v.num, err = d.int64Value()
			}
		case "doubleValue":
			if err = once(&seen, 8); err == nil {
				*v = jsonValue{kind: valueDouble}
				v.float, err = d.float64Value()
			}
		case "bytesValue":
			if err = once(&seen, 16); err == nil {
				*v = jsonValue{kind: valueBytes}
				v.str, err = d.bytesValue()
			}
		case "arrayValue", "kvlistValue":
			bit, kind := uint32(32), valueSlice
			if string(key) == "kvlistValue" {
				bit, kind = 64, valueMap
			}
			if err = once(&seen, bit); err == nil {
				*v = jsonValue{kind: kind}
				err = d.values(v)
			}
		default:
			err = errJSONDecline
		}
		return err
	})
}

// bytesValue reads base64 as pdata does: the string as written (an
// escape is declined), decoded with the standard encoding.
func (d *jsonDecoder) bytesValue() (string, error) {
	raw, escaped, err := d.rawString()
	if err != nil || escaped {
		return "", errJSONDecline
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(b, raw)
	if err != nil {
		return "", errJSONDecline
	}
	return string(b[:n]), nil
}

// values reads an ArrayValue's or KeyValueList's values into v.
func (d *jsonDecoder) values(v *jsonValue) error {
	var seen uint32
	return d.object(func(key []byte) error {
		if string(key) != "values" {
			return errJSONDecline
		}
		if err := once(&seen, 1); err != nil {
			return err
		}
		return d.array(func() error {
			var e jsonValue
			if v.kind == valueSlice {
				err := d.anyValue(&e, false)
				v.items = append(v.items, e)
				return err
			}
			var k string
			var kseen uint32
			err := d.object(func(f []byte) error {
				var err error
				switch string(f) {
				case "key":
					if err = once(&kseen, 1); err == nil {
						var b []byte
						b, err = d.stringBytes(&d.esc)
						k = string(b)
					}
				case "value":
					if err = once(&kseen, 2); err == nil {
						err = d.anyValue(&e, false)
					}
				default:
					err = errJSONDecline
				}
				return err
			})
			v.items = append(v.items, e)
			v.keys = append(v.keys, k)
			return err
		})
	})
}

// text is v as attrString writes it (pcommon's AsString; an array or
// list as JSON); with header, an array of one is its element's text.
func (d *jsonDecoder) text(v *jsonValue, header bool) string {
	switch v.kind {
	case valueStr:
		if v.raw != nil {
			return string(v.raw)
		}
		return v.str
	case valueBool:
		return strconv.FormatBool(v.bool)
	case valueInt:
		return strconv.FormatInt(v.num, 10)
	case valueDouble:
		return pcommon.NewValueDouble(v.float).AsString()
	case valueBytes:
		return base64.StdEncoding.EncodeToString([]byte(v.str))
	case valueSlice, valueMap:
		if header && v.kind == valueSlice && len(v.items) == 1 {
			return d.text(&v.items[0], false)
		}
		d.w.buf.Reset()
		if !d.w.write(v) {
			return ""
		}
		return d.w.buf.String()
	}
	return ""
}

// jsonValueText writes an array or key-value list as the JSON attrString
// writes: keys sorted, the last of equal keys kept, no HTML escaping.
// The values nest no deeper than jsonlimit.MaxDepth, so it recurses.
// False for a double JSON cannot hold: attrString writes "" for the whole.
type jsonValueText struct{ jsonValueWriter }

func (w *jsonValueText) write(v *jsonValue) bool {
	switch v.kind {
	case valueStr:
		if v.raw != nil {
			w.string(v.raw)
		} else {
			w.string([]byte(v.str))
		}
	case valueBool:
		w.buf.WriteString(strconv.FormatBool(v.bool))
	case valueInt:
		w.buf.WriteString(strconv.FormatInt(v.num, 10))
	case valueDouble:
		if math.IsNaN(v.float) || math.IsInf(v.float, 0) {
			return false
		}
		b, _ := json.Marshal(v.float)
		w.buf.Write(b)
	case valueBytes:
		if len(v.str) == 0 {
			w.buf.WriteString("null")
			break
		}
		w.buf.WriteByte('"')
		w.buf.WriteString(base64.StdEncoding.EncodeToString([]byte(v.str)))
		w.buf.WriteByte('"')
	case valueSlice:
		w.buf.WriteByte('[')
		for i := range v.items {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if !w.write(&v.items[i]) {
				return false
			}
		}
		w.buf.WriteByte(']')
	case valueMap:
		last := make(map[string]int, len(v.keys))
		for i, k := range v.keys {
			last[k] = i
		}
		return object(&w.jsonValueWriter, last, func(i int) bool { return w.write(&v.items[i]) })
	default:
		w.buf.WriteString("null")
	}
	return true
}

// deliverDecoded calls fn with what decodeJSONSpans made of a document as
// deliver does with pdata's traces: all at once up to deliverSpans spans,
// else deliverSpans at a time, each piece dropped once fn has it; the
// first refused span ends it with its error, the pieces filled before it
// delivered.
func deliverDecoded(dec jsonDecoded, line int, fn func(Batch) error) error {
	if dec.count <= deliverSpans {
		if dec.refused != nil {
			return atLine(line, dec.refused)
		}
		spans := []Span{} // as Spans makes them: empty, not nil
		if len(dec.pieces) > 0 {
			spans = dec.pieces[0]
		}
		return atLine(line, fn(Batch{Line: line, Spans: spans}))
	}
	for i, piece := range dec.pieces {
		if len(piece) < deliverSpans && dec.refused != nil {
			break // the last, not filled before the refusal
		}
		err := fn(Batch{Line: line, Spans: piece})
		clear(piece)
		dec.pieces[i] = nil
		if err != nil {
			return atLine(line, err)
		}
	}
	return atLine(line, dec.refused)
}
