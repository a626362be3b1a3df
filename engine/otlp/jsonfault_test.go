package otlp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A value of the wrong type, an id that is not hex of its length, or an
// enum name OTLP has not is one line naming the file, the line, the span
// (and event) and the field, never the parser's words; and nothing is
// stored.
func TestWrongTypeNamesLineSpanAndField(t *testing.T) {
	const span = `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"send",
 "startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000",
 "attributes":[{"key":"k","value":{"stringValue":"v"}}],
 "events":[{"name":"exception","attributes":[{"key":"exception.type","value":{"stringValue":"TimeoutError"}}]}]}`
	document := func(s string) string {
		return "{\"resourceSpans\":[{\"resource\":{},\n\"scopeSpans\":[{\"spans\":[\n" + s + "\n]}]}]}\n"
	}
	cases := []struct{ name, content, want string }{
		{"attributes an object", document(strings.Replace(span, `"attributes":[{"key":"k","value":{"stringValue":"v"}}]`, `"attributes":{"k":"v"}`, 1)),
			`x.json: line 5: not OTLP/JSON: span a000000000000001 ("send"), field attributes: expected an array, found an object`},
		{"an event's value a number", document(strings.Replace(span, `{"stringValue":"TimeoutError"}`, `{"stringValue":5}`, 1)),
			`x.json: line 6: not OTLP/JSON: span a000000000000001 ("send"), event "exception", field attributes[0].value.stringValue: expected a string, found the number 5`},
		{"a time true", document(strings.Replace(span, `"1790607000000000000"`, `true`, 1)),
			`x.json: line 4: not OTLP/JSON: span a000000000000001 ("send"), field startTimeUnixNano: expected a number, found true`},
		{"a short span id", document(strings.Replace(span, `"a000000000000001"`, `"a0000001"`, 1)),
			`x.json: line 3: not OTLP/JSON: span a0000001 ("send"), field spanId: expected 16 hex digits, found the string "a0000001"`},
		{"resource an array", strings.Replace(document(span), `"resource":{}`, `"resource":[]`, 1),
			`x.json: line 1: not OTLP/JSON: field resourceSpans[0].resource: expected an object, found an array`},
		{"JSON Lines: the file's line", doc(strings.ReplaceAll(span, "\n", "")) + "\n" + doc(strings.ReplaceAll(strings.Replace(span, `"name":"send"`, `"name":7`, 1), "\n", "")) + "\n",
			`x.json: line 2: not OTLP/JSON: span a000000000000001, field name: expected a string, found the number 7`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.json")
			if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			db := openDB(t)
			_, err := ImportFile(db, p)
			if err == nil {
				t.Fatal("imported")
			}
			if got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)); got != c.want {
				t.Errorf("error\n%s\nwant\n%s", got, c.want)
			}
			if xs := executions(t, db); len(xs) != 0 {
				t.Errorf("stored %+v", xs)
			}
		})
	}
}
