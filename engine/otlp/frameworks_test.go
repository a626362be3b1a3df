package otlp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// frameworkDir holds copies of ../shared/real-traces/frameworks and the
// controls derived from them (testdata/frameworks/README.md).
const frameworkDir = "testdata/frameworks"

// frameworks are the recordings: each framework's own OpenTelemetry of the
// article's window (a send takes effect, times out, and is retried with
// the same arguments), with the arguments each sends and the turns one
// invocation makes.
var frameworks = []struct {
	name, subject string
	turns         int
}{
	{"pydantic-ai-v2", "Invoice INV-1001", 1},
	{"pydantic-ai-v5", "Invoice INV-1001", 1},
	{"strands", "Invoice INV-1001", 1},
	{"strands-latest", "Invoice INV-1001", 1},
	{"langgraph", "Invoice INV-1001", 1},
	{"openai-agents", "Invoice INV-1001", 1},
	{"js-vercel-otel-dup", "Invoice 42", 1},
	{"js-vercel-legacy-dup", "Invoice 42", 1},
	// LangGraph.js's graph is a CHAIN, not an AGENT: its model calls are
	// turns of their own.
	{"js-langgraph-manual-dup", "Invoice 42", 4},
	{"js-mastra-exporter-dup", "Invoice 42", 1},
}

func readFramework(t *testing.T, file string) []Span {
	t.Helper()
	var spans []Span
	if _, err := ReadFile(filepath.Join(frameworkDir, file), func(b Batch) error {
		spans = append(spans, b.Spans...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return spans
}

// sends are the folded trace's send_invoice_email calls' arguments, one
// per attempt.
func sends(tr *trace.Trace) []string {
	var out []string
	var walk func([]trace.Node)
	walk = func(nodes []trace.Node) {
		for _, n := range nodes {
			switch x := n.(type) {
			case *trace.Turn:
				walk(x.Nodes)
			case *trace.Call:
				if x.Tool == "send_invoice_email" {
					for range x.Attempts {
						out = append(out, string(x.Args))
					}
				}
			}
		}
	}
	for _, r := range tr.Runs {
		walk(r.Nodes)
	}
	return out
}

func turns(tr *trace.Trace) int {
	n := 0
	for _, r := range tr.Runs {
		for _, node := range r.Nodes {
			if _, ok := node.(*trace.Turn); ok {
				n++
			}
		}
	}
	return n
}

func emailArgs(to, subject string) string {
	b, _ := json.Marshal(map[string]string{"to": to, "subject": subject})
	return string(canonical(b))
}

// Each framework is read as it writes: the recording's two sends carry
// their arguments and are graded possible (the first's outcome is unknown
// or, wrapped as the framework wraps it, a failure that may have come
// after the effect); the control where the second send goes to bob is
// graded nothing; the control where both sends succeed is a duplicate, and
// the duplicate flag (read without the fold) says so too.
func TestFrameworksReadAsTheyWrite(t *testing.T) {
	opts := audit.Options{Effects: mustEffects(t)}
	for _, fw := range frameworks {
		t.Run(fw.name, func(t *testing.T) {
			ana := emailArgs("ana@example.com", fw.subject)
			bob := emailArgs("bob@example.com", fw.subject)
			for _, c := range []struct {
				file  string
				sends []string
				grade audit.Grade
			}{
				{fw.name + ".otlp.json", []string{ana, ana}, audit.Possible},
				{fw.name + ".different.otlp.json", []string{ana, bob}, ""},
				{fw.name + ".twice.otlp.json", []string{ana, ana}, audit.Duplicate},
			} {
				spans := readFramework(t, c.file)
				tr := trace.Fold(c.file, Events(spans))
				if len(tr.Anomalies) > 0 {
					t.Errorf("%s: anomalies %+v", c.file, tr.Anomalies)
				}
				if got := turns(tr); got != fw.turns {
					t.Errorf("%s: %d turns, want %d", c.file, got, fw.turns)
				}
				if got := strings.Join(sends(tr), " "); got != strings.Join(c.sends, " ") {
					t.Errorf("%s: sends %s, want %s", c.file, got, strings.Join(c.sends, " "))
				}
				rep := audit.Run([]*trace.Trace{tr}, opts)
				switch {
				case c.grade == "" && len(rep.Findings) > 0:
					t.Errorf("%s: findings %+v, want none", c.file, rep.Findings)
				case c.grade != "" && (len(rep.Findings) != 1 || rep.Findings[0].Grade != c.grade || len(rep.Findings[0].Attempts) != 2):
					t.Errorf("%s: findings %+v, want one %s of two attempts", c.file, rep.Findings, c.grade)
				}
				want := c.grade
				if want == audit.Absorbed {
					want = ""
				}
				if v, sure := newFlagScratch().verdict(spans); !sure || v != want {
					t.Errorf("%s: the fast path's verdict %q (sure %v), the audit's %q", c.file, v, sure, want)
				}
			}
		})
	}
}

func mustEffects(t *testing.T) []string {
	t.Helper()
	p, err := audit.ParseEffects(audit.DefaultEffects)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The recordings in ../shared/real-traces/frameworks are the copies here:
// when the shared folder is beside the clone, they are compared.
func TestFrameworkCopiesMatchTheRecordings(t *testing.T) {
	for _, fw := range frameworks {
		shared := readReal(t, filepath.Join("frameworks", fw.name+".otlp.json"))
		mine := readFramework(t, fw.name+".otlp.json")
		if len(shared) != len(mine) {
			t.Errorf("%s: %d spans, the recording has %d", fw.name, len(mine), len(shared))
		}
	}
}

// A run that failed and was rerun successfully under the same conversation
// reads as succeeded, whether its runs are saved together or one by one;
// a rerun that failed again reads as failed.
func TestRerunThatSucceededSucceeded(t *testing.T) {
	root := func(trace, id string, start int64, status string) Span {
		return Span{TraceID: trace, SpanID: id, Name: "invoke_agent invoice_agent", Start: start, End: start + 1e9, Status: status,
			Message: map[string]string{"error": "agent crashed\nTraceback (most recent call last):"}[status],
			Attrs:   AttrsOf(map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "rerun"})}
	}
	const t0 = int64(1790607000000000000)
	for _, c := range []struct {
		name   string
		second string
		want   history.Status
	}{
		{"rerun succeeded", "ok", history.StatusCompleted},
		{"rerun failed again", "error", history.StatusFailed},
	} {
		spans := []Span{root("1f000000000000000000000000000b01", "b000000000000001", t0, "error"),
			root("1f000000000000000000000000000b02", "b000000000000002", t0+5e9, c.second)}
		tr := trace.Fold("rerun", Events(spans))
		if failed := tr.End != nil && tr.End.Mark == trace.MarkFailed; failed != (c.want == history.StatusFailed) {
			t.Errorf("%s: the fold's end %+v, want %s", c.name, tr.End, c.want)
		}
		for _, batches := range [][][]Span{{spans}, {spans[:1], spans[1:]}} {
			db := openDB(t)
			for _, b := range batches {
				if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, b, "test"); return err }); err != nil {
					t.Fatal(err)
				}
			}
			if x := record(t, db, "otlp-conv-rerun"); x.Status != c.want {
				t.Errorf("%s, %d batches: status %s (%s), want %s", c.name, len(batches), x.Status, x.Error, c.want)
			}
		}
	}
}
