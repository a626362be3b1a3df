package otlp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

func receiver(t *testing.T, maxBody int64) (*httptest.Server, *store.DB, *[]string) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stored []string
	rc := &otlp.Receiver{DB: db, Source: "test receiver", MaxBody: maxBody, Stored: func(x []string) {
		mu.Lock()
		stored = append(stored, x...)
		mu.Unlock()
	}}
	srv := httptest.NewServer(rc.Handler())
	t.Cleanup(func() { srv.Close(); db.Close() })
	return srv, db, &stored
}

func folded(t *testing.T, db *store.DB) []*trace.Trace {
	t.Helper()
	var out []*trace.Trace
	err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil || x.Imported != otlp.ImportedFormat {
				t.Errorf("execution %s: %+v %v", id, x, err)
			}
			spans, err := otlp.Load(tx, id)
			if err != nil {
				t.Error(err)
			}
			out = append(out, trace.Fold(id, otlp.Events(spans)))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The OpenTelemetry Go SDK's own OTLP/HTTP exporter is the client: an
// agent that retries a send under a new tool-call id shows as a duplicate.
func TestReceiverTakesTheGoSDKExporter(t *testing.T) {
	srv, db, stored := receiver(t, 0)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := tp.Tracer("retrylab-test-agent")
	agentCtx, agent := tr.Start(ctx, "invoke_agent mailer")
	agent.SetAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.conversation.id", "sdk-conv-1"))
	for i, outcome := range []codes.Code{codes.Error, codes.Ok, codes.Ok} {
		_, tool := tr.Start(agentCtx, "execute_tool send_email")
		tool.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", "send_email"),
			attribute.String("gen_ai.tool.call.id", []string{"call_1", "call_2", "call_3"}[i]),
			attribute.String("gen_ai.tool.call.arguments", `{"to":"ana@example.com","subject":"Invoice 42"}`))
		if outcome == codes.Error {
			tool.SetAttributes(attribute.String("error.type", "TimeoutError"))
		}
		tool.SetStatus(outcome, "")
		tool.End()
	}
	agent.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}
	traces := folded(t, db)
	if len(traces) != 1 || traces[0].Execution != "otlp-conv-sdk-conv-1" {
		t.Fatalf("executions %d", len(traces))
	}
	if len(*stored) == 0 {
		t.Error("the explorer was never told")
	}
	p, _ := audit.ParseEffects(audit.DefaultEffects)
	rep := audit.Run(traces, audit.Options{Effects: p})
	if rep.Counts.Duplicate != 1 || len(rep.Findings[0].Attempts) != 3 {
		t.Errorf("audit %+v", rep)
	}
}

func post(t *testing.T, url, ctype, encoding string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReceiverStatusCodes(t *testing.T) {
	t.Parallel()
	srv, db, _ := receiver(t, 64<<10)
	doc, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		t.Fatal(err)
	}
	gzDoc := gzipped(doc)
	bad := `{"resourceSpans":[{"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"x","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000"},` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000002","name":"x","startTimeUnixNano":"5","endTimeUnixNano":"1790607001000000000"}]}]}]}`
	cases := []struct {
		name, ctype, enc string
		body             []byte
		code             int
		want             string
	}{
		{"JSON, gzip", "application/json", "gzip", gzDoc, 200, "{}"},
		{"the same again: nothing new, still 200", "application/json", "", doc, 200, "{}"},
		{"one span refused", "application/json; charset=utf-8", "", []byte(bad), 200, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":"span a000000000000002: start time 1970-01-01T00:00:00Z is outside 2000-2200`},
		{"malformed JSON", "application/json", "", []byte(`{"resourceSpans":[`), 400, `"code":3`},
		{"malformed protobuf", "application/x-protobuf", "", []byte{0x0a, 0xff, 0x01}, 400, "not an OTLP trace export"},
		{"gzip that is not", "application/json", "gzip", doc, 400, "gzip"},
		{"text", "text/plain", "", doc, 415, "content type"},
		{"brotli", "application/json", "br", doc, 415, "content encoding"},
		{"too large", "application/json", "", bytes.Repeat([]byte(" "), 65<<10), 413, "body over"},
		{"too large once inflated", "application/json", "gzip", bomb(1 << 20), 413, "body over"},
	}
	for _, c := range cases {
		code, body := post(t, srv.URL, c.ctype, c.enc, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, body, c.code, c.want)
		}
	}
	if n := len(folded(t, db)); n != 2 {
		t.Errorf("%d executions, want the fixture's and the good span's", n)
	}
	resp, err := http.Get(srv.URL + "/v1/traces")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET: %d", resp.StatusCode)
		}
	}
}

func bomb(n int) []byte { return gzipped(bytes.Repeat([]byte(" "), n)) }

// gzipped is b compressed with gzip, as an exporter or a .gz file sends it.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// A 400 answer says what is wrong in the words 'retrylab import' uses for
// the same document, not the parser's; a gzip body without its
// Content-Encoding, and a file of another format (a Tempo or Jaeger
// download, a Temporal history) are refused, saying so, instead of
// answered 200 with nothing stored.
func TestReceiverRefusalsInTheUsersWords(t *testing.T) {
	t.Parallel()
	srv, db, _ := receiver(t, 1<<20)
	badID := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"abc","name":"x","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000"}]}]}]}`)
	doc, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		t.Fatal(err)
	}
	gzDoc := gzipped(doc)
	tempo, err := os.ReadFile("../../fixtures/tempo/mailer-api-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	imported := func(what string) string {
		return what + ", not an OTLP trace export (no resourceSpans): import it with 'retrylab import FILE'"
	}
	for _, c := range []struct {
		name, enc string
		body      []byte
		want      string
	}{
		{"an id of the wrong length", "", badID, "field spanId: expected 16 hex digits"},
		{"gzip without Content-Encoding", "", gzDoc, "the body looks gzip-compressed (it starts as gzip does) but came without Content-Encoding: send it with Content-Encoding: gzip"},
		{"Tempo's download", "", tempo, imported(`a Tempo trace ({\"batches\": ...})`)},
		{"a Temporal history", "", []byte(`{"events": [{"eventId": "1"}]}`), imported("a Temporal workflow history")},
	} {
		code, body := post(t, srv.URL, "application/json", c.enc, c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) || strings.Contains(body, "UnmarshalJSON") || strings.Contains(body, "\\u001f") {
			t.Errorf("%s: %d %s\nwant 400 with %q", c.name, code, body, c.want)
		}
	}
	if n := len(folded(t, db)); n != 0 {
		t.Errorf("%d executions stored, want none", n)
	}
	// An empty export is still one.
	if code, body := post(t, srv.URL, "application/json", "", []byte(`{"resourceSpans": []}`)); code != http.StatusOK {
		t.Errorf("an empty export: %d %s", code, body)
	}
}
