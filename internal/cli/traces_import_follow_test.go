package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrylab/retrylab/internal/fakebackend"
)

// flakyTempo is a fake Tempo whose trace by id fails (HTTP 500) the first
// time it is asked for the first fixture trace; hang, when set, makes
// every trace fetch wait until the client gives up.
// asked counts the first trace's fetches, waiting those that hang now.
func flakyTempo(t *testing.T, hang bool) (srv *httptest.Server, asked, waiting *atomic.Int32) {
	tempo := fakebackend.Tempo(t, repoRoot, "")
	target, err := url.Parse(tempo.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	asked, waiting = new(atomic.Int32), new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/traces/"+fakebackend.TempoV1ID {
			if hang {
				waiting.Add(1)
				defer waiting.Add(-1)
				<-r.Context().Done()
				return
			}
			if asked.Add(1) == 1 {
				http.Error(w, "ingester hiccup", http.StatusInternalServerError)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, asked, waiting
}

// waitOutput waits until the process's standard output holds want.
func (s *started) waitOutput(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(s.stdout.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q\nstdout %s\nstderr %s", want, s.stdout, s.stderr)
		}
	}
}

// With --follow, a trace whose fetch failed is fetched again by a later
// search, and the failure's line says so; Ctrl-C then ends it with 130
// and no failure line. Before, the trace was never fetched again.
func TestCLIImportFollowRetriesAFailedTrace(t *testing.T) {
	t.Parallel()
	srv, asked, _ := flakyTempo(t, false)
	db := newDB(t)
	p := background(t, db, "import", "--tempo", srv.URL, "--follow", "--every", "10ms")
	p.waitOutput(t, "/api/traces/"+fakebackend.TempoV1ID+": Tempo JSON, 6 spans imported")
	r := p.stop(t)
	if r.code != 130 {
		t.Errorf("an interrupted --follow: exit %d, want 130\n%s", r.code, r)
	}
	want := "retrylab: import HTTP 500 from " + srv.URL + "/api/traces/" + fakebackend.TempoV1ID + ": server error: ingester hiccup (tried again when a later search finds it, 2 attempts left)\n"
	if r.stderr != want {
		t.Errorf("stderr %q\nwant   %q", r.stderr, want)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the trace was asked for %d times, want 2", n)
	}
	has(t, r, "otlp-conv-tempo-mail-2")
}

// Ctrl-C while a search's trace or a URL is fetched ends the import at
// once with exit 130 and no failure line ("interrupt signal received"
// before), and stores nothing of it.
func TestCLIImportInterruptedExits130(t *testing.T) {
	t.Parallel()
	srv, _, waiting := flakyTempo(t, true)
	for _, args := range [][]string{
		{"import", "--tempo", srv.URL},
		{"import", "--tempo", srv.URL, "--follow"},
		{"import", srv.URL + "/api/traces/" + fakebackend.TempoV1ID},
	} {
		db := newDB(t)
		p := background(t, db, args...)
		// The fetch is under way once the server holds the request.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if waiting.Load() > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v: the fetch never started", args)
			}
		}
		r := p.stop(t)
		for waiting.Load() > 0 { // the client's connection closed: the server lets go
			time.Sleep(10 * time.Millisecond)
		}
		if r.code != 130 || r.stderr != "" {
			t.Errorf("%v interrupted: exit %d, want 130 and nothing on stderr\n%s", args, r.code, r)
		}
	}
}

// A password in a URL's user information is used for the request and
// shown nowhere: not in the summary, not in the executions' source (the
// database holds no trace of it), not in show.
func TestCLIImportURLRedactsItsPassword(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "")
	db := newDB(t)
	u := strings.Replace(tempo.URL, "http://", "http://admin:hunter2@", 1) + "/api/traces/" + fakebackend.TempoV1ID
	r := ok(t, db, "import", u)
	has(t, r, "http://admin:xxxxx@"+strings.TrimPrefix(tempo.URL, "http://")+"/api/traces/"+fakebackend.TempoV1ID+": Tempo JSON, 6 spans imported")
	shown := ok(t, db, "show", "otlp-conv-tempo-mail-1")
	for _, out := range []string{r.stdout + r.stderr, shown.stdout + shown.stderr, ok(t, db, "show", "--json", "otlp-conv-tempo-mail-1").stdout} {
		if strings.Contains(out, "hunter2") {
			t.Errorf("the password is shown:\n%s", out)
		}
	}
	if b, err := os.ReadFile(db); err != nil || bytes.Contains(b, []byte("hunter2")) {
		t.Errorf("the database holds the password (%v)", err)
	}
	if got := tempo.Requests(); len(got) != 1 {
		t.Errorf("Tempo was asked %q", got)
	}
}

// On a terminal, the line that says which trace is being fetched is
// cleared before the trace's own line: each result on a line of its own.
func TestCLIImportSearchProgressOnATerminal(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "")
	db := newDB(t)
	s := startScreen(t, bin, db, 200, 10, "import", "--tempo", tempo.URL)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("import: %v\n%s", err, s.text())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("import did not end:\n%s", s.text())
	}
	time.Sleep(100 * time.Millisecond) // the last bytes to the emulator
	var lines []string
	for _, l := range strings.Split(s.text(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	want := []string{
		tempo.URL + "/api/traces/" + fakebackend.TempoV1ID + ": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-1",
		tempo.URL + "/api/traces/" + fakebackend.TempoV2ID + ": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-2",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the terminal shows\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// An answer whose connection closes before its end is said as such, the
// same alone and beside a running serve (before: "the compressed file
// ends early" of a body never compressed, and "unexpected EOF").
func TestCLIImportURLCutShort(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"resourceSpans": [`))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	want := "retrylab: import " + srv.URL + "/cut: line 1: the answer was cut short after 19 bytes (the connection closed before its end)"
	db := newDB(t)
	if msg := fails(t, 1, db, "import", srv.URL+"/cut"); msg != want {
		t.Errorf("alone: %q\nwant   %q", msg, want)
	}
	// Nothing was stored: no empty database file was left behind.
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a failed URL import left a database file (%v)", err)
	}
	serve := background(t, db, "serve")
	serve.banner(t)
	if msg := fails(t, 1, db, "import", srv.URL+"/cut"); msg != want {
		t.Errorf("beside serve: %q\nwant   %q", msg, want)
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// A URL's scheme is read in any case (it was looked for as a file).
func TestCLIImportURLSchemeInCapitals(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "")
	db := newDB(t)
	u := strings.Replace(tempo.URL, "http://", "HTTP://", 1) + "/api/traces/" + fakebackend.TempoV1ID
	has(t, ok(t, db, "import", u), u+": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-1\n")
}
