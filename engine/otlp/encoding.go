package otlp

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// How a span is stored in BucketSpans.
//
// Databases written before this encoding hold each span as a JSON object
// (its first byte is '{'); they still read, and a span stored that way
// compares equal to the same span sent again. New spans are stored in a
// compact binary form, about a third of the JSON's size:
//
//	byte     spanBinary (1)
//	byte     flags: which ids are stored as raw bytes (hex decoded)
//	ids      trace (16 raw bytes or a string), span (8 or a string),
//	         parent (8 or a string)
//	strings  name, kind, status, message, service, scope
//	varint   start; uvarint end-start (end >= start, else flagEndBefore and a varint end)
//	attrs    uvarint count, then key (uvarint: an index into wellKnownKeys
//	         plus one, or 0 and a string) and value string, in key order
//	events   uvarint count, then name string, varint time, attrs
//
// A string is a uvarint length and its bytes. The attribute keys the
// translation reads are one byte each; the table below is part of the
// format: append to it, never reorder.
const spanBinary = 1

const (
	flagTraceRaw = 1 << iota
	flagSpanRaw
	flagParentRaw
	flagEndBefore
)

// wellKnownKeys are attribute keys stored as their index (plus one).
var wellKnownKeys = []string{
	"gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model",
	"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.system", "gen_ai.provider.name",
	"gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.tool.name", "gen_ai.tool.call.id",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.type", "gen_ai.tool.description",
	"error.type", "http.response.status_code", "http.status_code", "session.id",
	"tool.name", "tool.parameters", "input.value", "output.value",
	"openinference.span.kind", "llm.model_name", "traceloop.span.kind", "traceloop.entity.name",
	"traceloop.entity.input", "traceloop.entity.output", "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response",
	"retrylab.attempt", "retrylab.max_attempts", "retrylab.call.key", "retrylab.idempotency_key",
	"retrylab.outcome", "retrylab.faults", "retrylab.effects", "retrylab.retry_after",
	"retrylab.tool.kind", "retrylab.deduplicated", "retrylab.journal.recorded", "retrylab.journal.result",
	"retrylab.replay", "retrylab.replay.run", "retrylab.replay.decision", "retrylab.run.crashed",
	"retrylab.run.exit_code", "retrylab.run.fault", "retrylab.execution.end", "retrylab.execution.error",
	"http.request.header.idempotency-key", "exception.type", "exception.message", "exception.stacktrace",
}

var wellKnownIndex = func() map[string]uint64 {
	m := make(map[string]uint64, len(wellKnownKeys))
	for i, k := range wellKnownKeys {
		m[k] = uint64(i + 1)
	}
	return m
}()

// encodeSpan appends s's stored form to dst.
func encodeSpan(dst []byte, s *Span) []byte {
	var flags byte
	if rawHex(s.TraceID, 16) {
		flags |= flagTraceRaw
	}
	if rawHex(s.SpanID, 8) {
		flags |= flagSpanRaw
	}
	if rawHex(s.ParentID, 8) {
		flags |= flagParentRaw
	}
	if s.End < s.Start {
		flags |= flagEndBefore
	}
	dst = append(dst, spanBinary, flags)
	dst = appendID(dst, s.TraceID, flags&flagTraceRaw != 0)
	dst = appendID(dst, s.SpanID, flags&flagSpanRaw != 0)
	dst = appendID(dst, s.ParentID, flags&flagParentRaw != 0)
	for _, str := range [...]string{s.Name, s.Kind, s.Status, s.Message, s.Service, s.Scope} {
		dst = appendString(dst, str)
	}
	dst = binary.AppendVarint(dst, s.Start)
	if flags&flagEndBefore != 0 {
		dst = binary.AppendVarint(dst, s.End)
	} else {
		dst = binary.AppendUvarint(dst, uint64(s.End-s.Start))
	}
	dst = appendAttrs(dst, s.Attrs)
	dst = binary.AppendUvarint(dst, uint64(len(s.Events)))
	for i := range s.Events {
		e := &s.Events[i]
		dst = appendString(dst, e.Name)
		dst = binary.AppendVarint(dst, e.Time)
		dst = appendAttrs(dst, e.Attrs)
	}
	return dst
}

// rawHex reports whether id is n bytes in lower-case hex, as convert
// writes ids, so that decoding gives the same string back.
func rawHex(id string, n int) bool {
	if len(id) != 2*n {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func appendID(dst []byte, id string, raw bool) []byte {
	if !raw {
		return appendString(dst, id)
	}
	n := len(dst)
	dst = append(dst, make([]byte, len(id)/2)...)
	_, _ = hex.Decode(dst[n:], []byte(id))
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendAttrs(dst []byte, attrs Attrs) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(attrs)))
	for _, a := range attrs { // sorted: equal spans encode to equal bytes
		if code, ok := wellKnownIndex[a.Key]; ok {
			dst = binary.AppendUvarint(dst, code)
		} else {
			dst = append(dst, 0)
			dst = appendString(dst, a.Key)
		}
		dst = appendString(dst, a.Value)
	}
	return dst
}

var errShort = errors.New("truncated")

// spanReader reads a stored span.
type spanReader struct {
	b   []byte
	err error
}

func (r *spanReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *spanReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *spanReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// string reads a string. Every string Save stores is valid UTF-8 (OTLP's
// JSON and protobuf both hold text so): one that is not was damaged after
// it was stored, and the span does not decode.
func (r *spanReader) string() string {
	b := r.bytes(r.uvarint())
	if r.err == nil && !utf8.Valid(b) {
		r.err = errNotText
		return ""
	}
	return string(b)
}

// errNotText is a stored string that is not UTF-8 text.
var errNotText = errors.New("a string that is not UTF-8 text")

func (r *spanReader) id(raw bool, n uint64) string {
	if raw {
		return hex.EncodeToString(r.bytes(n))
	}
	return r.string()
}

func (r *spanReader) attrs() Attrs {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	a := make(Attrs, 0, n)
	inOrder := true
	for ; n > 0 && r.err == nil; n-- {
		var k string
		switch code := r.uvarint(); {
		case code == 0:
			k = r.string()
		case code <= uint64(len(wellKnownKeys)):
			k = wellKnownKeys[code-1]
		default:
			r.err = fmt.Errorf("unknown attribute key %d", code)
		}
		if len(a) > 0 && k <= a[len(a)-1].Key {
			inOrder = false
		}
		a = append(a, Attr{k, r.string()})
	}
	if !inOrder {
		a = keptAttrs(a, nil) // written by hand, or by another tool: kept as a map would keep them
	}
	return a
}

// decodeSpan reads a stored span, in either encoding.
func decodeSpan(b []byte, s *Span) error {
	if len(b) > 0 && b[0] == '{' {
		return json.Unmarshal(b, s)
	}
	if len(b) < 2 || b[0] != spanBinary {
		return fmt.Errorf("unknown span encoding")
	}
	flags := b[1]
	r := spanReader{b: b[2:]}
	*s = Span{}
	s.TraceID = r.id(flags&flagTraceRaw != 0, 16)
	s.SpanID = r.id(flags&flagSpanRaw != 0, 8)
	s.ParentID = r.id(flags&flagParentRaw != 0, 8)
	s.Name, s.Kind, s.Status = r.string(), r.string(), r.string()
	s.Message, s.Service, s.Scope = r.string(), r.string(), r.string()
	s.Start = r.varint()
	if flags&flagEndBefore != 0 {
		s.End = r.varint()
	} else {
		s.End = s.Start + int64(r.uvarint())
	}
	s.Attrs = r.attrs()
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errShort
	}
	for ; n > 0 && r.err == nil; n-- {
		e := SpanEvent{Name: r.string(), Time: r.varint()}
		e.Attrs = r.attrs()
		s.Events = append(s.Events, e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	return r.err
}

// storedSpanID reads the span id of a stored span, in either encoding,
// without decoding the rest.
func storedSpanID(b []byte) (string, error) {
	if len(b) > 0 && b[0] == '{' {
		var s Span
		err := decodeSpan(b, &s)
		return s.SpanID, err
	}
	if len(b) < 2 || b[0] != spanBinary {
		return "", fmt.Errorf("unknown span encoding")
	}
	r := spanReader{b: b[2:]}
	r.id(b[1]&flagTraceRaw != 0, 16)
	id := r.id(b[1]&flagSpanRaw != 0, 8)
	return id, r.err
}

// sameSpan reports whether the stored span old is the span whose new
// encoding is enc: a re-sent batch, in either encoding.
func sameSpan(old, enc []byte) bool {
	if len(old) > 0 && old[0] == '{' {
		var s Span
		if json.Unmarshal(old, &s) != nil {
			return false
		}
		return string(encodeSpan(nil, &s)) == string(enc)
	}
	return string(old) == string(enc)
}
