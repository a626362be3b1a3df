package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

// oddDocument is an OTLP/JSON document of resources resources written as
// OTLP/JSON allows though no exporter writes it: members in any order
// ("resource" after "scopeSpans", "scope" after "spans"), white space
// anywhere, escapes and unicode in strings and keys' values, nested
// attribute values, empty and missing scopeSpans and spans. Its spans are
// all valid, their ids unique.
func oddDocument(resources int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	var b strings.Builder
	ws := func() string { return []string{"", "", " ", "\n", "\t", "\r\n  "}[r.IntN(6)] }
	// object writes members in a random order.
	object := func(members ...string) string {
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		var o strings.Builder
		o.WriteString("{" + ws())
		for i, m := range members {
			if i > 0 {
				o.WriteString(ws() + "," + ws())
			}
			o.WriteString(m)
		}
		o.WriteString(ws() + "}")
		return o.String()
	}
	array := func(elems []string) string {
		return "[" + ws() + strings.Join(elems, ws()+","+ws()) + ws() + "]"
	}
	member := func(key, value string) string { return `"` + key + `"` + ws() + ":" + ws() + value }
	str := func(s string) string { q, _ := json.Marshal(s); return string(q) }
	attr := func(key, value string) string {
		return object(member("key", str(key)), member("value", value))
	}
	names := []string{`plain`, `quote "q" and \ backslash`, "unicode é ü ✓ 😀", "new\nline\ttab", `escaped \u00e9`, "</script>"}
	n := 0
	resourceList := make([]string, 0, resources)
	for ri := range resources {
		var scopes []string
		for si := range r.IntN(4) {
			var spans []string
			for range r.IntN(8) {
				n++
				trace := fmt.Sprintf("%032x", 1000+n/5)
				start := int64(1790607000000000000) + int64(n)*1_000_000
				members := []string{
					member("traceId", str(trace)),
					member("spanId", str(fmt.Sprintf("%016x", n))),
					member("name", str(fmt.Sprintf("%s %d", names[n%len(names)], n))),
					member("kind", fmt.Sprint(n%5)),
					member("startTimeUnixNano", str(fmt.Sprint(start))),
					member("endTimeUnixNano", str(fmt.Sprint(start+int64(r.IntN(1000))))),
					member("attributes", array([]string{
						attr("gen_ai.operation.name", object(member("stringValue", str([]string{"execute_tool", "chat", "invoke_agent"}[n%3])))),
						attr("gen_ai.tool.call.arguments", object(member("stringValue", str(fmt.Sprintf(`{"to": "é%d\"", "n": [1, {"x": null}]}`, n))))),
						attr("nested", object(member("kvlistValue", object(member("values", array([]string{
							attr("list", object(member("arrayValue", object(member("values", array([]string{
								object(member("intValue", str("42"))), object(member("boolValue", "true")),
								object(member("doubleValue", "1.5e3")), object(member("kvlistValue", object(member("values", "[]")))),
							})))))),
						})))))),
					})),
					member("status", object(member("code", fmt.Sprint(n%3)), member("message", str(names[(n+1)%len(names)])))),
				}
				if n%3 != 0 {
					members = append(members, member("parentSpanId", str(fmt.Sprintf("%016x", n-1))))
				}
				if n%4 == 0 {
					members = append(members, member("events", array([]string{object(member("name", str("exception")),
						member("timeUnixNano", str(fmt.Sprint(start+1))),
						member("attributes", array([]string{attr("exception.message", object(member("stringValue", str("boom ✗"))))})))})))
				}
				spans = append(spans, object(members...))
			}
			members := []string{member("scope", object(member("name", str(fmt.Sprintf("scope-%d-%d ✓", ri, si))), member("version", str("1.0"))))}
			if len(spans) > 0 || si%2 == 0 {
				members = append(members, member("spans", array(spans)))
			}
			if si%3 == 1 {
				members = append(members, member("schemaUrl", str("https://opentelemetry.io/schemas/1.26.0")))
			}
			scopes = append(scopes, object(members...))
		}
		members := []string{member("resource", object(member("attributes", array([]string{
			attr("service.name", object(member("stringValue", str(fmt.Sprintf("svc %d \"ø\"", ri%3))))),
			attr("host.tags", object(member("arrayValue", object(member("values", array([]string{object(member("stringValue", str("a")))})))))),
		}))))}
		if len(scopes) > 0 || ri%2 == 0 {
			members = append(members, member("scopeSpans", array(scopes)))
		}
		if ri%4 == 1 {
			members = append(members, member("schemaUrl", str("https://opentelemetry.io/schemas/1.26.0")))
		}
		resourceList = append(resourceList, object(members...))
	}
	b.WriteString(ws() + object(member("resourceSpans", array(resourceList))) + ws() + "\n")
	return []byte(b.String())
}

// decodeAll is what decode delivers: the spans, the size of each batch
// and the error.
func decodeAll(decode func(fn func(Batch) error) error) (spans []Span, batches []int, err error) {
	err = decode(func(b Batch) error {
		if b.Line != 0 {
			return fmt.Errorf("a batch of line %d", b.Line)
		}
		spans = append(spans, b.Spans...)
		batches = append(batches, len(b.Spans))
		return nil
	})
	return spans, batches, err
}

// whole is doc decoded whole, as before documents were decoded in pieces.
func whole(doc []byte) ([]Span, []int, error) {
	return decodeAll(func(fn func(Batch) error) error { return decodeJSON(doc, 0, fn) })
}

// inPieces is doc decoded in pieces of pieceSpans spans, however small.
func inPieces(doc []byte, pieceSpans int) ([]Span, []int, error) {
	return decodeAll(func(fn func(Batch) error) error { return decodeDocument(doc, 0, pieceSpans, fn) })
}

// lateCuts counts the plans of samePieces whose pieces were cut again.
var lateCuts atomic.Int64

// samePieces checks that doc, which planDocument must plan, decodes in
// pieces of each size to the spans of the whole document.
func samePieces(t *testing.T, name string, doc []byte, sizes ...int) {
	t.Helper()
	want, wantBatches, err := whole(doc)
	if err != nil {
		t.Fatalf("%s: whole: %v", name, err)
	}
	for _, size := range sizes {
		plan, ok := planDocument(doc, size)
		if !ok {
			t.Fatalf("%s: not planned in pieces", name)
		}
		if plan.late {
			lateCuts.Add(1)
		}
		got, batches, err := inPieces(doc, size)
		if err != nil {
			t.Fatalf("%s, pieces of %d: %v", name, size, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s, pieces of %d: %d spans differ from the whole document's %d", name, size, len(got), len(want))
		}
		if size == deliverSpans && !reflect.DeepEqual(batches, wantBatches) {
			t.Errorf("%s: batches of %v, want %v", name, batches, wantBatches)
		}
	}
}

func TestPiecesGiveTheFixturesSpans(t *testing.T) {
	// The fixtures left to the whole decode, and why.
	refused := map[string]string{
		"adk-send-twice.json": "logs beside the spans (resourceLogs)",
	}
	var paths []string
	for _, pattern := range []string{filepath.Join(fixtures, "*.json"), "testdata/frameworks/*.json"} {
		found, _ := filepath.Glob(pattern)
		paths = append(paths, found...)
	}
	if len(paths) < 10 {
		t.Fatalf("only %d fixtures", len(paths))
	}
	for _, path := range paths {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := planDocument(doc, 1); !ok && refused[filepath.Base(path)] != "" {
			continue
		}
		samePieces(t, path, doc, 1, 2, 3, deliverSpans)
	}
}

func TestPiecesGiveAnOddDocumentsSpans(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		doc := oddDocument(40, seed)
		samePieces(t, fmt.Sprintf("seed %d", seed), doc, 1, 2, 7, 64, deliverSpans)
	}
	// Enough spans for several batches of deliverSpans.
	doc := oddDocument(1500, 21)
	if want, _, _ := whole(doc); len(want) < 2*deliverSpans {
		t.Fatalf("only %d spans", len(want))
	}
	samePieces(t, "many", doc, 1000, deliverSpans)
	// Members after the spans their pieces hold were cut ("resource"
	// after "scopeSpans") make them cut again: that way too.
	if lateCuts.Load() == 0 {
		t.Error("no plan cut its pieces again")
	}
}

// planRefuses are documents planDocument leaves to the whole decode: what
// it does not expect, valid OTLP/JSON (as pdata reads it) or not.
var planRefuses = map[string]string{
	"no resourceSpans":       `{"resourceLogs":[]}`,
	"empty resourceSpans":    `{"resourceSpans":[]}`,
	"no spans":               `{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]}`,
	"snake case":             `{"resource_spans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"snake case scope":       `{"resourceSpans":[{"scope_spans":[{"spans":[` + goodSpan + `]}]}]}`,
	"deprecated scope spans": `{"resourceSpans":[{"deprecatedScopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"legacy library spans":   `{"resourceSpans":[{"instrumentationLibrarySpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"Tempo batches":          `{"batches":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"escaped key":            `{"resource\u0053pans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"unknown top key":        `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}],"extra":1}`,
	"unknown resource key":   `{"resourceSpans":[{"extra":{},"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"unknown scope key":      `{"resourceSpans":[{"scopeSpans":[{"extra":[],"spans":[` + goodSpan + `]}]}]}`,
	"repeated scopeSpans":    `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}],"scopeSpans":[]}]}`,
	"repeated spans":         `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `],"spans":[]}]}]}`,
	"repeated resource":      `{"resourceSpans":[{"resource":{},"resource":{},"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}`,
	"repeated resourceSpans": `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}],"resourceSpans":[]}`,
	"spans null":             `{"resourceSpans":[{"scopeSpans":[{"spans":null},{"spans":[` + goodSpan + `]}]}]}`,
	"spans an object":        `{"resourceSpans":[{"scopeSpans":[{"spans":{}},{"spans":[` + goodSpan + `]}]}]}`,
	"span a string":          `{"resourceSpans":[{"scopeSpans":[{"spans":["x",` + goodSpan + `]}]}]}`,
	"resourceSpans a string": `{"resourceSpans":"x"}`,
	"trailing text":          `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}]} x`,
	"two documents":          `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `]}]}]}{}`,
	"trailing comma":         `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + `,]}]}]}`,
	"missing comma":          `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan + goodSpan + `]}]}]}`,
	"cut short":              `{"resourceSpans":[{"scopeSpans":[{"spans":[` + goodSpan,
	"cut in a string":        `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x`,
	"too deep":               string(tracetest.NestingBomb(deepest + 1)),
	"an array":               `[` + doc(goodSpan) + `]`,
}

func TestPlanRefusesWhatItDoesNotExpect(t *testing.T) {
	for name, doc := range planRefuses {
		if _, ok := planDocument([]byte(doc), 1); ok {
			t.Errorf("%s: planned", name)
		}
		// And the document is decoded whole, as before.
		want, _, wantErr := whole([]byte(doc))
		got, _, err := inPieces([]byte(doc), 1)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d spans, error %v; want %d, %v", name, len(got), err, len(want), wantErr)
		}
	}
}

// deepest is the NestingBomb that nests as deeply as jsonlimit allows:
// the span at 7 levels, its attribute at 9, each level of the bomb 3
// more, and the string value's object one.
const deepest = (jsonlimit.MaxDepth - 10) / 3

// Each piece nests each byte as deeply as the document: one at the depth
// bound is planned and its pieces pass jsonlimit; one past it is not
// planned (TestPlanRefusesWhatItDoesNotExpect).
func TestPiecesKeepTheDepthBound(t *testing.T) {
	deep := tracetest.NestingBomb(deepest)
	if err := jsonlimit.Check(deep); err != nil {
		t.Fatal(err)
	}
	doc := bytes.Replace(deep, []byte(`"spans":[`), []byte(`"spans":[`+goodSpan+`,`), 1)
	plan, ok := planDocument(doc, 1)
	if !ok || len(plan.pieces) != 2 {
		t.Fatalf("planned %v", ok)
	}
	deepest := 0
	for k := range plan.pieces {
		piece := plan.piece(plan.pieces[k], nil)
		if err := jsonlimit.Check(piece); err != nil {
			t.Errorf("piece %d: %v", k, err)
		}
		if err := jsonlimit.CheckDepth(piece, jsonlimit.MaxDepth-1); err != nil {
			deepest++
		}
	}
	if deepest != 1 {
		t.Errorf("%d pieces reach the bound, want the bomb's", deepest)
	}
}

// largeDocument is batchOf's n spans as one OTLP/JSON document of one
// line, over splitOver, and where each span starts.
func largeDocument(t *testing.T, n int) ([]byte, []int) {
	t.Helper()
	doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(batchOf(0, n))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc) <= splitOver {
		t.Fatalf("%d bytes: not over splitOver", len(doc))
	}
	var starts []int
	for i := 0; ; {
		k := bytes.Index(doc[i:], []byte(`{"traceId"`))
		if k < 0 {
			break
		}
		starts = append(starts, i+k)
		i += k + 1
	}
	if len(starts) != n {
		t.Fatalf("%d spans found, want %d", len(starts), n)
	}
	return append(doc, '\n'), starts
}

// A large document read (Read) is decoded in pieces to the whole
// document's spans, in the whole document's batches.
func TestLargeDocumentReadInPieces(t *testing.T) {
	t.Parallel()
	doc, _ := largeDocument(t, 8_000)
	if _, ok := planDocument(doc, deliverSpans); !ok {
		t.Fatal("not planned")
	}
	want, wantBatches, err := whole(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one line", "pretty"} {
		in := doc
		if name == "pretty" {
			var b bytes.Buffer
			if err := json.Indent(&b, doc, "", "  "); err != nil {
				t.Fatal(err)
			}
			in = b.Bytes()
		}
		var got []Span
		var batches []int
		format, err := Read(bytes.NewReader(in), func(b Batch) error {
			if b.Line != 0 {
				t.Fatalf("a batch of line %d", b.Line)
			}
			got, batches = append(got, b.Spans...), append(batches, len(b.Spans))
			return nil
		})
		if err != nil || format != FormatJSON {
			t.Fatalf("%s: %s, %v", name, format, err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(batches, wantBatches) {
			t.Errorf("%s: %d spans in %v, want %d in %v", name, len(got), batches, len(want), wantBatches)
		}
	}
}

// A fault in a large document says what it said when the document was
// decoded whole (file, line, span, field), and the import stores nothing.
func TestLargeDocumentFaultsAsBefore(t *testing.T) {
	t.Parallel()
	doc, starts := largeDocument(t, 8_000)
	at := starts[7_000] // in the document's last piece
	span := doc[at:starts[7_001]]
	replace := func(old, new string) []byte {
		if !bytes.Contains(span, []byte(old)) {
			t.Fatalf("span 7 000 has no %q", old)
		}
		out := append([]byte{}, doc[:at]...)
		out = append(out, bytes.Replace(doc[at:], []byte(old), []byte(new), 1)...)
		return out
	}
	// The member key's value, a string: "key":"value".
	memberOf := func(key string) string {
		m := string(span[bytes.Index(span, []byte(`"`+key+`":"`)):])
		return m[:len(key)+4+strings.IndexByte(m[len(key)+4:], '"')+1]
	}
	name, end := memberOf("name"), memberOf("endTimeUnixNano")
	cases := []struct {
		name string
		doc  []byte
		want string
	}{
		{"a number for a string", replace(name, `"name":7`), "field name: expected a string, found the number 7"},
		{"end before start", replace(end, `"endTimeUnixNano":"1790604000000000000"`), "ends"},
		{"a bad string", replace(name, `"name":"x" "y"`), "not OTLP/JSON"},
		{"nested too deep", replace(`"attributes":[`, `"attributes":[{"key":"deep","value":`+strings.Repeat(`{"arrayValue":{"values":[`, 60)+`{"stringValue":"x"}`+strings.Repeat(`]}}`, 60)+`},`), "JSON nested deeper than 100 levels"},
		{"cut short", doc[:len(doc)-1000], "the JSON ends early (cut short?)"},
		{"cut after the spans", doc[:len(doc)-4], "the JSON ends early (cut short?)"},
	}
	db := openDB(t)
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "large.json")
		if err := os.WriteFile(path, c.doc, 0o600); err != nil {
			t.Fatal(err)
		}
		wantErr := path + ": " + decodeJSON(c.doc, 0, func(Batch) error { return nil }).Error()
		if !strings.Contains(wantErr, c.want) {
			t.Fatalf("%s: the whole decode says %q, want it to say %q", c.name, wantErr, c.want)
		}
		if _, err := ImportFile(db, path); err == nil || err.Error() != wantErr {
			t.Errorf("%s: import: %v\nwant %s", c.name, err, wantErr)
		}
		if xs := executions(t, db); len(xs) != 0 {
			t.Fatalf("%s: a failed file left %d executions", c.name, len(xs))
		}
		db.View(func(tx *store.Tx) error {
			if n := storedSpanCount(t, tx) + tx.Count(BucketImports); n != 0 {
				t.Errorf("%s: a failed file left %d spans or pending imports", c.name, n)
			}
			return nil
		})
	}
}

// FuzzDocumentPieces decodes arbitrary documents in pieces of two spans
// and whole: the same spans, or the same error.
func FuzzDocumentPieces(f *testing.F) {
	f.Add(oddDocument(3, 1))
	f.Add([]byte(doc(goodSpan, strings.Replace(goodSpan, "a000000000000001", "a000000000000002", 1))))
	f.Add(tracetest.NestingBomb(deepest))
	for _, d := range planRefuses {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, _, wantErr := whole(data)
		got, _, err := inPieces(data, 2)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		// On an error, how many batches came before it depends on their
		// size, and the import drops them.
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%d spans, want %d", len(got), len(want))
		}
	})
}
