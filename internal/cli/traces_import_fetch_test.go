package cli

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/internal/fakebackend"
)

// 'retrylab import URL' fetches a trace from Tempo's API (v1, v2) and
// Jaeger's (v1, v3) and imports it as it imports the same download from a
// file; the token goes along as --header says.
func TestCLIImportURLsFromTempoAndJaeger(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "s3cret")
	jaeger := fakebackend.Jaeger(t, repoRoot, "")
	db := newDB(t)
	urls := []string{
		tempo.URL + "/api/traces/" + fakebackend.TempoV1ID,
		tempo.URL + "/api/v2/traces/" + fakebackend.TempoV2ID,
		jaeger.URL + "/api/traces/" + fakebackend.JaegerV1ID,
		jaeger.URL + "/api/v3/traces/" + fakebackend.JaegerV3ID,
	}
	r := ok(t, db, append([]string{"import", "--header", "Authorization: Bearer s3cret"}, urls...)...)
	has(t, r, urls[0]+": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-1\n",
		urls[1]+": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-2\n",
		urls[2]+": Jaeger JSON, 6 spans imported -> otlp-conv-jaeger-mail-1\n",
		urls[3]+": Jaeger API v3 JSON, 6 spans imported -> otlp-conv-jaeger-mail-3\n")
	has(t, must(t, 1, db, "audit", "otlp-conv-tempo-mail-1"), "send_email")
	// Again: nothing new.
	has(t, ok(t, db, "import", "--header", "Authorization: Bearer s3cret", urls[0]), "0 spans imported, 6 already there")
}

// A search of Tempo (TraceQL) or Jaeger (a service) imports each trace it
// finds, one import each.
func TestCLIImportSearches(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "")
	jaeger := fakebackend.Jaeger(t, repoRoot, "")
	db := newDB(t)
	r := ok(t, db, "import", "--tempo", tempo.URL, "--query", `{ span.gen_ai.operation.name = "execute_tool" }`, "--since", "2h", "--limit", "5")
	has(t, r, tempo.URL+"/api/traces/"+fakebackend.TempoV1ID+": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-1\n",
		tempo.URL+"/api/traces/"+fakebackend.TempoV2ID+": Tempo JSON, 6 spans imported -> otlp-conv-tempo-mail-2\n")
	if got := tempo.Requests(); len(got) != 3 || !strings.HasPrefix(got[0], "GET /api/search?end=") || !strings.Contains(got[0], "&limit=5&q=%7B+span.gen_ai") {
		t.Errorf("Tempo was asked %q", got)
	}
	r = ok(t, db, "import", "--jaeger", jaeger.URL+"/", "--service", fakebackend.JaegerService)
	has(t, r, jaeger.URL+"/api/traces/"+fakebackend.JaegerV1ID+": Jaeger JSON, 6 spans imported -> otlp-conv-jaeger-mail-1\n")
	if got := jaeger.Requests(); len(got) != 2 || !strings.Contains(got[0], "&limit=20&service=mailer-agent&start=") {
		t.Errorf("Jaeger was asked %q", got)
	}
	has(t, ok(t, db, "import", "--jaeger", jaeger.URL, "--service", "nobody", "--since", "30m"), "no traces found in the last 30m0s\n")
}

// Every bad URL, answer or flag is one line naming the URL, and nothing is
// stored; a search goes on past a trace that fails.
func TestCLIImportURLRefusals(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "s3cret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Error(w, "ingester unavailable", http.StatusBadGateway)
		case "/big":
			w.Write([]byte(`{"batches": [` + strings.Repeat(" ", 3<<20) + `]}`))
		case "/broken":
			w.Write([]byte("{\"batches\": [\n{\"resource\": {}, \"scopeSpans\": [{\"spans\": [{\"traceId\": \"AAEC\"}]}]}\n]}"))
		case "/html":
			w.Write([]byte("<!doctype html><title>Jaeger UI</title>"))
		case "/api/search":
			w.Write([]byte(`{"traces":[{"traceID":"` + fakebackend.TempoV1ID + `"},{"traceID":"../admin"}]}`))
		case "/api/traces/" + fakebackend.TempoV1ID:
			// Tempo again, by another name of loopback.
			http.Redirect(w, r, strings.Replace(tempo.URL, "127.0.0.1", "localhost", 1)+r.URL.Path, http.StatusTemporaryRedirect)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	db := newDB(t)
	auth := "Authorization: Bearer s3cret"
	v1 := tempo.URL + "/api/traces/" + fakebackend.TempoV1ID
	for _, c := range []struct {
		args []string
		want string
		code int // 0: 1
	}{
		{[]string{v1}, "retrylab: import HTTP 401 from " + v1 + ": unauthorized: the server wants credentials: Unauthorized (give --header 'Authorization: Bearer …' or $RETRYLAB_FETCH_AUTHORIZATION)", 0},
		{[]string{"--header", auth, tempo.URL + "/api/traces/0001"}, "retrylab: import HTTP 404 from " + tempo.URL + "/api/traces/0001: not found (no trace with that id, or no such API there): trace not found", 0},
		{[]string{srv.URL + "/down"}, "retrylab: import HTTP 502 from " + srv.URL + "/down: server error: ingester unavailable", 0},
		{[]string{"--max-mib", "2", srv.URL + "/big"}, "retrylab: import " + srv.URL + "/big: answer too large: larger than 2 MiB", 0},
		{[]string{srv.URL + "/broken"}, "retrylab: import " + srv.URL + "/broken: line 2", 0},
		{[]string{srv.URL + "/html"}, "retrylab: import " + srv.URL + "/html: it is HTML (a web page: a UI's, a login's or an error page?), not a trace of any format retrylab reads", 0},
		{[]string{"http:///x"}, "retrylab: http:///x: a URL without a host", 0},
		{[]string{"--header", "Authorization Bearer", v1}, `retrylab: --header "Authorization Bearer": write it as 'Name: value' (see --help)`, 2},
		{[]string{"--jaeger", srv.URL}, "retrylab: --jaeger: name the service whose traces to import with --service (see --help)", 2},
		{[]string{"--tempo", "tempo:3200"}, "retrylab: --tempo tempo:3200: not an http or https URL (see --help)", 2},
		{[]string{"--tempo", "ftp://a"}, "retrylab: --tempo ftp://a: retrylab fetches only http and https URLs, not ftp (a file: give its path) (see --help)", 2},
		{[]string{"ftp://a/x"}, "retrylab: ftp://a/x: retrylab fetches only http and https URLs, not ftp (a file: give its path)", 0},
		{[]string{"--tempo", srv.URL, "--timeout", "0"}, "retrylab: --timeout 0s: give a duration above zero (see --help)", 2},
		{[]string{"--tempo", srv.URL, "--max-mib", "-1"}, "retrylab: --max-mib -1: give a size above zero (see --help)", 2},
		{[]string{"--tempo", srv.URL, "--since", "-1h"}, "retrylab: --since -1h0m0s: give a duration above zero (see --help)", 2},
		{[]string{"--follow", v1}, "retrylab: --follow is for a search: give --tempo URL or --jaeger URL with it (see --help)", 2},
		{[]string{"--query", "{}", v1}, "retrylab: --query is for a search: give --tempo URL or --jaeger URL with it (see --help)", 2},
		{[]string{"--tempo", srv.URL, "--every", "1s"}, "retrylab: --every is how often --follow searches: give --follow with it (see --help)", 2},
		{[]string{"--tempo", srv.URL, "--jaeger", srv.URL, "--service", "s"}, "retrylab: --tempo and --jaeger: search one backend at a time (see --help)", 2},
		{[]string{"--tempo", tempo.URL, "--header", auth, "--limit", "0"}, "retrylab: --limit 0: give a number above zero (see --help)", 2},
		{[]string{"--tempo", srv.URL + "/nothing"}, "retrylab: HTTP 404 from " + srv.URL + "/nothing/api/search?end=", 0},
		{[]string{"--tempo", srv.URL}, "retrylab: " + srv.URL + "/api/search?end=", 0},
		// The token goes to the host given, not to another that it
		// redirects to (Go's client drops it).
		{[]string{"--header", auth, srv.URL + "/api/traces/" + fakebackend.TempoV1ID}, "retrylab: import HTTP 401 from " + strings.Replace(tempo.URL, "127.0.0.1", "localhost", 1) + "/api/traces/" + fakebackend.TempoV1ID + " (redirected from " + srv.URL + "/api/traces/" + fakebackend.TempoV1ID + "): unauthorized", 0},
	} {
		msg := fails(t, max(c.code, 1), db, append([]string{"import"}, c.args...)...)
		if !strings.HasPrefix(msg, c.want) {
			t.Errorf("import %q: %s\nwant %s", c.args, msg, c.want)
		}
	}
	if r := rl(t, db, "audit"); strings.Contains(r.stdout+r.stderr, "otlp-") {
		t.Errorf("a refused import left executions behind\n%s", r)
	}
}

// $RETRYLAB_FETCH_AUTHORIZATION is the Authorization header when no
// --header gives one.
func TestCLIImportURLTokenFromEnvironment(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "s3cret")
	db := newDB(t)
	cmd := exec.Command(bin, "--db", db, "import", tempo.URL+"/api/traces/"+fakebackend.TempoV1ID)
	cmd.Dir = filepath.Dir(db)
	cmd.Env = append(cliEnv(), "RETRYLAB_FETCH_AUTHORIZATION=Bearer s3cret")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 || !strings.Contains(out.String(), "6 spans imported") {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	if got := tempo.Requests(); len(got) != 1 || !strings.HasSuffix(got[0], " Bearer s3cret") {
		t.Errorf("Tempo was asked %q", got)
	}
}

// While serve holds the database, a search's traces go to it one import
// each, and its subscribers (a running explorer) hear of each as it
// arrives.
func TestCLIImportSearchAttached(t *testing.T) {
	t.Parallel()
	tempo := fakebackend.Tempo(t, repoRoot, "")
	db := newDB(t)
	serve := background(t, db, "serve")
	serve.banner(t)
	c, err := control.Dial(db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	notices, stop := c.Subscribe(1 << 12)
	defer stop()
	has(t, rl(t, db, "import", "--tempo", tempo.URL, "--query", "{}"), "otlp-conv-tempo-mail-1", "otlp-conv-tempo-mail-2")
	heard := map[string]bool{}
	for wait := time.After(10 * time.Second); !heard["otlp-conv-tempo-mail-1"] || !heard["otlp-conv-tempo-mail-2"]; {
		select {
		case n := <-notices:
			heard[n.Execution] = true
		case <-wait:
			t.Fatalf("the host's subscribers heard of %v only", heard)
		}
	}
	for _, x := range []string{"otlp-conv-tempo-mail-1", "otlp-conv-tempo-mail-2"} {
		if rec, err := c.Execution(x); err != nil || rec.Imported == "" {
			t.Errorf("%s through the host: %+v %v", x, rec, err)
		}
	}
	if _, err := c.Execution("otlp-conv-jaeger-mail-1"); !errors.Is(err, engine.ErrNoExecution) {
		t.Errorf("an execution never imported: %v", err)
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}
