package jaeger_test

import (
	"os"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/jaeger"
	"github.com/retrylab/retrylab/engine/otlp"
)

// Whatever a Jaeger file holds, Decode neither panics nor says more than
// one line, and every span it gives has its ids.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"mailer-ui.json", "mailer-api-v3.json"} {
		doc, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	for _, seed := range []string{
		`{"data": []}`,
		`{"data": null, "errors": [{"code": 404, "msg": "trace not found"}]}`,
		`{"data": [{"traceID": "1", "spans": [{"traceID": "1", "spanID": "2", "operationName": "x", "startTime": 1790607000000000, "duration": 1, "processID": "p1", "references": [{"refType": "FOLLOWS_FROM", "traceID": "1", "spanID": "3"}], "tags": [{"key": "b", "type": "binary", "value": "AAE="}], "logs": [{"timestamp": 1790607000000000, "fields": [{"key": "event", "value": "e"}]}]}], "processes": {"p1": {"serviceName": "s"}}}]}`,
		`{"data": [{"spans": [{"spanID": 7}]}]}`,
		`{"data": [{"spans": [{"traceID": "1", "spanID": "2", "tags": [{"key": "k", "type": "float64", "value": "x"}]}]}]}`,
		`{"data": {"spans": []}}`,
		`{"result": {"resourceSpans": []}}` + "\n" + `{"result": {"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}}`,
		`{"result": null}`,
		`{"data": [`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := jaeger.Decode(data, func(b otlp.Batch) error {
			for _, s := range b.Spans {
				if s.SpanID == "" || s.TraceID == "" {
					t.Errorf("a span without ids: %+v", s)
				}
			}
			return nil
		})
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("an error of more than one line: %q", err)
		}
	})
}
