// Package otlp reads OpenTelemetry traces of AI agents (OTLP/JSON, the OTLP
// file exporter's JSON Lines, OTLP protobuf, gzip of any, and live
// OTLP/HTTP) and translates their spans into retrylab's source-neutral
// trace events (engine/trace). It also writes retrylab's own executions back
// out as OTLP/JSON.
//
// Spans are kept as they arrived, in a compact form (Span), in buckets this
// package owns; a trace's events are derived from its spans when it is read,
// so spans that arrive in several batches (a live receiver) or out of order
// make the same execution as spans that arrived at once. The adapter
// translates; the fold decides what the events mean.
package otlp

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Span is one span as retrylab keeps it: ids in hex, times in Unix
// nanoseconds, attributes flattened to strings.
type Span struct {
	// Import is the file import that wrote the span (0: the receiver); the
	// index keeps it, not the span.
	Import   uint64 `json:"-"`
	TraceID  string `json:"trace"`
	SpanID   string `json:"span"`
	ParentID string `json:"parent,omitempty"`
	Name     string `json:"name"`
	Kind     string `json:"kind,omitempty"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	// Status is "ok", "error" or "" (unset); Message is the status message.
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// Service is the resource's service.name; Scope the instrumentation scope.
	Service string `json:"service,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Attrs   Attrs  `json:"attrs,omitempty"`
	// Events are the span's events (exceptions, mostly), by name, with
	// their attributes.
	Events []SpanEvent `json:"events,omitempty"`
}

// SpanEvent is an event recorded on a span.
type SpanEvent struct {
	Name  string `json:"name"`
	Time  int64  `json:"time"`
	Attrs Attrs  `json:"attrs,omitempty"`
}

// maxAttr bounds an attribute value kept from a span. Arguments and results
// of tool calls are kept whole (they are what the audit compares); other
// values longer than this (model prompts, mostly) are cut, saying so.
const maxAttr = 4 << 10

// Limits on time: a span outside them is refused, since a clock that far off
// makes every duration and ordering in the trace meaningless.
var (
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
)

// SpanError is a span that cannot be imported; it names the span.
type SpanError struct {
	SpanID string
	Reason string
}

func (e *SpanError) Error() string {
	if e.SpanID == "" {
		return "span: " + e.Reason
	}
	return "span " + e.SpanID + ": " + e.Reason
}

// Spans converts decoded traces into retrylab's spans, refusing a span
// with an empty or zero id, no name, a time outside 2000-2200, or an end
// before its start: the first such span fails the whole batch.
func Spans(td ptrace.Traces) ([]Span, error) {
	out := make([]Span, 0, td.SpanCount())
	err := each(td, func(s Span, err error) error {
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// SpansLenient converts what it can and counts the spans it refuses, with
// the first refusal's reason: the OTLP receiver's partial success.
func SpansLenient(td ptrace.Traces) (spans []Span, rejected int, first error) {
	spans = make([]Span, 0, td.SpanCount())
	_ = each(td, func(s Span, err error) error {
		if err != nil {
			rejected++
			if first == nil {
				first = err
			}
			return nil
		}
		spans = append(spans, s)
		return nil
	})
	return spans, rejected, first
}

// eachDropping is each, which also drops from td the spans it converted,
// n at a time.
func eachDropping(td ptrace.Traces, n int, fn func(Span, error) error) error {
	return eachScope(td, func(spans ptrace.SpanSlice, service, scope string, trace *traceHex) error {
		for spans.Len() > 0 {
			m := min(n, spans.Len())
			for k := 0; k < m; k++ {
				if err := fn(convert(spans.At(k), service, scope, trace)); err != nil {
					return err
				}
			}
			dropped := 0
			spans.RemoveIf(func(ptrace.Span) bool {
				dropped++
				return dropped <= m
			})
		}
		return nil
	})
}

// each calls fn with each span of td as convert makes it, or the error
// that refuses it.
func each(td ptrace.Traces, fn func(Span, error) error) error {
	return eachScope(td, func(spans ptrace.SpanSlice, service, scope string, trace *traceHex) error {
		for k := 0; k < spans.Len(); k++ {
			if err := fn(convert(spans.At(k), service, scope, trace)); err != nil {
				return err
			}
		}
		return nil
	})
}

// eachScope calls fn with the spans of each scope of td, their resource's
// service name and the scope's name; the scopes of one resource share a
// traceHex.
func eachScope(td ptrace.Traces, fn func(spans ptrace.SpanSlice, service, scope string, trace *traceHex) error) error {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		var trace traceHex
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			if err := fn(ss.Spans(), service, ss.Scope().Name(), &trace); err != nil {
				return err
			}
		}
	}
	return nil
}

// traceHex is the last trace id convert wrote in hex: a batch's spans come
// a trace at a time, so they share one string. It also keeps the last two
// span ids written, for the parent ids that name them: a trace's spans
// mostly have a few parents, written just before them.
type traceHex struct {
	id    pcommon.TraceID
	hex   string
	spans [2]spanHex
	next  int
}

type spanHex struct {
	id  pcommon.SpanID
	hex string
}

func (t *traceHex) of(id pcommon.TraceID) string {
	if t.hex == "" || id != t.id {
		t.id, t.hex = id, hex.EncodeToString(id[:])
	}
	return t.hex
}

// span is id in hex, from the last ones written when it is one of them.
func (t *traceHex) span(id pcommon.SpanID) string {
	for _, s := range t.spans {
		if s.hex != "" && s.id == id {
			return s.hex
		}
	}
	h := hex.EncodeToString(id[:])
	t.spans[t.next] = spanHex{id, h}
	t.next = (t.next + 1) % len(t.spans)
	return h
}

// kindName is a span kind as retrylab keeps it, in lower case.
func kindName(k ptrace.SpanKind) string {
	switch k {
	case ptrace.SpanKindInternal:
		return "internal"
	case ptrace.SpanKindServer:
		return "server"
	case ptrace.SpanKindClient:
		return "client"
	case ptrace.SpanKindProducer:
		return "producer"
	case ptrace.SpanKindConsumer:
		return "consumer"
	}
	return strings.ToLower(k.String())
}

func convert(s ptrace.Span, service, scope string, trace *traceHex) (Span, error) {
	sp := Span{Name: s.Name(), Service: service, Scope: scope,
		Start: int64(s.StartTimestamp()), End: int64(s.EndTimestamp())}
	if err := trace.check(&sp, s.TraceID(), s.SpanID(), s.ParentSpanID()); err != nil {
		return sp, err
	}
	sp.Status = statusName(s.Status().Code())
	sp.Message = s.Status().Message()
	sp.Kind = spanKind(s.Kind())
	sp.Attrs = flatten(s.Attributes())
	evs := s.Events()
	for i := 0; i < evs.Len(); i++ {
		e := evs.At(i)
		sp.Events = append(sp.Events, SpanEvent{Name: e.Name(), Time: int64(e.Timestamp()), Attrs: flatten(e.Attributes())})
	}
	return sp, nil
}

// check writes sp's ids in hex and refuses it, as convert and the
// protobuf decoder (protospans.go) both do, for an empty span or trace
// id, a parent that is itself, no name, a time outside 2000-2200 or an
// end before its start. sp's name and times are set.
func (t *traceHex) check(sp *Span, tid pcommon.TraceID, sid, pid pcommon.SpanID) error {
	if sid.IsEmpty() {
		return &SpanError{Reason: fmt.Sprintf("%q has an empty span id", sp.Name)}
	}
	sp.SpanID = t.span(sid)
	if tid.IsEmpty() {
		return &SpanError{SpanID: sp.SpanID, Reason: "empty trace id"}
	}
	sp.TraceID = t.of(tid)
	if !pid.IsEmpty() {
		sp.ParentID = t.span(pid)
		if sp.ParentID == sp.SpanID {
			return &SpanError{SpanID: sp.SpanID, Reason: "is its own parent"}
		}
	}
	if sp.Name == "" {
		return &SpanError{SpanID: sp.SpanID, Reason: "has no name"}
	}
	if err := checkTime(sp.Start, "start"); err != nil {
		return &SpanError{SpanID: sp.SpanID, Reason: err.Error()}
	}
	if err := checkTime(sp.End, "end"); err != nil {
		return &SpanError{SpanID: sp.SpanID, Reason: err.Error()}
	}
	if sp.End < sp.Start {
		return &SpanError{SpanID: sp.SpanID, Reason: fmt.Sprintf("ends %s before it starts", time.Duration(sp.Start-sp.End))}
	}
	return nil
}

// statusName is a status code as Span.Status keeps it.
func statusName(c ptrace.StatusCode) string {
	switch c {
	case ptrace.StatusCodeOk:
		return "ok"
	case ptrace.StatusCodeError:
		return "error"
	}
	return ""
}

// spanKind is a kind as Span.Kind keeps it: "" when unspecified.
func spanKind(k ptrace.SpanKind) string {
	if k == ptrace.SpanKindUnspecified {
		return ""
	}
	return kindName(k)
}

func checkTime(ns int64, what string) error {
	if ns < minTime || ns > maxTime {
		return fmt.Errorf("%s time %s is outside 2000-2200 (a zero or corrupt timestamp?)",
			what, time.Unix(0, ns).UTC().Format(time.RFC3339))
	}
	return nil
}

// keepWhole are the attributes kept whatever their length: a tool call's
// arguments and result in each emitter's naming.
var keepWhole = map[string]bool{}

func init() {
	for _, k := range argKeys {
		keepWhole[k] = true
	}
	for _, k := range resultKeys {
		keepWhole[k] = true
	}
}

func flatten(m pcommon.Map) Attrs {
	if m.Len() == 0 {
		return nil
	}
	out := make([]Attr, 0, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		s := attrString(v)
		if v.Type() == pcommon.ValueTypeSlice && v.Slice().Len() == 1 && strings.HasPrefix(k, "http.request.header.") {
			s = attrString(v.Slice().At(0)) // header values are arrays of one
		}
		out = append(out, Attr{k, cutAttr(k, s)})
		return true
	})
	return keptAttrs(out, nil)
}

// cutAttr is value s of attribute k as a span keeps it: cut to maxAttr
// bytes (on a rune's start), saying so, unless k is kept whole.
func cutAttr(k, s string) string {
	if len(s) <= maxAttr || keepWhole[k] {
		return s
	}
	cut := maxAttr
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes cut)", s[:cut], len(s)-cut)
}
