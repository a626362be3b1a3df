package jaeger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/retrylab/retrylab/engine/audit"
)

// A real Jaeger keeps the article's window as any agent's spans; retrylab
// imports it from Jaeger's query API as a user would (a trace's URL, API
// v1 and v3, and a search by service) and the audit finds the retried
// send and nothing in the control; importing again changes nothing.
func TestImportFromRealJaeger(t *testing.T) {
	j := startJaeger(t)
	sendWindow(t, j.OTLP, time.Now().Add(-5*time.Minute).Truncate(time.Millisecond))
	waitForTrace(t, j, articleTrace, articleSpans)
	waitForTrace(t, j, controlTrace, controlSpans)

	v1 := j.Query + "/api/traces/" + articleTrace.String()
	v3 := j.Query + "/api/v3/traces/" + articleTrace.String()

	t.Run("v1 URL", func(t *testing.T) {
		db := newDB(t)
		has(t, run(t, 0, db, "import", v1), fmt.Sprintf("%s: Jaeger JSON, %d spans imported -> %s\n", v1, articleSpans, articleExecution))
		checkAudit(t, db)
		has(t, run(t, 0, db, "import", v1), fmt.Sprintf("%s: Jaeger JSON, 0 spans imported, %d already there", v1, articleSpans))
		// API v3 answers the same spans: nothing new either.
		has(t, run(t, 0, db, "import", v3), fmt.Sprintf("%s: Jaeger API v3 JSON, 0 spans imported, %d already there", v3, articleSpans))
		checkAudit(t, db)
	})
	t.Run("v3 URL", func(t *testing.T) {
		db := newDB(t)
		has(t, run(t, 0, db, "import", v3), fmt.Sprintf("%s: Jaeger API v3 JSON, %d spans imported -> %s\n", v3, articleSpans, articleExecution))
		checkAudit(t, db)
		has(t, run(t, 0, db, "import", v3), fmt.Sprintf("0 spans imported, %d already there", articleSpans))
		checkAudit(t, db)
	})
	t.Run("search by service", func(t *testing.T) {
		db := newDB(t)
		search := []string{"import", "--jaeger", j.Query, "--service", service, "--since", "1h"}
		out := run(t, 0, db, search...)
		has(t, out,
			fmt.Sprintf("%s: Jaeger JSON, %d spans imported -> %s\n", v1, articleSpans, articleExecution),
			fmt.Sprintf("/api/traces/%s: Jaeger JSON, %d spans imported -> %s\n", controlTrace, controlSpans, controlExecution))
		checkAudit(t, db)
		has(t, run(t, 0, db, search...),
			fmt.Sprintf("%s: Jaeger JSON, 0 spans imported, %d already there", v1, articleSpans),
			fmt.Sprintf("0 spans imported, %d already there", controlSpans))
		checkAudit(t, db)
	})
}

// checkAudit audits db's executions: one finding, the article's email sent
// twice after a timeout, graded possible (the first attempt's outcome is
// unknown); the control's two different emails are no finding.
func checkAudit(t *testing.T, db string) {
	t.Helper()
	out := run(t, 0, db, "audit", "--json")
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	if rep.Counts != (audit.Counts{Possible: 1}) || len(rep.Findings) != 1 {
		t.Fatalf("audit: %+v, want one possible finding\n%s", rep.Counts, out)
	}
	f := rep.Findings[0]
	var args map[string]string
	if err := json.Unmarshal(f.Args, &args); err != nil || f.Grade != audit.Possible || f.Tool != "send_email" || args["to"] != "ana@example.com" {
		t.Errorf("finding %s %s %s (%v)", f.Grade, f.Tool, f.Args, err)
	}
	if len(f.Attempts) != 2 || f.Attempts[0].Execution != articleExecution || f.Attempts[1].Execution != articleExecution ||
		f.Attempts[0].Outcome == f.Attempts[1].Outcome {
		t.Errorf("finding's attempts %+v, want the article's timed-out send and its successful repeat", f.Attempts)
	}
	for _, a := range f.Attempts {
		if a.Execution == controlExecution {
			t.Errorf("the control's send is in a finding: %+v", a)
		}
	}
}

// waitForTrace polls Jaeger's API v1 until it holds the trace's spans
// (the collector's pipeline stores them shortly after the export).
func waitForTrace(t *testing.T, j server, id trace.TraceID, spans int) {
	t.Helper()
	url := j.Query + "/api/traces/" + id.String()
	var got int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		var doc struct {
			Data []struct {
				Spans []json.RawMessage `json:"spans"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(doc.Data) != 1 {
			continue
		}
		if got = len(doc.Data[0].Spans); got == spans {
			return
		}
	}
	t.Fatalf("Jaeger holds %d spans of trace %s, want %d", got, id, spans)
}

// newDB is a database path in a directory of the test's own.
func newDB(t *testing.T) string {
	return filepath.Join(t.TempDir(), "retrylab.db")
}

// run runs `retrylab --db db args...` as a user would, in db's directory
// with no RETRYLAB_ variable from outside, and wants exit code code; it
// returns what the command printed on standard output.
func run(t *testing.T, code int, db string, args ...string) string {
	t.Helper()
	cmd := exec.Command(retrylabBin, append([]string{"--db", db}, args...)...)
	cmd.Dir = filepath.Dir(db)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RETRYLAB_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	got := 0
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		got = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("retrylab %s: %v", strings.Join(args, " "), err)
	}
	if got != code {
		t.Fatalf("retrylab %s: exit %d, want %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), got, code, out.String(), errOut.String())
	}
	return out.String()
}

// has fails the test unless out holds each of want.
func has(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
