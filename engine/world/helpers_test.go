package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/store"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// faultFunc adapts a function to FaultSource.
type faultFunc func(execution, step string, attempt int) []fault.Point

func (f faultFunc) ServerFaults(execution, step string, attempt int) []fault.Point {
	return f(execution, step, attempt)
}

// onAttempt applies points to requests whose attempt header is attempt.
func onAttempt(attempt int, points ...fault.Point) FaultSource {
	return faultFunc(func(_, _ string, a int) []fault.Point {
		if a == attempt {
			return points
		}
		return nil
	})
}

// activityLog collects what the world reports.
type activityLog struct {
	mu   sync.Mutex
	acts []Activity
}

func (l *activityLog) add(a Activity) {
	l.mu.Lock()
	l.acts = append(l.acts, a)
	l.mu.Unlock()
}

func (l *activityLog) all() []Activity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Activity(nil), l.acts...)
}

func (l *activityLog) count(kind string) int {
	n := 0
	for _, a := range l.all() {
		if a.Kind == kind {
			n++
		}
	}
	return n
}

// waitFor polls until an activity matches, failing the test after 5s.
func (l *activityLog) waitFor(t *testing.T, what string, match func(Activity) bool) Activity {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, a := range l.all() {
			if match(a) {
				return a
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %s activity within 5s; got %+v", what, l.all())
	return Activity{}
}

// openDB opens a database in the test's temp dir and checks it at cleanup.
func openDB(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open db: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("db check: %v", err)
		}
		db.Close()
	})
	return db
}

type env struct {
	t     *testing.T
	db    *store.DB
	clock *fakeClock
	w     *World
	log   *activityLog
	mail  *httptest.Server
	crm   *httptest.Server
}

// newEnv builds a world over a fresh database and serves both handlers
// with httptest. configure may adjust the config; prepare may set test
// hooks before any request can arrive.
func newEnv(t *testing.T, configure func(*Config), prepare func(*World)) *env {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "retrylab.db"))
	e := &env{t: t, db: db, clock: newFakeClock(), log: &activityLog{}}
	cfg := Config{DB: db, Clock: e.clock, Observe: e.log.add}
	if configure != nil {
		configure(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.w = w
	if prepare != nil {
		prepare(w)
	}
	e.mail = httptest.NewServer(w.MailHandler())
	e.crm = httptest.NewServer(w.CRMHandler())
	t.Cleanup(func() {
		w.Close() // releases held requests first
		e.mail.Close()
		e.crm.Close()
	})
	return e
}

// response is a decoded reply.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) str(name string) string {
	s, _ := r.body[name].(string)
	return s
}

// call sends one request. header values are set as given (several values
// make several fields).
func call(t *testing.T, client *http.Client, method, url, body string, header http.Header) (response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out, nil
}

// mustCall is call that fails the test on a transport error.
func mustCall(t *testing.T, method, url, body string, header http.Header) response {
	t.Helper()
	r, err := call(t, nil, method, url, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// hdr builds request headers: key "" means no Idempotency-Key; attempt 0
// means unattributed.
func hdr(key string, attempt int) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set(HeaderIdempotencyKey, key)
	}
	if attempt > 0 {
		h.Set(HeaderExecution, "exec_01H8")
		h.Set(HeaderStep, "step-4")
		h.Set(HeaderAttempt, strconv.Itoa(attempt))
		h.Set(HeaderRun, "1")
	}
	return h
}

const invoice = `{"to":"billing@acme.example","subject":"Invoice INV-1042","body":"Your invoice is attached."}`

func (e *env) send(body string, h http.Header) response {
	e.t.Helper()
	return mustCall(e.t, http.MethodPost, e.mail.URL+"/v1/send", body, h)
}

func (e *env) outboxCount() int {
	e.t.Helper()
	n, err := e.w.OutboxCount()
	if err != nil {
		e.t.Fatalf("OutboxCount: %v", err)
	}
	return n
}

func (e *env) wantOutbox(want int) {
	e.t.Helper()
	if got := e.outboxCount(); got != want {
		e.t.Fatalf("outbox has %d messages, want %d", got, want)
	}
}

func wantStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s", r.status, want, r.raw)
	}
}

// wantProblem checks an RFC 9457 problem response.
func wantProblem(t *testing.T, r response, status int) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	if r.str("type") == "" || r.str("title") == "" || r.str("detail") == "" {
		t.Fatalf("problem lacks type, title or detail: %s", r.raw)
	}
	if s, _ := r.body["status"].(float64); int(s) != status {
		t.Fatalf("problem status member %v, want %d", r.body["status"], status)
	}
}
