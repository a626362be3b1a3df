package otlp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

// fuzzSeeds are the shapes every OTLP input is fuzzed from: a real
// document, nesting bombs (the million levels gzipped, 64 KB; the tests
// post it plain), a size bomb,
// the nesting just under the limit and just over it, and JSON Lines. More
// live in testdata/fuzz.
func fuzzSeeds(f *testing.F) [][]byte {
	good, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		f.Fatal(err)
	}
	gz := gzipped
	line := bytes.Join(bytes.Fields(good), []byte(" "))
	return [][]byte{
		good,
		gz(tracetest.NestingBomb(1_000_000)),
		tracetest.NestingBomb(2_000),
		tracetest.NestingBomb(92), // 100 levels with the span's own 8
		tracetest.NestingBomb(93),
		tracetest.SizeBomb(64 << 10),
		append(append(line, '\n'), tracetest.NestingBomb(200)...),
		[]byte(strings.Repeat("[", 20_000)),
		[]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":{"kvlistValue":{"values":[{"key":"a","value":{"arrayValue":{}}}]}}}]}]}]}]}`),
		// Members in odd orders, escapes, empty and missing arrays: what
		// a large document's pieces (docsplit.go) are cut from.
		[]byte("{ \"resourceSpans\" : [ {\"scopeSpans\":[{\"spans\":[]},{\"spans\":[{\"name\":\"q \\\" \\u00e9 ✓\",\"spanId\":\"a000000000000002\",\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"endTimeUnixNano\":\"1790607001000000000\",\"startTimeUnixNano\":\"1790607000000000000\"}],\"scope\":{\"name\":\"s\"}}],\r\n\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}]}}, {\"resource\":{}}, {\"scopeSpans\":[]} ] }\n"),
	}
}

// FuzzRead feeds arbitrary files to the importer's decoder: it must never
// panic nor overflow its stack, and an error is one line.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := otlp.Read(bytes.NewReader(data), func(otlp.Batch) error { return nil })
		if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("an error of more than one line: %q", err)
		}
	})
}

// FuzzReceiver posts arbitrary bodies to the OTLP/HTTP receiver as JSON
// and as protobuf: it answers 200 or 4xx, never 5xx nor a crash, and a
// refusal stores nothing.
func FuzzReceiver(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, true)
		f.Add(s, false)
	}
	db, err := store.Open(filepath.Join(f.TempDir(), "fuzz.db"), store.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	h := (&otlp.Receiver{DB: db, Source: "fuzz"}).Handler()
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if asJSON {
			req.Header.Set("Content-Type", "application/json")
		}
		if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
			req.Header.Set("Content-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
	})
}
