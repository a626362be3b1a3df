package jaeger

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/otlp"
)

// The JSON of Jaeger's UI and query API v1 (jaeger's model/json): times
// in microseconds since the epoch, ids in hex, typed key-values.
type (
	uiTrace struct {
		TraceID   string               `json:"traceID"`
		Spans     []json.RawMessage    `json:"spans"`
		Processes map[string]uiProcess `json:"processes"`
	}
	uiSpan struct {
		TraceID       string        `json:"traceID"`
		SpanID        string        `json:"spanID"`
		ParentSpanID  string        `json:"parentSpanID"` // older writers; references replace it
		OperationName string        `json:"operationName"`
		References    []uiReference `json:"references"`
		StartTime     uint64        `json:"startTime"`
		Duration      uint64        `json:"duration"`
		Tags          []uiKeyValue  `json:"tags"`
		Logs          []uiLog       `json:"logs"`
		ProcessID     string        `json:"processID"`
		Process       *uiProcess    `json:"process"`
	}
	uiReference struct {
		RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	uiProcess struct {
		ServiceName string       `json:"serviceName"`
		Tags        []uiKeyValue `json:"tags"`
	}
	uiLog struct {
		Timestamp uint64       `json:"timestamp"`
		Fields    []uiKeyValue `json:"fields"`
	}
	uiKeyValue struct {
		Key   string          `json:"key"`
		Type  string          `json:"type"` // string, bool, int64, float64, binary
		Value json.RawMessage `json:"value"`
	}
	uiError struct {
		Code    int    `json:"code"`
		Msg     string `json:"msg"`
		TraceID string `json:"traceID"`
	}
)

// decodeUI decodes API v1 JSON, a trace at a time, keeping the line each
// span starts on to name it in errors.
func decodeUI(data []byte, fn func(otlp.Batch) error) error {
	var doc struct {
		Data   json.RawMessage `json:"data"`
		Errors []uiError       `json:"errors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not %s: %w", FormatUI, err)
	}
	dataLine := 1
	if m, err := otlp.Members(data, "data"); err == nil && len(m) > 0 {
		dataLine = m[0].Line
	}
	if string(doc.Data) == "null" || len(bytes.TrimSpace(doc.Data)) == 0 {
		if len(doc.Errors) > 0 {
			e := doc.Errors[0]
			return fmt.Errorf("Jaeger answered an error, not a trace: %d %s", e.Code, e.Msg)
		}
		return errors.New(`no spans in this Jaeger file ("data" is null)`)
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return atLine(dataLine, fmt.Errorf(`not %s: "data" is not a list of traces`, FormatUI))
	}
	counted, newlines := 0, 0
	for dec.More() {
		start := valueStart(doc.Data, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("not %s: %w", FormatUI, err)
		}
		newlines += bytes.Count(doc.Data[counted:start], []byte{'\n'})
		counted = start
		line := dataLine + newlines
		if err := decodeTrace(raw, line, fn); err != nil {
			return err
		}
	}
	return nil
}

// decodeTrace maps one trace of API v1 JSON, which starts on line, to
// OTLP and hands its spans to fn.
func decodeTrace(raw []byte, line int, fn func(otlp.Batch) error) error {
	var t uiTrace
	if err := json.Unmarshal(raw, &t); err != nil {
		return typeFault(raw, line, "", err)
	}
	// A span's line, from where its object starts in the trace.
	spansAt := line
	if m, err := otlp.Members(raw, "spans"); err == nil && len(m) > 0 {
		spansAt = line + m[0].Line - 1
	}
	b := newBuilder(t.Processes)
	lines := map[string]int{}
	spansRaw, _ := otlp.Members(raw, "spans")
	var arr []byte
	if len(spansRaw) > 0 {
		arr = spansRaw[0].Value
	}
	offsets := elementStarts(arr)
	// The lines before each span are counted on from the span before, so
	// a trace of n spans costs one pass over its bytes, not n.
	counted, newlines := 0, 0
	for i, sr := range t.Spans {
		at := spansAt
		if i < len(offsets) {
			newlines += bytes.Count(arr[counted:offsets[i]], []byte{'\n'})
			counted = offsets[i]
			at += newlines
		}
		var s uiSpan
		if err := json.Unmarshal(sr, &s); err != nil {
			return typeFault(sr, at, spanName(sr), err)
		}
		// A span is named by the line of its id, as an OTLP span is.
		if k := bytes.Index(sr, []byte(`"spanID"`)); k >= 0 {
			at += bytes.Count(sr[:k], []byte{'\n'})
		}
		id, err := b.add(s)
		if err != nil {
			return atLine(at, err)
		}
		lines[id] = at
	}
	spans, err := otlp.Spans(b.td)
	if err == nil {
		err = fn(otlp.Batch{Spans: spans})
	}
	return otlp.SpanLine(err, lines)
}

// typeFault says where in raw, which starts on line, a value has a type
// Jaeger's model does not give it, and in which span.
func typeFault(raw []byte, line int, span string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		at := line + bytes.Count(raw[:min(int(te.Offset), len(raw))], []byte{'\n'})
		where := ""
		if span != "" {
			where = "span " + span + ", "
		}
		return atLine(at, fmt.Errorf("not %s: %sfield %s: expected %s, found %s", FormatUI, where, te.Field, te.Type, te.Value))
	}
	return atLine(line, fmt.Errorf("not %s: %w", FormatUI, err))
}

// spanName is the spanID a span's JSON gives, for an error about it.
func spanName(raw []byte) string {
	var s struct {
		SpanID any `json:"spanID"`
	}
	_ = json.Unmarshal(raw, &s)
	if id, ok := s.SpanID.(string); ok {
		return id
	}
	return ""
}

// elementStarts are the offsets in arr (a JSON array) where each element
// starts.
func elementStarts(arr []byte) []int {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil
	}
	var out []int
	for dec.More() {
		out = append(out, valueStart(arr, dec.InputOffset()))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return out
}

// valueStart is the offset of the value that follows off in doc, past
// white space and a comma.
func valueStart(doc []byte, off int64) int {
	i := int(off)
	for i < len(doc) && (doc[i] == ',' || doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\r' || doc[i] == '\n') {
		i++
	}
	return i
}

func atLine(line int, err error) error {
	if err == nil || line == 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", line, err)
}

// builder assembles one trace's spans into OTLP: a ResourceSpans for each
// process, a ScopeSpans for each instrumentation scope within it.
type builder struct {
	td        ptrace.Traces
	processes map[string]uiProcess
	resources map[string]ptrace.ResourceSpans
	scopes    map[[3]string]ptrace.SpanSlice
}

func newBuilder(processes map[string]uiProcess) *builder {
	return &builder{td: ptrace.NewTraces(), processes: processes,
		resources: map[string]ptrace.ResourceSpans{}, scopes: map[[3]string]ptrace.SpanSlice{}}
}

// add maps s and returns its span id in hex.
func (b *builder) add(s uiSpan) (string, error) {
	spanID, err := spanIDOf(s.SpanID)
	if err != nil {
		return "", &otlp.SpanError{SpanID: s.SpanID, Reason: "spanID: " + err.Error()}
	}
	name := hex.EncodeToString(spanID[:])
	traceID, err := traceIDOf(s.TraceID)
	if err != nil {
		return name, &otlp.SpanError{SpanID: name, Reason: "traceID: " + err.Error()}
	}
	proc, procKey := s.process(b.processes)
	if proc == nil {
		return name, &otlp.SpanError{SpanID: name, Reason: fmt.Sprintf("processID %q is not among the trace's processes", s.ProcessID)}
	}
	rs, ok := b.resources[procKey]
	if !ok {
		rs = b.td.ResourceSpans().AppendEmpty()
		attrs := rs.Resource().Attributes()
		attrs.PutStr("service.name", proc.ServiceName)
		for _, kv := range proc.Tags {
			if err := put(attrs, kv); err != nil {
				return name, &otlp.SpanError{SpanID: name, Reason: "process tag " + err.Error()}
			}
		}
		b.resources[procKey] = rs
	}

	var scope, version string
	var kind ptrace.SpanKind
	var statusCode, statusMsg, traceState string
	errorTag := false
	attrs := pcommon.NewMap()
	for _, kv := range s.Tags {
		// The tags Jaeger's OpenTelemetry mapping gives a meaning of
		// their own; every other is an attribute.
		switch kv.Key {
		case "span.kind":
			kind = spanKind(kv.str())
			continue
		case "otel.status_code":
			statusCode = kv.str()
			continue
		case "otel.status_description":
			statusMsg = kv.str()
			continue
		case "otel.scope.name", "otel.library.name":
			scope = kv.str()
			continue
		case "otel.scope.version", "otel.library.version":
			version = kv.str()
			continue
		case "w3c.tracestate":
			traceState = kv.str()
			continue
		case "error":
			if v := kv.str(); v == "true" {
				errorTag = true
				continue
			}
		}
		if err := put(attrs, kv); err != nil {
			return name, &otlp.SpanError{SpanID: name, Reason: "tag " + err.Error()}
		}
	}
	key := [3]string{procKey, scope, version}
	spans, ok := b.scopes[key]
	if !ok {
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scope)
		ss.Scope().SetVersion(version)
		spans = ss.Spans()
		b.scopes[key] = spans
	}
	sp := spans.AppendEmpty()
	sp.SetTraceID(traceID)
	sp.SetSpanID(spanID)
	sp.SetName(s.OperationName)
	sp.SetKind(kind)
	sp.TraceState().FromRaw(traceState)
	start := pcommon.Timestamp(s.StartTime * 1000)
	sp.SetStartTimestamp(start)
	sp.SetEndTimestamp(start + pcommon.Timestamp(s.Duration*1000))
	attrs.MoveTo(sp.Attributes())
	switch {
	case strings.EqualFold(statusCode, "ERROR"):
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(statusMsg)
	case strings.EqualFold(statusCode, "OK"):
		sp.Status().SetCode(ptrace.StatusCodeOk)
	case errorTag:
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(statusMsg)
	}

	// The parent is the first reference within the trace, a CHILD_OF
	// before a FOLLOWS_FROM; the other references are links.
	parent := -1
	for _, want := range []string{"CHILD_OF", "FOLLOWS_FROM"} {
		for i, r := range s.References {
			if parent < 0 && strings.EqualFold(r.RefType, want) && sameTrace(r.TraceID, traceID) {
				parent = i
			}
		}
	}
	for i, r := range s.References {
		id, err := spanIDOf(r.SpanID)
		if err != nil {
			return name, &otlp.SpanError{SpanID: name, Reason: "reference spanID: " + err.Error()}
		}
		if i == parent {
			sp.SetParentSpanID(id)
			continue
		}
		tid, err := traceIDOf(r.TraceID)
		if err != nil {
			return name, &otlp.SpanError{SpanID: name, Reason: "reference traceID: " + err.Error()}
		}
		l := sp.Links().AppendEmpty()
		l.SetTraceID(tid)
		l.SetSpanID(id)
		l.Attributes().PutStr("opentracing.ref_type", strings.ToLower(r.RefType))
	}
	if parent < 0 && s.ParentSpanID != "" {
		id, err := spanIDOf(s.ParentSpanID)
		if err != nil {
			return name, &otlp.SpanError{SpanID: name, Reason: "parentSpanID: " + err.Error()}
		}
		if !id.IsEmpty() {
			sp.SetParentSpanID(id)
		}
	}

	// Logs are events, named by their "event" field.
	for _, l := range s.Logs {
		ev := sp.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(l.Timestamp * 1000))
		for _, kv := range l.Fields {
			if kv.Key == "event" && ev.Name() == "" {
				ev.SetName(kv.str())
				continue
			}
			if err := put(ev.Attributes(), kv); err != nil {
				return name, &otlp.SpanError{SpanID: name, Reason: "log field " + err.Error()}
			}
		}
	}
	return name, nil
}

// process is a span's process, from the trace's processes or its own,
// and a key for it.
func (s uiSpan) process(processes map[string]uiProcess) (*uiProcess, string) {
	if p, ok := processes[s.ProcessID]; ok {
		return &p, "id:" + s.ProcessID
	}
	if s.Process != nil {
		b, _ := json.Marshal(s.Process)
		return s.Process, "inline:" + string(b)
	}
	return nil, ""
}

func sameTrace(ref string, id pcommon.TraceID) bool {
	t, err := traceIDOf(ref)
	return err == nil && t == id
}

func spanKind(k string) ptrace.SpanKind {
	switch strings.ToLower(k) {
	case "client":
		return ptrace.SpanKindClient
	case "server":
		return ptrace.SpanKindServer
	case "producer":
		return ptrace.SpanKindProducer
	case "consumer":
		return ptrace.SpanKindConsumer
	case "internal":
		return ptrace.SpanKindInternal
	}
	return ptrace.SpanKindUnspecified
}

// hexID decodes an id Jaeger writes in hex, its leading zeros left out
// or not, into n bytes.
func hexID(s string, n int) ([]byte, error) {
	if s == "" || len(s) > 2*n {
		return nil, fmt.Errorf("%q is not an id of up to %d hex digits", s, 2*n)
	}
	b, err := hex.DecodeString(strings.Repeat("0", 2*n-len(s)) + s)
	if err != nil {
		return nil, fmt.Errorf("%q is not an id of up to %d hex digits", s, 2*n)
	}
	return b, nil
}

func traceIDOf(s string) (pcommon.TraceID, error) {
	b, err := hexID(s, 16)
	if err != nil {
		return pcommon.TraceID{}, err
	}
	return pcommon.TraceID(b), nil
}

func spanIDOf(s string) (pcommon.SpanID, error) {
	b, err := hexID(s, 8)
	if err != nil {
		return pcommon.SpanID{}, err
	}
	return pcommon.SpanID(b), nil
}

// str is a key-value's value as text.
func (kv uiKeyValue) str() string {
	var s string
	if json.Unmarshal(kv.Value, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(kv.Value))
}

// put adds kv to m with the type its "type" gives.
func put(m pcommon.Map, kv uiKeyValue) error {
	bad := func() error {
		return fmt.Errorf("%q: value %s is not of type %q", kv.Key, bytes.TrimSpace(kv.Value), kv.Type)
	}
	switch strings.ToLower(kv.Type) {
	case "", "string":
		m.PutStr(kv.Key, kv.str())
	case "bool":
		v, err := strconv.ParseBool(kv.str())
		if err != nil {
			return bad()
		}
		m.PutBool(kv.Key, v)
	case "int64":
		v, err := strconv.ParseInt(kv.str(), 10, 64)
		if err != nil {
			return bad()
		}
		m.PutInt(kv.Key, v)
	case "float64":
		v, err := strconv.ParseFloat(kv.str(), 64)
		if err != nil {
			return bad()
		}
		m.PutDouble(kv.Key, v)
	case "binary":
		v, err := base64.StdEncoding.DecodeString(kv.str())
		if err != nil {
			return bad()
		}
		m.PutEmptyBytes(kv.Key).FromRaw(v)
	default:
		return fmt.Errorf("%q: unknown type %q (Jaeger's are string, bool, int64, float64, binary)", kv.Key, kv.Type)
	}
	return nil
}
