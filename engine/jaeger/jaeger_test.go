package jaeger_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/imports/importtest"
	"github.com/retrylab/retrylab/engine/jaeger"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

func fixture(name string) string { return filepath.Join("..", "..", "fixtures", "jaeger", name) }

// Jaeger's downloads, the UI's (API v1: spans, processes, tags,
// references, logs) and API v3's ({"result": OTLP}), are sniffed as
// Jaeger's, imported, read back as OTLP, and their retried send audits as
// a duplicate.
func TestImportsJaegerDownloads(t *testing.T) {
	for _, c := range []struct{ file, summary, conv string }{
		{"mailer-ui.json", "Jaeger JSON, 6 spans imported", "jaeger-mail-1"},
		{"mailer-api-v3.json", "Jaeger API v3 JSON, 6 spans imported", "jaeger-mail-3"},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(fixture(c.file))
			if err != nil {
				t.Fatal(err)
			}
			src, ok := all.Registry().Sniff(bufio.NewReaderSize(f, imports.SniffBuffer))
			f.Close()
			if !ok || src.Format() != jaeger.Format {
				t.Fatalf("sniffed as %v", src)
			}
			db := importtest.OpenDB(t)
			res, err := src.ImportFile(db, fixture(c.file))
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary != c.summary || res.Format != jaeger.Format || len(res.Executions) != 1 || res.Executions[0] != "otlp-conv-"+c.conv {
				t.Errorf("result %+v, want %q of otlp-conv-%s", res, c.summary, c.conv)
			}
			traces := importtest.Folded(t, db)
			if len(traces) != 1 {
				t.Fatalf("%d executions", len(traces))
			}
			p, _ := audit.ParseEffects(audit.DefaultEffects)
			rep := audit.Run(traces, audit.Options{Effects: p})
			if rep.Counts.Duplicate != 1 || len(rep.Findings[0].Attempts) != 3 {
				t.Errorf("audit %+v", rep.Counts)
			}
		})
	}
}

// The UI JSON's model maps as Jaeger documents it: the process is the
// resource, otel.scope.* the scope, span.kind the kind, otel.status_code
// (and the error tag) the status, the CHILD_OF reference the parent, a
// log with an "event" field an event of that name, int64 tags integers.
func TestJaegerModelMapping(t *testing.T) {
	db := importtest.OpenDB(t)
	if _, err := jaeger.Source().ImportFile(db, fixture("mailer-ui.json")); err != nil {
		t.Fatal(err)
	}
	err := db.View(func(tx *store.Tx) error {
		spans, err := otlp.Load(tx, "otlp-conv-jaeger-mail-1")
		if err != nil {
			return err
		}
		if len(spans) != 6 {
			t.Fatalf("%d spans", len(spans))
		}
		for _, s := range spans {
			if s.TraceID != "00000000000000004bf92f3577b34da6" || s.Service != "mailer-agent" || s.Scope != "opentelemetry.instrumentation.openai_agents" {
				t.Errorf("span %s: trace %s service %q scope %q", s.SpanID, s.TraceID, s.Service, s.Scope)
			}
			if s.Attrs.Has("span.kind") {
				t.Errorf("span %s kept span.kind as an attribute", s.SpanID)
			}
			switch s.SpanID {
			case "b000000000000001":
				if s.ParentID != "" || s.Kind != "internal" {
					t.Errorf("root %+v", s)
				}
			case "b000000000000002":
				if s.ParentID != "b000000000000001" || s.Kind != "client" || s.Attrs.Get("gen_ai.usage.input_tokens") != "412" {
					t.Errorf("chat %+v", s)
				}
			case "b000000000000003":
				if s.Status != "error" || s.Message != "timed out after 3s" || len(s.Events) != 1 || s.Events[0].Name != "exception" ||
					s.Events[0].Attrs.Get("exception.type") != "TimeoutError" || s.Start != 1790607001000000000 || s.End != 1790607004000000000 {
					t.Errorf("timed-out send %+v", s)
				}
			case "b000000000000005":
				if s.Status != "ok" {
					t.Errorf("send %+v", s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Each bad input is refused in one line that names the file, the line
// and the span, and nothing of it is stored.
func TestJaegerBadInputs(t *testing.T) {
	ui, err := os.ReadFile(fixture("mailer-ui.json"))
	if err != nil {
		t.Fatal(err)
	}
	v3, err := os.ReadFile(fixture("mailer-api-v3.json"))
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(doc []byte, s string) int {
		i := strings.Index(string(doc), s)
		return 1 + strings.Count(string(doc[:i]), "\n")
	}
	const span3 = `"spanID": "b000000000000003"`
	cases := []struct {
		name      string
		doc       []byte
		from, to  string
		at        string
		want      string
		cut, exec bool
	}{
		{name: "a span id that is not hex", doc: ui, from: span3, to: `"spanID": "b00000000000000z"`, at: span3,
			want: `line %d: span b00000000000000z: spanID: "b00000000000000z" is not an id of up to 16 hex digits`},
		{name: "a start time of the wrong type", doc: ui, from: `"startTime": 1790607001000000`, to: `"startTime": "soon"`, at: `"startTime": 1790607001000000`,
			want: "line %d: not Jaeger JSON: span b000000000000003, field startTime: expected uint64, found string"},
		{name: "a tag of another type than it says", doc: ui, from: `"value": 412`, to: `"value": "many"`, at: `"spanID": "b000000000000002"`,
			want: `line %d: span b000000000000002: tag "gen_ai.usage.input_tokens": value "many" is not of type "int64"`},
		{name: "a process the trace has not", doc: ui, from: `"processID": "p1"`, to: `"processID": "p9"`, at: `"spanID": "b000000000000001"`,
			want: `line %d: span b000000000000001: processID "p9" is not among the trace's processes`},
		{name: "API v3: an end before its start", doc: v3, from: `"endTimeUnixNano": "1790607004000000000"`, to: `"endTimeUnixNano": "1790607000000000000"`,
			at: `"spanId": "b000000000000003"`, want: "line %d: span b000000000000003: ends 1s before it starts"},
		{name: "cut short", doc: ui, from: span3, cut: true, want: "not Jaeger JSON: the JSON ends early (cut short?)"},
		{name: "Jaeger's error answer", doc: []byte(`{"data": null, "total": 0, "limit": 0, "offset": 0, "errors": [{"code": 404, "msg": "trace not found"}]}`),
			want: "Jaeger answered an error, not a trace: 404 trace not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, want := string(c.doc), c.want
			switch {
			case c.cut:
				bad = bad[:strings.Index(bad, c.from)]
			case c.from != "":
				if !strings.Contains(bad, c.from) {
					t.Fatalf("the fixture has no %s", c.from)
				}
				bad = strings.Replace(bad, c.from, c.to, 1)
				want = strings.Replace(want, "%d", strconv.Itoa(lineOf(c.doc, c.at)), 1)
			}
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			db := importtest.OpenDB(t)
			_, err := jaeger.Source().ImportFile(db, path)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), path+": "+want) {
				t.Errorf("error %v\nwant %s: %s...", err, path, want)
			}
			if n := len(importtest.Folded(t, db)); n != 0 {
				t.Errorf("%d executions stored from a refused file", n)
			}
		})
	}
}
