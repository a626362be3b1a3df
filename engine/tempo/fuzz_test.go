package tempo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/tempo"
)

// Whatever a Tempo file holds, Decode neither panics nor says more than
// one line, and every span it gives has its ids.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"mailer-api-v1.json", "mailer-api-v2.json"} {
		doc, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "tempo", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	for _, seed := range []string{
		`{"batches": []}`,
		`{"batches": null}`,
		`{"trace": null, "status": "not found"}`,
		`{"trace": {"batches": [{"instrumentationLibrarySpans": [{"spans": [{"traceId": "AAAAAAAAAAAAAAAAAAAAAQ==", "spanId": "AAAAAAAAAAE=", "name": "x", "startTimeUnixNano": "1790607000000000000", "endTimeUnixNano": "1790607000000000001"}]}]}]}}`,
		`{"batches": [{"scopeSpans": [{"spans": [{"traceId": "AAAAAAAAAAAAAAAAAAAAAQ==", "spanId": "AAAAAAAAAAE=", "name": 5}]}]}]}`,
		`{"trace": {"resourceSpans": [`,
		`{"trace": [1, 2]}`,
		"{\"batches\": [{}]}\n{\"batches\": [{}]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := tempo.Decode(data, func(b otlp.Batch) error {
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
