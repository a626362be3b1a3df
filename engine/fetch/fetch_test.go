package fetch_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fetch"
	"github.com/retrylab/retrylab/internal/fakebackend"
)

const root = "../.."

// get fetches u whole with c.
func get(t *testing.T, c fetch.Client, u string) ([]byte, error) {
	t.Helper()
	body, err := c.Get(context.Background(), u)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// A trace is fetched by id from Tempo's API v1 and v2 and Jaeger's v1 and
// v3 as each answers it, the header given sent along.
func TestGetTracesFromTempoAndJaeger(t *testing.T) {
	tempo := fakebackend.Tempo(t, root, "s3cret")
	jaeger := fakebackend.Jaeger(t, root, "")
	c := fetch.Client{Header: http.Header{"Authorization": {"Bearer s3cret"}}}
	for u, want := range map[string]string{
		tempo.URL + "/api/traces/" + fakebackend.TempoV1ID:      `"batches"`,
		tempo.URL + "/api/v2/traces/" + fakebackend.TempoV2ID:   `"trace"`,
		jaeger.URL + "/api/traces/" + fakebackend.JaegerV1ID:    `"data"`,
		jaeger.URL + "/api/v3/traces/" + fakebackend.JaegerV3ID: `"result"`,
	} {
		data, err := get(t, c, u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if !strings.Contains(string(data[:min(len(data), 200)]), want) {
			t.Errorf("%s answered %.80q, want %s", u, data, want)
		}
	}
	if got := tempo.Requests(); len(got) != 2 || !strings.HasSuffix(got[0], " Bearer s3cret") {
		t.Errorf("Tempo was asked %q", got)
	}
}

// Every refusal is one line that names the URL and the status, and says
// what it means.
func TestGetSaysWhatWentWrong(t *testing.T) {
	tempo := fakebackend.Tempo(t, root, "s3cret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Error(w, "ingester unavailable\nretry later", http.StatusServiceUnavailable)
		case "/big":
			w.Write([]byte(`{"batches": [` + strings.Repeat(" ", 2<<10) + `]}`))
		case "/slow":
			w.Write([]byte(`{"batches": [`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	c := fetch.Client{Header: http.Header{"Authorization": {"Bearer s3cret"}}}
	missing := tempo.URL + "/api/traces/00000000000000000000000000000001"
	cases := []struct {
		c    fetch.Client
		u    string
		want string
		is   error
	}{
		{c, missing, "HTTP 404 from " + missing + ": not found (no trace with that id, or no such API there): trace not found", nil},
		{fetch.Client{}, tempo.URL + "/api/traces/" + fakebackend.TempoV1ID, "HTTP 401 from " + tempo.URL + "/api/traces/" + fakebackend.TempoV1ID + ": unauthorized: the server wants credentials: Unauthorized", nil},
		{c, srv.URL + "/down", "HTTP 503 from " + srv.URL + "/down: server error: ingester unavailable retry later", nil},
		{fetch.Client{MaxBytes: 1 << 10}, srv.URL + "/big", "answer too large: larger than 1 KiB", fetch.ErrTooLarge},
		{fetch.Client{Timeout: 50 * time.Millisecond}, srv.URL + "/slow", "no complete answer in time: the answer took longer than 50ms", fetch.ErrTimeout},
		{c, "ftp://tempo/api/traces/1", "ftp://tempo/api/traces/1: retrylab fetches only http and https URLs, not ftp (a file: give its path)", nil},
		{c, "http:///api/traces/1", "http:///api/traces/1: a URL without a host", nil},
	}
	for _, tc := range cases {
		_, err := get(t, tc.c, tc.u)
		if err == nil || err.Error() != tc.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v\nwant %s", tc.u, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not %v", tc.u, err, tc.is)
		}
	}
	// An answer of exactly the limit is read whole.
	data, err := get(t, fetch.Client{MaxBytes: int64(len(`{"batches": [`) + 2<<10 + 2)}, srv.URL+"/big")
	if err != nil || len(data) != len(`{"batches": [`)+2<<10+2 {
		t.Errorf("an answer of the limit: %d bytes, %v", len(data), err)
	}
}

// Tempo's search is asked with TraceQL, Unix seconds and a limit and
// answers the traces' ids; Jaeger's with a service and microseconds.
func TestSearchTempoAndJaeger(t *testing.T) {
	tempo := fakebackend.Tempo(t, root, "")
	jaeger := fakebackend.Jaeger(t, root, "")
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := fetch.Window{Start: end.Add(-time.Hour), End: end, Limit: 20}

	ts := fetch.Tempo{Base: tempo.URL + "/", TraceQL: `{ span.gen_ai.operation.name = "execute_tool" }`}
	ids, err := ts.Search(context.Background(), w)
	if err != nil || !slices.Equal(ids, []string{fakebackend.TempoV1ID, fakebackend.TempoV2ID}) {
		t.Fatalf("Tempo search: %q %v", ids, err)
	}
	wantQ := "GET /api/search?end=1796126400&limit=20&q=%7B+span.gen_ai.operation.name+%3D+%22execute_tool%22+%7D&start=1796122800"
	if got := tempo.Requests(); !slices.Equal(got, []string{wantQ}) {
		t.Errorf("Tempo was asked %q, want %q", got, wantQ)
	}
	if u := ts.TraceURL(ids[0]); u != tempo.URL+"/api/traces/"+fakebackend.TempoV1ID {
		t.Errorf("Tempo's trace URL %s", u)
	}
	if ids, err := ts.Search(context.Background(), fetch.Window{Start: w.Start, End: end, Limit: 1}); err != nil || len(ids) != 1 {
		t.Errorf("Tempo search, limit 1: %q %v", ids, err)
	}

	js := fetch.Jaeger{Base: jaeger.URL, Service: fakebackend.JaegerService}
	ids, err = js.Search(context.Background(), w)
	if err != nil || !slices.Equal(ids, []string{fakebackend.JaegerV1ID}) {
		t.Fatalf("Jaeger search: %q %v", ids, err)
	}
	wantQ = "GET /api/traces?end=1796126400000000&limit=20&service=mailer-agent&start=1796122800000000"
	if got := jaeger.Requests(); !slices.Equal(got, []string{wantQ}) {
		t.Errorf("Jaeger was asked %q, want %q", got, wantQ)
	}
	if ids, err := (fetch.Jaeger{Base: jaeger.URL, Service: "nobody"}).Search(context.Background(), w); err != nil || len(ids) != 0 {
		t.Errorf("a service without traces: %q %v", ids, err)
	}
	_, err = (fetch.Jaeger{Base: jaeger.URL}).Search(context.Background(), w)
	if err == nil || !strings.HasPrefix(err.Error(), "HTTP 400 from "+jaeger.URL+"/api/traces?") || !strings.Contains(err.Error(), "parameter 'service' is required") {
		t.Errorf("a search without a service: %v", err)
	}
}

// A search answer that is not one, or names a trace by what cannot be an
// id, is refused naming the URL.
func TestSearchRefusesBadAnswers(t *testing.T) {
	answers := map[string]string{
		"/notjson/api/search": `<html>Grafana</html>`,
		"/badid/api/search":   `{"traces":[{"traceID":"4bf9"},{"traceID":"../../admin"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(answers[r.URL.Path]))
	}))
	defer srv.Close()
	w := fetch.Window{Start: time.Unix(0, 0), End: time.Unix(3600, 0), Limit: 5}
	_, err := fetch.Tempo{Base: srv.URL + "/notjson"}.Search(context.Background(), w)
	if want := srv.URL + "/notjson/api/search?end=3600&limit=5&start=0: not a search answer: invalid character '<' looking for beginning of value"; err == nil || err.Error() != want {
		t.Errorf("an HTML answer: %v\nwant %s", err, want)
	}
	_, err = fetch.Tempo{Base: srv.URL + "/badid"}.Search(context.Background(), w)
	if want := srv.URL + `/badid/api/search?end=3600&limit=5&start=0: trace 2 of the answer has id "../../admin", not 1 to 32 hex digits`; err == nil || err.Error() != want {
		t.Errorf("a bad id: %v\nwant %s", err, want)
	}
}

// A follower answers each trace once, however often a search finds it.
func TestFollowerAnswersEachTraceOnce(t *testing.T) {
	tempo := fakebackend.Tempo(t, root, "")
	f := &fetch.Follower{Searcher: fetch.Tempo{Base: tempo.URL}, Since: time.Hour, Limit: 1}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	first, err := f.Poll(context.Background(), now)
	if err != nil || !slices.Equal(first, []string{fakebackend.TempoV1ID}) {
		t.Fatalf("first poll: %q %v", first, err)
	}
	f.Limit = 20
	second, err := f.Poll(context.Background(), now.Add(15*time.Second))
	if err != nil || !slices.Equal(second, []string{fakebackend.TempoV2ID}) {
		t.Fatalf("second poll: %q %v", second, err)
	}
	third, err := f.Poll(context.Background(), now.Add(30*time.Second))
	if err != nil || len(third) != 0 {
		t.Fatalf("third poll: %q %v", third, err)
	}
	if got := tempo.Requests(); len(got) != 3 || !strings.Contains(got[1], "end=1796126415") {
		t.Errorf("Tempo was asked %q", got)
	}
}

// A trace whose import failed is answered again by the next searches that
// find it, Tries times in all; one imported is not.
func TestFollowerRetriesAFailedTraceBounded(t *testing.T) {
	tempo := fakebackend.Tempo(t, root, "")
	f := &fetch.Follower{Searcher: fetch.Tempo{Base: tempo.URL}, Since: time.Hour, Limit: 20, Tries: 2}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	poll := func(i int) []string {
		t.Helper()
		ids, err := f.Poll(context.Background(), now.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := poll(0); !slices.Equal(got, []string{fakebackend.TempoV1ID, fakebackend.TempoV2ID}) {
		t.Fatalf("first poll: %q", got)
	}
	if left := f.Failed(fakebackend.TempoV1ID); left != 1 {
		t.Errorf("after one failure: %d tries left, want 1", left)
	}
	if got := poll(1); !slices.Equal(got, []string{fakebackend.TempoV1ID}) {
		t.Fatalf("after a failure the next poll answers %q, want the failed trace again", got)
	}
	if left := f.Failed(fakebackend.TempoV1ID); left != 0 {
		t.Errorf("after two failures: %d tries left, want 0", left)
	}
	if got := poll(2); len(got) != 0 {
		t.Fatalf("a trace given up is answered again: %q", got)
	}
}

// Headers the client was given (Authorization and any other) and the
// URL's credentials follow a redirect only to the same scheme, host and
// port; a password in the URL is never in an error's words.
func TestRedirectKeepsCredentialsOnlyOnTheSameOrigin(t *testing.T) {
	type seen struct{ auth, key string }
	got := make(chan seen, 4)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")}
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer target.Close()
	// The same host (127.0.0.1), another port; and another host name.
	otherPort := target.URL
	otherHost := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	var to string
	from := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/self" {
			http.Redirect(w, r, "/there", http.StatusFound)
			return
		}
		if r.URL.Path == "/there" {
			got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")}
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		http.Redirect(w, r, to+"/t", http.StatusFound)
	}))
	defer from.Close()
	c := fetch.Client{Header: http.Header{"X-Api-Key": {"S"}, "Authorization": {"Bearer T"}}}
	for _, dest := range []string{otherPort, otherHost} {
		to = dest
		_, err := get(t, c, from.URL+"/away")
		if s := <-got; s.auth != "" || s.key != "" {
			t.Errorf("a redirect to %s carried Authorization %q and X-Api-Key %q", dest, s.auth, s.key)
		}
		if err == nil {
			t.Error("a 404 is not an error")
		}
	}
	if _, err := get(t, c, from.URL+"/self"); err == nil {
		t.Error("a 404 is not an error")
	}
	if s := <-got; s.auth != "Bearer T" || s.key != "S" {
		t.Errorf("a redirect to the same origin dropped the headers: %+v", s)
	}
	// A password in the URL: sent, never shown.
	withPassword := strings.Replace(from.URL, "http://", "http://admin:hunter2@", 1) + "/self"
	_, err := get(t, fetch.Client{}, withPassword)
	<-got
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "admin:xxxxx@") {
		t.Errorf("an error of a URL with a password: %v", err)
	}
	if r := fetch.Redact(withPassword); strings.Contains(r, "hunter2") {
		t.Errorf("Redact: %s", r)
	}
}

// Only http and https URLs are fetched, their scheme in any case; any
// other scheme is said as such, not looked for as a file.
func TestURLSchemes(t *testing.T) {
	for _, c := range []struct {
		raw   string
		isURL bool
		err   string
	}{
		{"HTTP://tempo:3200/api/traces/1", true, ""},
		{"Https://tempo/api/traces/1", true, ""},
		{"ftp://a/x", true, "ftp://a/x: retrylab fetches only http and https URLs, not ftp (a file: give its path)"},
		{"file:///tmp/x.json", true, "file:///tmp/x.json: retrylab fetches only http and https URLs, not file (a file: give its path)"},
		{"traces.json", false, ""},
		{"./a://b", false, ""},
	} {
		if got := fetch.IsURL(c.raw); got != c.isURL {
			t.Errorf("IsURL(%q) = %v", c.raw, got)
			continue
		}
		if !c.isURL {
			continue
		}
		_, err := fetch.CheckURL(c.raw)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)) {
			t.Errorf("CheckURL(%q) = %v, want %q", c.raw, err, c.err)
		}
	}
}

// A body whose connection closes before its end is ErrCutShort, with how
// much came.
func TestGetSaysABodyCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("0123456789"))
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	_, err := get(t, fetch.Client{}, srv.URL)
	if !errors.Is(err, fetch.ErrCutShort) || err.Error() != "the answer was cut short after 10 bytes (the connection closed before its end)" {
		t.Errorf("%v", err)
	}
}
