// Package fakebackend serves, for tests, the HTTP APIs of Grafana Tempo
// and Jaeger as their documentation describes them, over the trace
// downloads in fixtures/tempo and fixtures/jaeger: trace by id, and the
// search. It listens on loopback only (httptest).
package fakebackend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// The fixtures' trace ids.
const (
	TempoV1ID  = "4bf92f3577b34da6a3ce929d0e0e4736" // fixtures/tempo/mailer-api-v1.json
	TempoV2ID  = "4bf92f3577b34da6a3ce929d0e0e4737" // fixtures/tempo/mailer-api-v2.json
	JaegerV1ID = "4bf92f3577b34da6"                 // fixtures/jaeger/mailer-ui.json
	JaegerV3ID = "4bf92f3577b34da6a3ce929d0e0e4738" // fixtures/jaeger/mailer-api-v3.json
)

// JaegerService is the service of the Jaeger fixtures' trace.
const JaegerService = "mailer-agent"

// Backend is a fake Tempo or Jaeger: its server, and the requests it
// was asked, as "METHOD path?query" with the Authorization header after a
// space when there is one.
type Backend struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

// Requests are the requests the backend was asked, in order.
func (b *Backend) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

func (b *Backend) record(r *http.Request) {
	line := r.Method + " " + r.URL.RequestURI()
	if a := r.Header.Get("Authorization"); a != "" {
		line += " " + a
	}
	b.mu.Lock()
	b.requests = append(b.requests, line)
	b.mu.Unlock()
}

// read is a fixture's bytes; root is the repository's root.
func read(t testing.TB, root string, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{root, "fixtures"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// window reads a search's start, end and limit, and answers 400 as the
// backends do when they are not numbers.
func window(w http.ResponseWriter, r *http.Request) (start, end int64, limit int, ok bool) {
	q := r.URL.Query()
	var err error
	if start, err = strconv.ParseInt(q.Get("start"), 10, 64); err == nil {
		if end, err = strconv.ParseInt(q.Get("end"), 10, 64); err == nil {
			limit, err = strconv.Atoi(q.Get("limit"))
		}
	}
	if err != nil || end < start {
		http.Error(w, fmt.Sprintf("invalid start, end or limit: %v", err), http.StatusBadRequest)
		return 0, 0, 0, false
	}
	return start, end, limit, true
}

// Tempo is a fake Tempo at root's fixtures: GET /api/traces/{id} answers
// API v1 ({"batches": ...}) for both fixture traces, GET
// /api/v2/traces/{id} API v2 ({"trace": ..., "status"}), and GET
// /api/search?q=&start=&end=&limit= (Unix seconds) {"traces":
// [{"traceID", ...}]} with both. An unknown id is 404, as Tempo answers.
// With token set, a request without "Authorization: Bearer token" is 401.
func Tempo(t testing.TB, root, token string) *Backend {
	v1 := read(t, root, "tempo", "mailer-api-v1.json")
	v2 := read(t, root, "tempo", "mailer-api-v2.json")
	// API v1's shape of the second trace: its resourceSpans as batches.
	var doc struct {
		Trace struct {
			ResourceSpans json.RawMessage `json:"resourceSpans"`
		} `json:"trace"`
	}
	if err := json.Unmarshal(v2, &doc); err != nil {
		t.Fatal(err)
	}
	v2AsV1, err := json.Marshal(map[string]json.RawMessage{"batches": doc.Trace.ResourceSpans})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]byte{TempoV1ID: v1, TempoV2ID: v2AsV1}
	b := &Backend{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, byID[r.PathValue("id")])
	})
	mux.HandleFunc("GET /api/v2/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == TempoV2ID {
			answer(w, v2)
			return
		}
		answer(w, nil)
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		start, _, limit, ok := window(w, r)
		if !ok {
			return
		}
		type found struct {
			TraceID           string `json:"traceID"`
			RootServiceName   string `json:"rootServiceName"`
			StartTimeUnixNano string `json:"startTimeUnixNano"`
			DurationMs        int    `json:"durationMs"`
		}
		all := []found{
			{TempoV1ID, "mailer-agent", strconv.FormatInt(start*1e9, 10), 9000},
			{TempoV2ID, "mailer-agent", strconv.FormatInt(start*1e9, 10), 9000},
		}
		if limit > 0 && limit < len(all) {
			all = all[:limit]
		}
		json.NewEncoder(w).Encode(map[string]any{"traces": all, "metrics": map[string]any{"inspectedTraces": len(all)}})
	})
	b.Server = httptest.NewServer(guard(b, token, mux))
	t.Cleanup(b.Close)
	return b
}

// Jaeger is a fake Jaeger query service at root's fixtures: GET
// /api/traces/{id} answers API v1's {"data": [...]}, GET
// /api/v3/traces/{id} API v3's {"result": ...}, and GET
// /api/traces?service=&start=&end=&limit= (microseconds) {"data": [...]}
// with the traces of the service whole. An unknown id is 404, as Jaeger
// answers; a search without a service is 400. With token set, a request
// without "Authorization: Bearer token" is 401.
func Jaeger(t testing.TB, root, token string) *Backend {
	v1 := read(t, root, "jaeger", "mailer-ui.json")
	v3 := read(t, root, "jaeger", "mailer-api-v3.json")
	b := &Backend{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == JaegerV1ID {
			answer(w, v1)
			return
		}
		answer(w, nil)
	})
	mux.HandleFunc("GET /api/v3/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == JaegerV3ID {
			answer(w, v3)
			return
		}
		answer(w, nil)
	})
	mux.HandleFunc("GET /api/traces", func(w http.ResponseWriter, r *http.Request) {
		service := r.URL.Query().Get("service")
		if service == "" {
			http.Error(w, `{"data":null,"errors":[{"code":400,"msg":"parameter 'service' is required"}]}`, http.StatusBadRequest)
			return
		}
		if _, _, _, ok := window(w, r); !ok {
			return
		}
		if service != JaegerService {
			w.Write([]byte(`{"data":[],"total":0,"limit":0,"offset":0,"errors":null}`))
			return
		}
		w.Write(v1) // the one trace, whole, as the search answers
	})
	b.Server = httptest.NewServer(guard(b, token, mux))
	t.Cleanup(b.Close)
	return b
}

// answer writes a trace's JSON, or 404 for none.
func answer(w http.ResponseWriter, data []byte) {
	if data == nil {
		http.Error(w, "trace not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// guard records each request and, with a token, refuses those without it.
func guard(b *Backend, token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.record(r)
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
