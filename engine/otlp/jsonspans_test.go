package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// jsonSameAsPdata says how decodeJSONSpans and pdata's decoder followed
// by Spans differ on doc: "" when the fast path declined it, or made the
// same spans, count and refusal. declined says which.
func jsonSameAsPdata(doc []byte) (declined bool, diff string) {
	got, err := decodeJSONSpans(doc)
	if errors.Is(err, errJSONDecline) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("an error other than declining: %v", err)
	}
	td, perr := unmarshalJSON(doc)
	if perr != nil {
		return false, fmt.Sprintf("the fast path answered, pdata refused: %v", perr)
	}
	if td.ResourceSpans().Len() == 0 {
		return false, "the fast path answered a document without resource spans"
	}
	want, werr := Spans(td)
	spans := []Span{}
	for i, piece := range got.pieces {
		if len(piece) > deliverSpans || len(piece) < deliverSpans && i < len(got.pieces)-1 {
			return false, fmt.Sprintf("piece %d of %d holds %d spans", i, len(got.pieces), len(piece))
		}
		spans = append(spans, piece...)
	}
	if got.n != len(spans) {
		return false, fmt.Sprintf("%d spans in pieces, said %d", len(spans), got.n)
	}
	if got.count != td.SpanCount() {
		return false, fmt.Sprintf("counted %d spans, pdata %d", got.count, td.SpanCount())
	}
	if fmt.Sprint(got.refused) != fmt.Sprint(werr) {
		return false, fmt.Sprintf("refused with %v, Spans with %v", got.refused, werr)
	}
	if werr != nil && !reflect.DeepEqual(got.refused, werr) {
		return false, fmt.Sprintf("refusal %#v, Spans' %#v", got.refused, werr)
	}
	if len(spans) != len(want) {
		return false, fmt.Sprintf("%d spans, Spans %d", len(spans), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(spans[i], want[i]) {
			return false, fmt.Sprintf("span %d:\n got %#v\nwant %#v", i, spans[i], want[i])
		}
	}
	return false, ""
}

// jsonDocuments are the OTLP/JSON documents of the repository and the
// shared real traces, by name: a JSON Lines file's lines each one.
func jsonDocuments(t testing.TB) map[string][]byte {
	t.Helper()
	var paths []string
	for _, pattern := range []string{
		"../../fixtures/otlp/*.json", "../../fixtures/otlp/*.jsonl",
		"testdata/frameworks/*.json",
		"../../interop/recordings/*.json",
		"../../testdata/*/export.json",
		"../../../shared/real-traces/*.json",
		"../../../shared/real-traces/frameworks/*.otlp.json",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	docs := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(p, ".jsonl") {
			docs[p] = data
			continue
		}
		for n, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				docs[fmt.Sprintf("%s:%d", p, n+1)] = line
			}
		}
	}
	return docs
}

// TestJSONSpansFixtures holds the fast path to pdata on every OTLP/JSON
// file at hand, and to answering (not declining) those written by SDKs,
// collectors and pdata.
func TestJSONSpansFixtures(t *testing.T) {
	t.Parallel()
	docs := jsonDocuments(t)
	if len(docs) < 40 {
		t.Fatalf("only %d documents found", len(docs))
	}
	var declined []string
	for name, doc := range docs {
		d, diff := jsonSameAsPdata(doc)
		if diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
		if d {
			declined = append(declined, name)
		}
	}
	t.Logf("%d of %d documents declined: %v", len(declined), len(docs), declined)
	for _, name := range declined {
		base := filepath.Base(name)
		// Only what is not OTLP/JSON may be declined: the shared ADK and
		// Temporal exports (another format, or a truth file), and a
		// file of logs beside its spans (resourceLogs: pdata skips it).
		if strings.Contains(name, "/real-traces/") && !strings.Contains(name, "/frameworks/") ||
			bytes.Contains(docs[name], []byte(`"resourceLogs"`)) {
			continue
		}
		t.Errorf("%s declined: an SDK's, collector's or pdata's file", base)
	}
}

// TestJSONSpansRich holds the fast path to pdata on what pdata's own
// marshaler writes of spans of every shape (richTraces), whole and with
// each span refused in turn.
func TestJSONSpansRich(t *testing.T) {
	t.Parallel()
	td := richTraces()
	doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if declined, diff := jsonSameAsPdata(doc); declined || diff != "" {
		t.Fatalf("declined %v: %s", declined, diff)
	}
}

// jsonDoc is a document of one span with the given members added to it
// (after a comma) and attributes.
func jsonDoc(members, attrs string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
		`"scopeSpans":[{"scope":{"name":"sc"},"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708",` +
		`"name":"tool","startTimeUnixNano":"1758000000000000000","endTimeUnixNano":"1758000000000000001"` +
		members + `,"attributes":[` + attrs + `]}]}]}]}`
}

// jsonCases are documents the fast path must answer, each as pdata does.
var jsonCases = map[string]string{
	"a key twice": jsonDoc(``, `{"key":"a","value":{"stringValue":"1"}},{"key":"b","value":{"intValue":2}},{"key":"a","value":{"stringValue":"3"}}`),
	"every kind": jsonDoc("", `{"key":"s","value":{"stringValue":"x"}},{"key":"b","value":{"boolValue":true}},
		{"key":"f","value":{"boolValue":false}},{"key":"i","value":{"intValue":"-42"}},{"key":"i2","value":{"intValue":7}},
		{"key":"d","value":{"doubleValue":1.5}},{"key":"d2","value":{"doubleValue":"2.25"}},{"key":"d3","value":{"doubleValue":1e300}},
		{"key":"d4","value":{"doubleValue":0.1}},{"key":"d5","value":{"doubleValue":-0}},{"key":"d6","value":{"doubleValue":123456789012345678901234}},
		{"key":"d7","value":{"doubleValue":0.30000000000000004}},{"key":"d8","value":{"doubleValue":1E-7}},
		{"key":"by","value":{"bytesValue":"aGVsbG8="}},{"key":"by0","value":{"bytesValue":""}},{"key":"e","value":{}},{"key":"e2"}`),
	"nested": jsonDoc("", `{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"<&>"},{"intValue":"1"},{"doubleValue":2.5},
		{"doubleValue":1e-9},{"boolValue":false},{},{"bytesValue":""},{"bytesValue":"AQI="},{"arrayValue":{}},{"kvlistValue":{"values":[]}},
		{"kvlistValue":{"values":[{"key":"z","value":{"stringValue":"1"}},{"key":"a","value":{"arrayValue":{"values":[{"intValue":3}]}}},{"key":"z","value":{"stringValue":"2"}},{"key":"n"}]}}]}}},
		{"key":"kv","value":{"kvlistValue":{"values":[{"value":{"stringValue":"no key"}},{"key":"\u00e9\"","value":{"doubleValue":"1e21"}}]}}},
		{"key":"http.request.header.x","value":{"arrayValue":{"values":[{"stringValue":"one"}]}}},
		{"key":"http.request.header.y","value":{"arrayValue":{"values":[{"stringValue":"one"},{"stringValue":"two"}]}}},
		{"key":"http.request.header.z","value":{"arrayValue":{"values":[{"kvlistValue":{"values":[{"key":"k","value":{"intValue":1}}]}}]}}}`),
	"escapes": jsonDoc(`,"status":{"code":2,"message":"b\u00e4d \ud83d\ude00 \\ \/ \" \b\f\n\r\t"}`,
		`{"key":"k\n\u0041","value":{"stringValue":"line\nnext \u0000 \u00e9 é 😀 \ud83d\ude00 <&> \"q\""}},
		{"value":{"stringValue":"key after"},"key":"later\t"},
		{"key":"bad utf8","value":{"stringValue":"`+"\xff\xfe"+`"}},
		{"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"`+"\xff"+` \u2028 </script>"}]}}}`),
	"times as numbers": jsonDoc(`,"kind":3,"flags":257,"droppedAttributesCount":0,"droppedEventsCount":"2","droppedLinksCount":1,"traceState":"a=b",
		"parentSpanId":"","events":[{"timeUnixNano":1758000000000000000,"name":"exception","attributes":[{"key":"exception.message","value":{"stringValue":"boom"}}],"droppedAttributesCount":1},
		{"name":"late","timeUnixNano":"1758000000000000005"},{}],
		"links":[{"traceId":"0102030405060708090a0b0c0d0e0f11","spanId":"0102030405060709","traceState":"","attributes":[{"key":"l","value":{"intValue":1}}],"flags":1,"droppedAttributesCount":0},{}]`, ``),
	"upper hex ids": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090A0B0C0D0E0F10","spanId":"0102030405060708","parentSpanId":"0102030405060709","name":"n","startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000}]}]}]}`,
	"empty":         `{"resourceSpans":[{}]}`,
	"logs beside": `{"resourceLogs":[{"resource":{},"scopeLogs":[{"logRecords":[{"body":{"stringValue":"\u00e9 \ud83d\ude00"},"n":-1.5e3,"t":true,"f":false,"z":null,"a":[[],{}]}]}]}],
		"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}],"resourceMetrics":[]}`,
	"empty scope": `{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[]},{}],"schemaUrl":"x"}]}`,
	"resource late": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"n","startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000}],"scope":{"name":"late scope","version":"1","attributes":[{"key":"a","value":{"stringValue":"b"}}],"droppedAttributesCount":3}}],
		"resource":{"attributes":[{"key":"x","value":{"intValue":1}},{"key":"service.name","value":{"stringValue":"late"}},{"key":"service.name","value":{"stringValue":"second"}}],"droppedAttributesCount":1,"entityRefs":[{"type":"service","schemaUrl":"","idKeys":["service.name"],"descriptionKeys":[]}]}},
		{"resource":{"attributes":[{"key":"service.name","value":{"intValue":"12"}}]},"scopeSpans":[{"scope":{"name":"s2"},"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"m","startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000}]},
		{"scope":{"name":"s3"},"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"010203040506070a","name":"m","startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000}]}]}]}`,
	"refused then more": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"ok","startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000},
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"bad","startTimeUnixNano":1758000000000000001,"endTimeUnixNano":1758000000000000000},
		{"traceId":"","spanId":"","name":"","startTimeUnixNano":0}]}]}]}`,
	"no span id":     `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}]}`,
	"own parent":     `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","parentSpanId":"0102030405060708","name":"x"}]}]}]}`,
	"time too large": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"x","startTimeUnixNano":"18446744073709551615","endTimeUnixNano":9999999999999999999}]}]}]}`,
	"not finite": jsonDoc("", `{"key":"n","value":{"doubleValue":"NaN"}},{"key":"i","value":{"doubleValue":"Infinity"}},{"key":"m","value":{"doubleValue":"-Infinity"}},
		{"key":"a","value":{"arrayValue":{"values":[{"intValue":1},{"doubleValue":"NaN"}]}}},{"key":"b","value":{"kvlistValue":{"values":[{"key":"x","value":{"doubleValue":"-Infinity"}}]}}}`),
	"white space": " \r\n\t{ \"resourceSpans\" : [ { \"scopeSpans\" : [ { \"spans\" : [ { \"name\" : \"x\" , \"kind\" : -1 , \"status\" : { } } ] } ] } ] } \n\n",
	"long value":  jsonDoc("", `{"key":"gen_ai.prompt","value":{"stringValue":"`+strings.Repeat("é", 3000)+`"}},{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"`+strings.Repeat("a", 5000)+`"}}`),
	"kinds and codes": `{"resourceSpans":[{"scopeSpans":[{"spans":[` + func() string {
		var b strings.Builder
		for k := range 8 {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"01020304050607%02x","name":"x","kind":%d,"status":{"code":%d},"startTimeUnixNano":1758000000000000000,"endTimeUnixNano":1758000000000000000}`, k+1, k, k%5)
		}
		return b.String()
	}() + `]}]}]}`,
}

// jsonDeclined are documents the fast path must decline: pdata reads
// some of them, and refuses the others with messages of its own.
var jsonDeclined = map[string]string{
	"snake case":       `{"resource_spans":[{"scope_spans":[]}]}`,
	"snake span":       jsonDoc(`,"start_time_unix_nano":"1"`, ``),
	"enum name":        jsonDoc(`,"kind":"SPAN_KIND_CLIENT"`, ``),
	"code name":        jsonDoc(`,"status":{"code":"STATUS_CODE_ERROR"}`, ``),
	"duplicate key":    jsonDoc(`,"name":"again"`, ``),
	"duplicate attrs":  jsonDoc(`,"attributes":[]`, ``),
	"null":             jsonDoc(`,"events":null`, ``),
	"null string":      jsonDoc(`,"traceState":null`, ``),
	"unknown key":      jsonDoc(`,"extra":1`, ``),
	"strindex":         jsonDoc(``, `{"key":"k","value":{"stringValueStrindex":1}}`),
	"key strindex":     jsonDoc(``, `{"key":"k","keyStrindex":1}`),
	"deprecated":       `{"resourceSpans":[{"deprecatedScopeSpans":[]}]}`,
	"logs alone":       `{"resourceLogs":[]}`,
	"logs empty key":   `{"resourceLogs":[{"":1}],"resourceSpans":[{}]}`,
	"profiles":         `{"resourceSpans":[{}],"resourceProfiles":[]}`,
	"logs not JSON":    `{"resourceLogs":[tru],"resourceSpans":[{}]}`,
	"tempo":            `{"batches":[{"resource":{},"scopeSpans":[]}]}`,
	"jaeger":           `{"data":[{"traceID":"1","spans":[]}]}`,
	"no resource":      `{}`,
	"empty resources":  `{"resourceSpans":[]}`,
	"trailing":         `{"resourceSpans":[{}]} x`,
	"two documents":    `{"resourceSpans":[{}]}{"resourceSpans":[{}]}`,
	"cut short":        `{"resourceSpans":[{"scopeSpans":[`,
	"not an object":    `[{"resourceSpans":[]}]`,
	"leading zero":     jsonDoc(`,"kind":01`, ``),
	"float time":       jsonDoc(`,"droppedLinksCount":1.0`, ``),
	"exponent time":    strings.Replace(jsonDoc(``, ``), `"1758000000000000001"`, `1.758e18`, 1),
	"plus":             jsonDoc(``, `{"key":"i","value":{"intValue":"+1"}}`),
	"hex float":        jsonDoc(``, `{"key":"d","value":{"doubleValue":"0x1p-2"}}`),
	"infinite":         jsonDoc(``, `{"key":"d","value":{"doubleValue":"inf"}}`),
	"too large":        jsonDoc(``, `{"key":"d","value":{"doubleValue":1e400}}`),
	"lone surrogate":   jsonDoc(``, `{"key":"k","value":{"stringValue":"\ud83d x"}}`),
	"low surrogate":    jsonDoc(``, `{"key":"k","value":{"stringValue":"\ude00\ud83d"}}`),
	"bad escape":       jsonDoc(``, `{"key":"k","value":{"stringValue":"\x"}}`),
	"control":          jsonDoc(``, "{\"key\":\"k\",\"value\":{\"stringValue\":\"a\tb\"}}"),
	"escaped id":       strings.Replace(jsonDoc(``, ``), `"0102030405060708"`, `"\u0030102030405060708"`, 1),
	"short id":         strings.Replace(jsonDoc(``, ``), `"0102030405060708"`, `"01020304"`, 1),
	"bad hex":          strings.Replace(jsonDoc(``, ``), `"0102030405060708"`, `"010203040506070g"`, 1),
	"escaped bytes":    jsonDoc(``, `{"key":"b","value":{"bytesValue":"aGVs\/bG8="}}`),
	"bad base64":       jsonDoc(``, `{"key":"b","value":{"bytesValue":"a"}}`),
	"escaped key":      strings.Replace(jsonDoc(``, ``), `"name"`, `"n\u0061me"`, 1),
	"empty key":        jsonDoc(`,"":1`, ``),
	"bool string":      jsonDoc(``, `{"key":"b","value":{"boolValue":"true"}}`),
	"huge int":         jsonDoc(``, `{"key":"i","value":{"intValue":"9223372036854775808"}}`),
	"int with dot":     jsonDoc(``, `{"key":"i","value":{"intValue":1.0}}`),
	"negative time":    jsonDoc(`,"flags":-1`, ``),
	"missing comma":    jsonDoc(`,"flags":1 "kind":1`, ``),
	"trailing comma":   jsonDoc(`,"flags":1,`, ``),
	"deep":             jsonDoc(``, `{"key":"a","value":`+strings.Repeat(`{"arrayValue":{"values":[`, 40)+strings.Repeat(`]}}`, 40)+`}`),
	"links null":       jsonDoc(`,"links":[null]`, ``),
	"bytes in names":   jsonDoc(`,"status":{"message":1}`, ``),
	"upper exponent":   jsonDoc(``, `{"key":"i","value":{"intValue":"1e3"}}`),
	"uint32 overflow":  jsonDoc(`,"flags":4294967296`, ``),
	"kind overflow":    jsonDoc(`,"kind":2147483648`, ``),
	"string dropped":   jsonDoc(`,"droppedAttributesCount":"-1"`, ``),
	"truncated escape": `{"resourceSpans":[{"schemaUrl":"\u00"}]}`,
}

func TestJSONSpansCases(t *testing.T) {
	t.Parallel()
	for name, doc := range jsonCases {
		if declined, diff := jsonSameAsPdata([]byte(doc)); declined || diff != "" {
			t.Errorf("%s: declined %v %s", name, declined, diff)
		}
	}
	for name, doc := range jsonDeclined {
		if declined, diff := jsonSameAsPdata([]byte(doc)); !declined || diff != "" {
			t.Errorf("%s: answered: %s", name, diff)
		}
	}
}

// TestJSONSpansDepth declines what jsonlimit refuses, and answers one
// level less.
func TestJSONSpansDepth(t *testing.T) {
	t.Parallel()
	// The document's own nesting, to an attribute's value: 10 levels.
	nest := func(n int) string {
		return jsonDoc(``, `{"key":"a","value":`+strings.Repeat(`{"arrayValue":{"values":[`, n)+`{"intValue":1}`+strings.Repeat(`]}}`, n)+`}`)
	}
	for n := 1; n < 40; n++ {
		doc := []byte(nest(n))
		declined, diff := jsonSameAsPdata(doc)
		if diff != "" {
			t.Fatalf("%d levels: %s", n, diff)
		}
		if refused := jsonlimit.Check(doc) != nil; refused != declined {
			t.Fatalf("%d levels: declined %v, jsonlimit refuses %v", n, declined, refused)
		}
	}
}

// TestJSONSpansDelivered holds decodeJSON's fast path to deliver: the
// same batches, in the same pieces, the same error, for documents of
// many spans with a span refused here or there or none.
func TestJSONSpansDelivered(t *testing.T) {
	t.Parallel()
	at := pcommon.NewTimestampFromTime(time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC))
	for _, tc := range []struct{ spans, refused int }{
		{1, -1}, {deliverSpans, -1}, {deliverSpans, 5}, {deliverSpans + 1, -1},
		{2*deliverSpans + 100, -1}, {2*deliverSpans + 100, deliverSpans + 3}, {3 * deliverSpans, 2*deliverSpans - 1}, {3 * deliverSpans, 0},
	} {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
		for i := range tc.spans {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(pcommon.TraceID{1, byte(i / 100)})
			s.SetSpanID(pcommon.SpanID{2, byte(i >> 8), byte(i)})
			if i != tc.refused {
				s.SetName(fmt.Sprintf("s%d", i))
			}
			s.SetStartTimestamp(at)
			s.SetEndTimestamp(at)
			s.Attributes().PutInt("i", int64(i))
		}
		doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		collect := func(batches *[]Batch) func(Batch) error {
			return func(b Batch) error {
				*batches = append(*batches, Batch{Line: b.Line, Spans: append([]Span(nil), b.Spans...)})
				return nil
			}
		}
		var got, want []Batch
		gerr := decodeJSON(doc, 3, collect(&got))
		td2, err := unmarshalJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		werr := deliver(td2, 3, collect(&want))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: %d batches (%v), deliver %d (%v)", tc, len(got), gerr, len(want), werr)
		}
		if _, err := decodeJSONSpans(doc); err != nil {
			t.Errorf("%+v: declined", tc)
		}
		// fn's error ends it, as it ends deliver.
		stop := errors.New("stop")
		calls := 0
		err = decodeJSON(doc, 0, func(Batch) error { calls++; return stop })
		if tc.refused < 0 && (!errors.Is(err, stop) || calls != 1) {
			t.Errorf("%+v: fn's error gave %v after %d calls", tc, err, calls)
		}
	}
}

// TestJSONSpansEmpty delivers a trace document without spans as deliver
// does: one batch of no spans (empty, not nil), or pdata's answer when it
// says no resourceSpans at all.
func TestJSONSpansEmpty(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{"resourceSpans":[{}]}`, `{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]}`, `{"resourceSpans":[]}`, `{}`} {
		for _, line := range []int{0, 2} {
			var got []Batch
			err := decodeJSON([]byte(doc), line, func(b Batch) error { got = append(got, b); return nil })
			var want []Batch
			var werr error
			if td, perr := unmarshalJSON([]byte(doc)); perr == nil && (td.ResourceSpans().Len() > 0 || line > 0 || strings.Contains(doc, "resourceSpans")) {
				werr = deliver(td, line, func(b Batch) error { want = append(want, b); return nil })
			} else {
				werr = errors.New("no spans in this OTLP/JSON file (no resourceSpans)")
			}
			if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s line %d: %#v %v, want %#v %v", doc, line, got, err, want, werr)
			}
		}
	}
}

// jsonSeeds are the documents the mutation and fuzz tests start from.
func jsonSeeds(tb testing.TB) [][]byte {
	rich, err := (&ptrace.JSONMarshaler{}).MarshalTraces(richTraces())
	if err != nil {
		tb.Fatal(err)
	}
	seeds := [][]byte{rich}
	for _, doc := range jsonCases {
		seeds = append(seeds, []byte(doc))
	}
	return seeds
}

// TestJSONSpansMutated holds the fast path to pdata on documents with
// bytes changed, added and removed at random (a fixed seed), the
// fixtures at hand among them: it declines or answers as pdata does.
func TestJSONSpansMutated(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	seeds := jsonSeeds(t)
	for _, doc := range jsonDocuments(t) {
		if len(doc) < 32<<10 {
			seeds = append(seeds, doc)
		}
	}
	slices.SortFunc(seeds, bytes.Compare) // map order is random
	alphabet := []byte(`{}[]",:0123456789-.eE+ \ntrufalsn\u00x"` + "\xff")
	answered := 0
	for i := range 8000 {
		doc := append([]byte(nil), seeds[i%len(seeds)]...)
		for range 1 + rng.Intn(3) {
			at := rng.Intn(len(doc))
			switch rng.Intn(3) {
			case 0:
				doc[at] = alphabet[rng.Intn(len(alphabet))]
			case 1:
				doc = append(doc[:at], append([]byte{alphabet[rng.Intn(len(alphabet))]}, doc[at:]...)...)
			default:
				doc = append(doc[:at], doc[at+1:]...)
			}
		}
		declined, diff := jsonSameAsPdata(doc)
		if diff != "" {
			t.Fatalf("%q: %s", doc, diff)
		}
		if !declined {
			answered++
		}
	}
	if answered < 1000 { // 1 445 with this seed: the rest are declined
		t.Errorf("answered only %d mutated documents", answered)
	}
}

// FuzzJSONSpans checks that the fast path never panics and, when it
// answers, answers as pdata's decoder and Spans do.
func FuzzJSONSpans(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s)
	}
	for _, doc := range jsonDeclined {
		f.Add([]byte(doc))
	}
	for _, doc := range jsonDocuments(f) {
		if len(doc) < 64<<10 {
			f.Add(doc)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if _, diff := jsonSameAsPdata(doc); diff != "" {
			t.Fatal(diff)
		}
	})
}

// BenchmarkJSONSpans compares the fast path with pdata's decode followed
// by Spans on the document of BenchmarkImportShapes' document shape.
func BenchmarkJSONSpans(b *testing.B) {
	doc, err := os.ReadFile(documentFile(b, shapeSpans()))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if _, err := decodeJSONSpans(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdata", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			td, err := unmarshalJSON(doc)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Spans(td); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestJSONSpansRawString holds rawString's eight-bytes-at-a-time scan to
// a byte at a time: where a string ends, whether it holds an escape, and
// that a control character is refused, at every offset.
func TestJSONSpansRawString(t *testing.T) {
	t.Parallel()
	for n := range 40 {
		for at := range n {
			for _, c := range []byte{'"', '\\', 0, '\n', 0x1f, ' ', 0x7f, 0x80, 0xff, 'a'} {
				body := bytes.Repeat([]byte{'x'}, n)
				body[at] = c
				doc := append(append([]byte{'"'}, body...), '"', ',', '"', 'y', '"')
				// A byte at a time: what the scan must find.
				end, escaped, bad := -1, false, false
				for i := 1; i < len(doc); i++ {
					if doc[i] == '"' {
						end = i
						break
					}
					if doc[i] == '\\' {
						escaped = true
						i++
						continue
					}
					if doc[i] < ' ' {
						bad = true
						break
					}
				}
				d := &jsonWalk{doc: doc}
				raw, esc, err := d.rawString()
				switch {
				case bad || end < 0:
					if err == nil {
						t.Errorf("%q: read %q, want refused", doc, raw)
					}
				case err != nil || esc != escaped || !bytes.Equal(raw, doc[1:end]) || d.pos != end+1:
					t.Errorf("%q: read %q %v %v at %d, want %q %v at %d", doc, raw, esc, err, d.pos, doc[1:end], escaped, end+1)
				}
			}
		}
	}
}
