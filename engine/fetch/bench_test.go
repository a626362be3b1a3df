package fetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fetch"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/jaeger"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/tempo"
	"github.com/retrylab/retrylab/store"
)

// benchSpans is the trace's size: $RETRYLAB_BENCH_SPANS, or 10 000 spans
// with RETRYLAB_BENCH_FULL=1 (BENCHMARKS.md's), or 1 000 for CI's smoke
// run.
func benchSpans() int {
	if n, err := strconv.Atoi(os.Getenv("RETRYLAB_BENCH_SPANS")); err == nil && n > 1 {
		return n
	}
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		return 10_000
	}
	return 1_000
}

const benchTraceID = "5bf92f3577b34da6a3ce929d0e0e4736"

// benchSpanID is the i-th span's id, 16 hex digits.
func benchSpanID(i int) string { return fmt.Sprintf("c%015x", i) }

// tempoTrace is a Tempo API v1 answer of n spans: an agent whose every
// other tool call is a send_email.
func tempoTrace(n int) []byte {
	attr := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	start := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC).UnixNano()
	spans := make([]map[string]any, 0, n)
	spans = append(spans, map[string]any{
		"traceId": benchTraceID, "spanId": benchSpanID(0), "name": "invoke_agent mailer", "kind": "SPAN_KIND_INTERNAL",
		"startTimeUnixNano": strconv.FormatInt(start, 10), "endTimeUnixNano": strconv.FormatInt(start+int64(n)*int64(time.Millisecond), 10),
		"attributes": []any{attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "mailer"), attr("gen_ai.conversation.id", "bench-tempo")},
	})
	for i := 1; i < n; i++ {
		tool := "lookup_customer"
		if i%2 == 0 {
			tool = "send_email"
		}
		t0 := start + int64(i)*int64(time.Millisecond)
		spans = append(spans, map[string]any{
			"traceId": benchTraceID, "spanId": benchSpanID(i), "parentSpanId": benchSpanID(0), "name": "execute_tool " + tool, "kind": "SPAN_KIND_INTERNAL",
			"startTimeUnixNano": strconv.FormatInt(t0, 10), "endTimeUnixNano": strconv.FormatInt(t0+int64(time.Millisecond)/2, 10),
			"attributes": []any{attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", tool),
				attr("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)), attr("gen_ai.conversation.id", "bench-tempo")},
		})
	}
	data, _ := json.Marshal(map[string]any{"batches": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{attr("service.name", "mailer-agent")}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "bench"}, "spans": spans}},
	}}})
	return data
}

// jaegerTrace is a Jaeger API v1 answer ({"data": [...]}) of n spans, the
// same agent as tempoTrace's.
func jaegerTrace(n int) []byte {
	tag := func(k, v string) map[string]any { return map[string]any{"key": k, "type": "string", "value": v} }
	start := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC).UnixMicro()
	spans := make([]map[string]any, 0, n)
	spans = append(spans, map[string]any{
		"traceID": benchTraceID, "spanID": benchSpanID(0), "operationName": "invoke_agent mailer", "references": []any{},
		"startTime": start, "duration": n * 1000, "processID": "p1", "logs": []any{},
		"tags": []any{tag("gen_ai.operation.name", "invoke_agent"), tag("gen_ai.agent.name", "mailer"), tag("gen_ai.conversation.id", "bench-jaeger")},
	})
	for i := 1; i < n; i++ {
		tool := "lookup_customer"
		if i%2 == 0 {
			tool = "send_email"
		}
		spans = append(spans, map[string]any{
			"traceID": benchTraceID, "spanID": benchSpanID(i), "operationName": "execute_tool " + tool,
			"references": []any{map[string]any{"refType": "CHILD_OF", "traceID": benchTraceID, "spanID": benchSpanID(0)}},
			"startTime":  start + int64(i)*1000, "duration": 500, "processID": "p1", "logs": []any{},
			"tags": []any{tag("gen_ai.operation.name", "execute_tool"), tag("gen_ai.tool.name", tool),
				tag("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)), tag("gen_ai.conversation.id", "bench-jaeger")},
		})
	}
	data, _ := json.Marshal(map[string]any{"data": []any{map[string]any{
		"traceID": benchTraceID, "spans": spans,
		"processes": map[string]any{"p1": map[string]any{"serviceName": "mailer-agent", "tags": []any{}}},
	}}})
	return data
}

// BenchmarkFetch10kSpans fetches a 10 000-span trace from a Tempo- and a
// Jaeger-shaped server on loopback, side by side in one run: a bare GET
// (net/http, the body read whole) plus the package's decode, against
// Client.Get (timeout, size limit, status check) plus the same decode,
// and against the import the CLI does (Client.Get into
// Traces.ImportStream: sniffed, decoded, stored in a fresh database and
// committed). Metrics: fetch/bare and import/bare, the ratios of their
// mean times.
func BenchmarkFetch10kSpans(b *testing.B) {
	spans := benchSpans()
	for _, backend := range []struct {
		name   string
		doc    []byte
		decode func([]byte) (int, error)
	}{
		{"tempo", tempoTrace(spans), func(data []byte) (int, error) {
			n := 0
			err := tempo.Decode(data, func(bt otlp.Batch) error { n += len(bt.Spans); return nil })
			return n, err
		}},
		{"jaeger", jaegerTrace(spans), func(data []byte) (int, error) {
			n := 0
			_, err := jaeger.Decode(data, func(bt otlp.Batch) error { n += len(bt.Spans); return nil })
			return n, err
		}},
	} {
		b.Run(backend.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(backend.doc)
			}))
			defer srv.Close()
			u := srv.URL + "/api/traces/" + benchTraceID
			c := fetch.Client{}
			check := func(n int, err error) {
				if err != nil || n != spans {
					b.Fatalf("%d spans, %v", n, err)
				}
			}
			var bare, fetched, imported time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				resp, err := http.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				check(backend.decode(data))
				bare += time.Since(t0)

				t0 = time.Now()
				body, err := c.Get(context.Background(), u)
				if err != nil {
					b.Fatal(err)
				}
				data, err = io.ReadAll(body)
				body.Close()
				if err != nil {
					b.Fatal(err)
				}
				check(backend.decode(data))
				fetched += time.Since(t0)

				b.StopTimer()
				db, err := store.Open(filepath.Join(b.TempDir(), fmt.Sprintf("%d.db", i)), store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				traces := engine.LocalTraces(db, all.Registry())
				b.StartTimer()
				t0 = time.Now()
				body, err = c.Get(context.Background(), u)
				if err != nil {
					b.Fatal(err)
				}
				_, err = traces.ImportStream(u, body)
				body.Close()
				imported += time.Since(t0)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				traces.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(bare.Microseconds())/float64(b.N)/1000, "bare-ms")
			b.ReportMetric(float64(fetched.Microseconds())/float64(b.N)/1000, "fetch-ms")
			b.ReportMetric(float64(imported.Microseconds())/float64(b.N)/1000, "import-ms")
			b.ReportMetric(float64(fetched)/float64(bare), "fetch/bare")
			b.ReportMetric(float64(imported)/float64(bare), "import/bare")
		})
	}
}
