package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The receivers decode OTLP protobuf straight into Spans: pdata's decoder
// builds a TracesData of maps and values, each attribute an allocation or
// more, that SpansLenient then walks and copies once again; that was a
// third of a received span's CPU (BENCHMARKS.md, 24a). decodeProtoSpans
// takes what pdata's ProtoUnmarshaler takes, refuses what it refuses (a
// wrong wire type for a field it knows, an id of another length than 0 or
// its own, a truncated field, values nested 100 levels deep), ignores what
// it ignores (unknown fields, the deprecated field 1000 of ResourceSpans,
// once checked), and makes the Spans SpansLenient makes of its traces, the
// same refusals in the same order. TestProtoSpansAsPdata and
// TestProtoSpansMutated hold it to that (FuzzProtoSpans, for longer).

// protoRequest is what decodeProtoSpans made of an ExportTraceServiceRequest
// (or a TracesData: the same fields).
type protoRequest struct {
	spans []Span
	// count is how many spans the request holds, refused ones included;
	// once over the decoder's limit none more is converted.
	count    int
	rejected int   // spans refused
	first    error // the first refusal's reason
}

// The faults of data that is not protobuf of OTLP's messages.
var (
	errProtoOverflow  = errors.New("proto: integer overflow")
	errProtoNegative  = errors.New("proto: negative length found during unmarshaling")
	errProtoDepth     = errors.New("proto: exceeded max recursion depth")
	errProtoEndGroup  = errors.New("proto: unexpected end of group")
	errProtoTraceID   = errors.New("invalid length for a trace id")
	errProtoSpanID    = errors.New("invalid length for a span id")
	errProtoTruncated = io.ErrUnexpectedEOF
)

// protoRecursionLimit is how deep attribute values may nest (a KeyValue,
// an AnyValue, an array or a key-value list each a level), as in pdata.
const protoRecursionLimit = 100

// Wire types.
const (
	wireVarint     = 0
	wireI64        = 1
	wireLen        = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireI32        = 5
)

// protoReader reads one message's fields.
type protoReader struct {
	buf []byte
	pos int
}

func (r *protoReader) more() bool { return r.pos < len(r.buf) }

func (r *protoReader) varint() (uint64, error) {
	var n uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errProtoOverflow
		}
		if r.pos >= len(r.buf) {
			return 0, errProtoTruncated
		}
		b := r.buf[r.pos]
		r.pos++
		n |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return n, nil
		}
	}
}

// tag reads a field's number and wire type. The number is the tag's bits
// above the wire type cut to 32 bits, as pdata reads it.
func (r *protoReader) tag() (field int32, wire int, err error) {
	t, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	field = int32(t >> 3)
	if field <= 0 {
		return 0, 0, fmt.Errorf("proto: illegal field=%d (tag=%d, pos=%d)", field, t, r.pos)
	}
	return field, int(t & 7), nil
}

func (r *protoReader) bytes() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	l := int(n)
	if l < 0 {
		return nil, errProtoNegative
	}
	end := r.pos + l
	if end < 0 || end > len(r.buf) {
		return nil, errProtoTruncated
	}
	b := r.buf[r.pos:end]
	r.pos = end
	return b, nil
}

func (r *protoReader) fixed64() (uint64, error) {
	if r.pos+8 < 0 || r.pos+8 > len(r.buf) {
		return 0, errProtoTruncated
	}
	v := binary.LittleEndian.Uint64(r.buf[r.pos:])
	r.pos += 8
	return v, nil
}

func (r *protoReader) fixed32() error {
	if r.pos+4 < 0 || r.pos+4 > len(r.buf) {
		return errProtoTruncated
	}
	r.pos += 4
	return nil
}

// skip passes over a field this decoder does not keep, as pdata's
// ConsumeUnknown does, groups included.
func (r *protoReader) skip(wire int) error {
	depth := 0
	for r.pos < len(r.buf) {
		var err error
		switch wire {
		case wireVarint:
			_, err = r.varint()
			return err
		case wireI64:
			_, err = r.fixed64()
			return err
		case wireLen:
			_, err = r.bytes()
			return err
		case wireStartGroup:
			depth++
		case wireEndGroup:
			if depth == 0 {
				return errProtoEndGroup
			}
			depth--
		case wireI32:
			return r.fixed32()
		default:
			return fmt.Errorf("proto: illegal wireType %d", wire)
		}
		if depth == 0 {
			return nil
		}
		if _, wire, err = r.tag(); err != nil {
			return err
		}
	}
	return errProtoTruncated
}

// want refuses a field of a known number sent with another wire type.
func want(wire, is int, field string) error {
	if wire != is {
		return fmt.Errorf("proto: wrong wireType = %d for field %s", wire, field)
	}
	return nil
}

// lenField reads a known length-delimited field (a string, bytes or a
// message), refusing another wire type.
func (r *protoReader) lenField(wire int, field string) ([]byte, error) {
	if err := want(wire, wireLen, field); err != nil {
		return nil, err
	}
	return r.bytes()
}

// varintField reads a known varint field, refusing another wire type.
func (r *protoReader) varintField(wire int, field string) (uint64, error) {
	if err := want(wire, wireVarint, field); err != nil {
		return 0, err
	}
	return r.varint()
}

// fixed64Field reads a known 64-bit field, refusing another wire type.
func (r *protoReader) fixed64Field(wire int, field string) (uint64, error) {
	if err := want(wire, wireI64, field); err != nil {
		return 0, err
	}
	return r.fixed64()
}

// skipScalar checks a known field whose value the spans do not keep.
func (r *protoReader) skipScalar(wire, is int, field string) error {
	if err := want(wire, is, field); err != nil {
		return err
	}
	switch is {
	case wireVarint:
		_, err := r.varint()
		return err
	case wireI64:
		_, err := r.fixed64()
		return err
	case wireI32:
		return r.fixed32()
	}
	_, err := r.bytes()
	return err
}

// protoDecoder holds what decodeProtoSpans reuses from one message to the
// next: the slices of the messages it decodes in a second pass, and the
// strings it has made, so that a batch's repeated keys and values (each
// span's attribute names, a trace's conversation id) are one string.
type protoDecoder struct {
	req   protoRequest
	trace traceHex
	// scopes and spans are the ScopeSpans of a ResourceSpans and the spans
	// of a ScopeSpans, met before the resource or scope that names them.
	scopes, spans     [][]byte
	attrs, eventAttrs [][]byte   // a span's KeyValues, an event's
	read              attrReader // a span's or event's attributes, as read
	// keys are the attribute names met, each with the last value met.
	keys map[string]*keyMemo
	// names are the span names and status messages met.
	names map[string]string
	limit int
}

type keyMemo struct{ key, last string }

// value is raw, a string value of the key, as a string: the key's last
// value again when it is the same, which a string as it came most often is
// (a trace's conversation id, a tool's name).
func (m *keyMemo) value(raw []byte) string {
	if string(raw) != m.last {
		m.last = string(raw)
	}
	return m.last
}

// internLimit bounds the strings a decoder keeps (keys, names).
const internLimit = 4096

// decodeProtoSpans decodes an OTLP protobuf ExportTraceServiceRequest into
// Spans, appended to into[:0], converting no more than limit (it counts
// all). The spans keep nothing of data.
func decodeProtoSpans(data []byte, limit int, into []Span) (protoRequest, error) {
	d := &protoDecoder{keys: map[string]*keyMemo{}, names: map[string]string{}, limit: limit}
	d.req.spans = into[:0]
	r := protoReader{buf: data}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return protoRequest{}, err
		}
		if field != 1 {
			if err := r.skip(wire); err != nil {
				return protoRequest{}, err
			}
			continue
		}
		b, err := r.lenField(wire, "ResourceSpans")
		if err != nil {
			return protoRequest{}, err
		}
		if err := d.resourceSpans(b); err != nil {
			return protoRequest{}, err
		}
	}
	return d.req, nil
}

// str is b as a string, one already made when it is a name met before.
func (d *protoDecoder) str(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.names) < internLimit {
		d.names[s] = s
	}
	return s
}

func (d *protoDecoder) resourceSpans(buf []byte) error {
	r := protoReader{buf: buf}
	service, found := "", false
	scopes := d.scopes[:0]
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			b, err := r.lenField(wire, "Resource")
			if err != nil {
				return err
			}
			if err := d.resource(b, &service, &found); err != nil {
				return err
			}
		case 2:
			b, err := r.lenField(wire, "ScopeSpans")
			if err != nil {
				return err
			}
			scopes = append(scopes, b)
		case 3:
			err = r.skipScalar(wire, wireLen, "SchemaUrl")
		case 1000:
			// The deprecated name of ScopeSpans: checked, not kept (as
			// ptrace.ProtoUnmarshaler leaves them).
			b, err := r.lenField(wire, "DeprecatedScopeSpans")
			if err != nil {
				return err
			}
			if err := d.scopeSpans(b, "", false); err != nil {
				return err
			}
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	d.scopes = scopes
	for i, b := range scopes {
		if err := d.scopeSpans(b, service, true); err != nil {
			return err
		}
		scopes[i] = nil
	}
	return nil
}

// resource reads a Resource for its first service.name attribute, which
// found says was met (in an earlier Resource field of the same
// ResourceSpans, whose attributes pdata appends to the first's).
func (d *protoDecoder) resource(buf []byte, service *string, found *bool) error {
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			b, err := r.lenField(wire, "Attributes")
			if err != nil {
				return err
			}
			key, v, err := keyValue(b, 0, true)
			if err != nil {
				return err
			}
			if !*found && string(key) == "service.name" {
				*found = true
				*service = d.value(v)
				if v.kind == valueStr {
					*service = d.str(v.raw)
				}
			}
		case 2:
			err = r.skipScalar(wire, wireVarint, "DroppedAttributesCount")
		case 3:
			b, err := r.lenField(wire, "EntityRefs")
			if err != nil {
				return err
			}
			if err := entityRef(b); err != nil {
				return err
			}
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func entityRef(buf []byte) error {
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1, 2, 3, 4:
			err = r.skipScalar(wire, wireLen, [...]string{"SchemaUrl", "Type", "IdKeys", "DescriptionKeys"}[field-1])
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scopeSpans decodes a ScopeSpans' spans into d.req when keep, else only
// checks them.
func (d *protoDecoder) scopeSpans(buf []byte, service string, keep bool) error {
	r := protoReader{buf: buf}
	var scope []byte
	start := len(d.spans)
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			b, err := r.lenField(wire, "Scope")
			if err != nil {
				return err
			}
			if err := instrumentationScope(b, &scope); err != nil {
				return err
			}
		case 2:
			b, err := r.lenField(wire, "Spans")
			if err != nil {
				return err
			}
			d.spans = append(d.spans, b)
		case 3:
			err = r.skipScalar(wire, wireLen, "SchemaUrl")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	spans := d.spans[start:]
	defer func() {
		clear(spans)
		d.spans = d.spans[:start]
	}()
	if keep && d.req.count < d.limit {
		d.req.spans = slices.Grow(d.req.spans, min(len(spans), d.limit-d.req.count))
	}
	scopeName := ""
	if len(scope) > 0 {
		scopeName = d.str(scope)
	}
	for _, b := range spans {
		convert := keep
		if keep {
			d.req.count++
			convert = d.req.count <= d.limit
		}
		if err := d.span(b, service, scopeName, convert); err != nil {
			return err
		}
	}
	return nil
}

// instrumentationScope reads a scope's name (the last one set).
func instrumentationScope(buf []byte, name *[]byte) error {
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			*name, err = r.lenField(wire, "Name")
		case 2:
			err = r.skipScalar(wire, wireLen, "Version")
		case 3:
			err = checkAttribute(&r, wire)
		case 4:
			err = r.skipScalar(wire, wireVarint, "DroppedAttributesCount")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkAttribute reads a KeyValue whose value is not kept.
func checkAttribute(r *protoReader, wire int) error {
	b, err := r.lenField(wire, "Attributes")
	if err != nil {
		return err
	}
	_, _, err = keyValue(b, 0, true)
	return err
}

// id reads a trace or span id: empty, or of its own length.
func id(r *protoReader, wire int, dst []byte, field string, bad error) error {
	b, err := r.lenField(wire, field)
	if err != nil {
		return err
	}
	switch len(b) {
	case 0:
		clear(dst)
	case len(dst):
		copy(dst, b)
	default:
		return bad
	}
	return nil
}

// span decodes one Span and, when convert, adds it to d.req, or counts
// its refusal.
func (d *protoDecoder) span(buf []byte, service, scope string, convert bool) error {
	r := protoReader{buf: buf}
	var (
		tid           pcommon.TraceID
		sid, pid      pcommon.SpanID
		name, message []byte
		kind, code    int32
		start, end    uint64
		attrs         = d.attrs[:0]
		events        [][]byte
	)
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			err = id(&r, wire, tid[:], "TraceId", errProtoTraceID)
		case 2:
			err = id(&r, wire, sid[:], "SpanId", errProtoSpanID)
		case 3:
			err = r.skipScalar(wire, wireLen, "TraceState")
		case 4:
			err = id(&r, wire, pid[:], "ParentSpanId", errProtoSpanID)
		case 16:
			err = r.skipScalar(wire, wireI32, "Flags")
		case 5:
			name, err = r.lenField(wire, "Name")
		case 6:
			var v uint64
			v, err = r.varintField(wire, "Kind")
			kind = int32(v)
		case 7:
			start, err = r.fixed64Field(wire, "StartTimeUnixNano")
		case 8:
			end, err = r.fixed64Field(wire, "EndTimeUnixNano")
		case 9:
			var b []byte
			if b, err = r.lenField(wire, "Attributes"); err == nil {
				attrs = append(attrs, b)
			}
		case 10:
			err = r.skipScalar(wire, wireVarint, "DroppedAttributesCount")
		case 11:
			var b []byte
			if b, err = r.lenField(wire, "Events"); err == nil {
				events = append(events, b)
			}
		case 12:
			err = r.skipScalar(wire, wireVarint, "DroppedEventsCount")
		case 13:
			var b []byte
			if b, err = r.lenField(wire, "Links"); err == nil {
				err = spanLink(b)
			}
		case 14:
			err = r.skipScalar(wire, wireVarint, "DroppedLinksCount")
		case 15:
			var b []byte
			if b, err = r.lenField(wire, "Status"); err == nil {
				err = spanStatus(b, &message, &code)
			}
		default:
			err = r.skip(wire)
		}
		if err != nil {
			d.attrs = attrs[:0]
			return err
		}
	}
	defer func() {
		clear(attrs)
		d.attrs = attrs[:0]
	}()
	// Every attribute and event is read, converted or not: one that does
	// not decode fails the request as it fails pdata's decoding.
	sp := Span{Service: service, Scope: scope, Start: int64(start), End: int64(end)}
	if len(name) > 0 {
		sp.Name = d.str(name)
	}
	var err error
	if sp.Attrs, err = d.attributes(attrs); err != nil {
		return err
	}
	for _, b := range events {
		e, err := d.event(b)
		if err != nil {
			return err
		}
		sp.Events = append(sp.Events, e)
	}
	if !convert {
		return nil
	}
	if err := d.trace.check(&sp, tid, sid, pid); err != nil {
		d.req.rejected++
		if d.req.first == nil {
			d.req.first = err
		}
		return nil
	}
	sp.Status = statusName(ptrace.StatusCode(code))
	if len(message) > 0 {
		sp.Message = d.str(message)
	}
	sp.Kind = spanKind(ptrace.SpanKind(kind))
	d.req.spans = append(d.req.spans, sp)
	return nil
}

// spanStatus reads a span's Status: later fields overwrite earlier ones, in
// one Status field or across several.
func spanStatus(buf []byte, message *[]byte, code *int32) error {
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 2:
			*message, err = r.lenField(wire, "Message")
		case 3:
			var v uint64
			v, err = r.varintField(wire, "Code")
			*code = int32(v)
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func spanLink(buf []byte) error {
	r := protoReader{buf: buf}
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			err = id(&r, wire, tid[:], "TraceId", errProtoTraceID)
		case 2:
			err = id(&r, wire, sid[:], "SpanId", errProtoSpanID)
		case 3:
			err = r.skipScalar(wire, wireLen, "TraceState")
		case 4:
			err = checkAttribute(&r, wire)
		case 5:
			err = r.skipScalar(wire, wireVarint, "DroppedAttributesCount")
		case 6:
			err = r.skipScalar(wire, wireI32, "Flags")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *protoDecoder) event(buf []byte) (SpanEvent, error) {
	r := protoReader{buf: buf}
	var e SpanEvent
	attrs := d.eventAttrs[:0]
	var name []byte
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return e, err
		}
		switch field {
		case 1:
			var t uint64
			t, err = r.fixed64Field(wire, "TimeUnixNano")
			e.Time = int64(t)
		case 2:
			name, err = r.lenField(wire, "Name")
		case 3:
			var b []byte
			if b, err = r.lenField(wire, "Attributes"); err == nil {
				attrs = append(attrs, b)
			}
		case 4:
			err = r.skipScalar(wire, wireVarint, "DroppedAttributesCount")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			d.eventAttrs = attrs[:0]
			return e, err
		}
	}
	if len(name) > 0 {
		e.Name = d.str(name)
	}
	var err error
	e.Attrs, err = d.attributes(attrs)
	clear(attrs)
	d.eventAttrs = attrs[:0]
	return e, err
}

// attributes flattens KeyValues as flatten does a pcommon.Map: nil for
// none, the last of equal keys kept.
func (d *protoDecoder) attributes(kvs [][]byte) (Attrs, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	for _, b := range kvs {
		key, v, err := keyValue(b, 0, true)
		if err != nil {
			d.read.forget()
			return nil, err
		}
		memo := d.keys[string(key)]
		if memo == nil {
			memo = &keyMemo{key: string(key)}
			if len(d.keys) < internLimit {
				d.keys[memo.key] = memo
			}
		}
		var s string
		if v.kind == valueStr {
			s = memo.value(v.raw)
		} else {
			s = d.value(v)
			if v.kind == valueSlice && strings.HasPrefix(memo.key, "http.request.header.") {
				if one, ok := onlyElement(v.raw); ok {
					s = d.value(one) // header values are arrays of one
				}
			}
		}
		d.read.add(memo.key, cutAttr(memo.key, s))
	}
	return d.read.keep(), nil
}

// Kinds of anyValue, as pcommon.ValueType names them.
const (
	valueEmpty = iota
	valueStr
	valueBool
	valueInt
	valueDouble
	valueSlice
	valueMap
	valueBytes
)

// anyValue is an AnyValue read and checked: its scalar, or its bytes (a
// string's, a byte string's, an array's or a key-value list's message).
type anyValue struct {
	kind int
	num  uint64
	raw  []byte
}

// keyValue reads a KeyValue at depth: its key (the last set) and its
// value (later value fields merged into earlier ones, as pdata does). With
// check, an array's or a key-value list's content is read too, to the
// bottom; without, it was before.
func keyValue(buf []byte, depth int, check bool) ([]byte, anyValue, error) {
	var key []byte
	var v anyValue
	if depth >= protoRecursionLimit {
		return nil, v, errProtoDepth
	}
	depth++
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return nil, v, err
		}
		switch field {
		case 1:
			key, err = r.lenField(wire, "Key")
		case 2:
			var b []byte
			if b, err = r.lenField(wire, "Value"); err == nil {
				err = v.read(b, depth, check)
			}
		case 3:
			err = r.skipScalar(wire, wireVarint, "KeyStrindex")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return nil, v, err
		}
	}
	return key, v, nil
}

// read reads an AnyValue into v: each value field met replaces the one
// before (a oneof). check is keyValue's.
func (v *anyValue) read(buf []byte, depth int, check bool) error {
	if depth >= protoRecursionLimit {
		return errProtoDepth
	}
	depth++
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		switch field {
		case 1, 7:
			var b []byte
			if b, err = r.lenField(wire, [...]string{1: "StringValue", 7: "BytesValue"}[field]); err == nil {
				*v = anyValue{kind: valueStr, raw: b}
				if field == 7 {
					v.kind = valueBytes
				}
			}
		case 2, 3, 8:
			var n uint64
			if n, err = r.varintField(wire, [...]string{2: "BoolValue", 3: "IntValue", 8: "StringValueStrindex"}[field]); err == nil {
				// A string index (profiles' dictionary) is no value
				// pcommon knows: empty.
				*v = anyValue{kind: [...]int{2: valueBool, 3: valueInt, 8: valueEmpty}[field], num: n}
			}
		case 4:
			var n uint64
			if n, err = r.fixed64Field(wire, "DoubleValue"); err == nil {
				*v = anyValue{kind: valueDouble, num: n}
			}
		case 5, 6:
			var b []byte
			if b, err = r.lenField(wire, [...]string{5: "ArrayValue", 6: "KvlistValue"}[field]); err == nil {
				*v = anyValue{kind: valueSlice, raw: b}
				if field == 6 {
					v.kind = valueMap
				}
				if check {
					err = eachValue(b, depth, field == 6, true, nil)
				}
			}
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachValue reads an ArrayValue (or a KeyValueList when kvs) at depth and
// calls fn, if set, with each of its values (and keys). check is
// keyValue's.
func eachValue(buf []byte, depth int, kvs, check bool, fn func(key []byte, v anyValue) bool) error {
	if depth >= protoRecursionLimit {
		return errProtoDepth
	}
	depth++
	r := protoReader{buf: buf}
	for r.more() {
		field, wire, err := r.tag()
		if err != nil {
			return err
		}
		if field != 1 {
			if err := r.skip(wire); err != nil {
				return err
			}
			continue
		}
		b, err := r.lenField(wire, "Values")
		if err != nil {
			return err
		}
		var key []byte
		var v anyValue
		if kvs {
			key, v, err = keyValue(b, depth, check)
		} else {
			err = v.read(b, depth, check)
		}
		if err != nil {
			return err
		}
		if fn != nil && !fn(key, v) {
			return nil
		}
	}
	return nil
}

// onlyElement is the value of an array of one.
func onlyElement(array []byte) (anyValue, bool) {
	var one anyValue
	n := 0
	_ = eachValue(array, 0, false, false, func(_ []byte, v anyValue) bool {
		one = v
		n++
		return true
	})
	return one, n == 1
}

// value is v as pcommon's AsString writes it, a map or an array as
// attrString writes it.
func (d *protoDecoder) value(v anyValue) string {
	switch v.kind {
	case valueStr:
		return string(v.raw)
	case valueBool:
		return strconv.FormatBool(v.num != 0)
	case valueInt:
		return strconv.FormatInt(int64(v.num), 10)
	case valueDouble:
		return pcommon.NewValueDouble(math.Float64frombits(v.num)).AsString()
	case valueBytes:
		return base64.StdEncoding.EncodeToString(v.raw)
	case valueSlice, valueMap:
		var w jsonValueWriter
		if !w.write(v) {
			return ""
		}
		return w.buf.String()
	}
	return ""
}

// jsonValueWriter writes a checked array or key-value list as the JSON
// attrString writes: keys sorted, the last of equal keys kept, no HTML
// escaping; false for a double JSON cannot hold. The values nest no
// deeper than protoRecursionLimit, so it recurses.
type jsonValueWriter struct {
	buf bytes.Buffer
	str bytes.Buffer
	enc *json.Encoder
}

func (w *jsonValueWriter) string(s []byte) {
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.str)
		w.enc.SetEscapeHTML(false)
	}
	w.str.Reset()
	_ = w.enc.Encode(string(s))
	w.buf.Write(bytes.TrimSuffix(w.str.Bytes(), []byte{'\n'}))
}

// object writes a kvlist's members as a JSON object, keys in order, each
// value by value (false: not written).
func object[V any](w *jsonValueWriter, byKey map[string]V, value func(V) bool) bool {
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.string([]byte(k))
		w.buf.WriteByte(':')
		if !value(byKey[k]) {
			return false
		}
	}
	w.buf.WriteByte('}')
	return true
}

func (w *jsonValueWriter) write(v anyValue) bool {
	switch v.kind {
	case valueStr:
		w.string(v.raw)
	case valueBool:
		w.buf.WriteString(strconv.FormatBool(v.num != 0))
	case valueInt:
		w.buf.WriteString(strconv.FormatInt(int64(v.num), 10))
	case valueDouble:
		f := math.Float64frombits(v.num)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		b, _ := json.Marshal(f)
		w.buf.Write(b)
	case valueBytes:
		if len(v.raw) == 0 {
			w.buf.WriteString("null")
			break
		}
		w.buf.WriteByte('"')
		w.buf.WriteString(base64.StdEncoding.EncodeToString(v.raw))
		w.buf.WriteByte('"')
	case valueSlice:
		w.buf.WriteByte('[')
		ok, n := true, 0
		_ = eachValue(v.raw, 0, false, false, func(_ []byte, e anyValue) bool {
			if n > 0 {
				w.buf.WriteByte(',')
			}
			n++
			ok = w.write(e)
			return ok
		})
		if !ok {
			return false
		}
		w.buf.WriteByte(']')
	case valueMap:
		byKey := map[string]anyValue{}
		_ = eachValue(v.raw, 0, true, false, func(k []byte, e anyValue) bool {
			byKey[string(k)] = e
			return true
		})
		return object(w, byKey, w.write)
	default:
		w.buf.WriteString("null")
	}
	return true
}
