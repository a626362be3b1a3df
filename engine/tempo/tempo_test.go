package tempo_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/imports/importtest"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/tempo"
	"github.com/retrylab/retrylab/store"
)

// Tempo's downloads, API v1 (batches, instrumentationLibrarySpans, ids in
// base64) and v2 ({"trace": ...}), are sniffed as Tempo's, imported, read
// back as OTLP, and their retried send audits as a duplicate.
func TestImportsTempoDownloads(t *testing.T) {
	for file, conv := range map[string]string{"mailer-api-v1.json": "tempo-mail-1", "mailer-api-v2.json": "tempo-mail-2"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("..", "..", "fixtures", "tempo", file)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			src, ok := all.Registry().Sniff(bufio.NewReaderSize(f, imports.SniffBuffer))
			f.Close()
			if !ok || src.Format() != tempo.Format {
				t.Fatalf("sniffed as %v", src)
			}
			db := importtest.OpenDB(t)
			res, err := src.ImportFile(db, path)
			if err != nil {
				t.Fatal(err)
			}
			want := "Tempo JSON, 6 spans imported"
			if res.Summary != want || res.Format != tempo.Format || len(res.Executions) != 1 || res.Executions[0] != "otlp-conv-"+conv {
				t.Errorf("result %+v, want %q of otlp-conv-%s", res, want, conv)
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
			// The scope, the service and the error's status came through
			// the older names and the enum names.
			err = db.View(func(tx *store.Tx) error {
				spans, err := otlp.Load(tx, "otlp-conv-"+conv)
				if err != nil {
					return err
				}
				failed := 0
				for _, s := range spans {
					if s.Scope != "opentelemetry.instrumentation.openai_agents" || s.Service != "mailer-agent" {
						t.Errorf("span %s: scope %q service %q", s.SpanID, s.Scope, s.Service)
					}
					if s.Status == "error" {
						failed++
					}
				}
				if failed != 1 {
					t.Errorf("%d spans failed, want the timed-out send", failed)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Each bad input is refused in one line that names the file, the line
// and the span, and nothing of it is stored.
func TestTempoBadInputs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "tempo", "mailer-api-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) int {
		i := strings.Index(string(doc), s)
		return 1 + strings.Count(string(doc[:i]), "\n")
	}
	// The third span (b000000000000003, in base64 sAAAAAAAAAM=) is the
	// timed-out send.
	const span3 = `"spanId": "sAAAAAAAAAM="`
	cases := []struct{ name, from, to, at, want string }{
		{"a span id that is neither hex nor base64", span3, `"spanId": "nope"`, span3,
			"line %d: not Tempo JSON: span nope (\"execute_tool send_email\"), field spanId: expected 16 hex digits"},
		{"a time of the wrong type", `"startTimeUnixNano": "1790607001000000000"`, `"startTimeUnixNano": {}`,
			`"startTimeUnixNano": "1790607001000000000"`, "line %d: not Tempo JSON: span b000000000000003"},
		{"an end before its start", `"endTimeUnixNano": "1790607004000000000"`, `"endTimeUnixNano": "1790607000000000000"`,
			span3, "line %d: span b000000000000003: ends 1s before it starts"},
		{"cut short", `"name": "execute_tool send_email"`, "", "", "not Tempo JSON: the JSON ends early (cut short?)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bad string
			want := c.want
			if c.to == "" {
				bad = string(doc[:strings.Index(string(doc), c.from)])
			} else {
				bad = strings.Replace(string(doc), c.from, c.to, 1)
				want = strings.Replace(want, "%d", strconv.Itoa(lineOf(c.at)), 1)
			}
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			db := importtest.OpenDB(t)
			_, err := tempo.Source().ImportFile(db, path)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), path+": "+want) {
				t.Errorf("error %v\nwant %s: %s...", err, path, want)
			}
			if n := len(importtest.Folded(t, db)); n != 0 {
				t.Errorf("%d executions stored from a refused file", n)
			}
		})
	}
}

// A gzip-compressed download read once from a stream (standard input, a
// pipe) is sniffed and imported as the file is.
func TestImportsGzipStream(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "tempo", "mailer-api-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(doc)
	zw.Close()
	br := bufio.NewReaderSize(&gz, imports.SniffBuffer)
	src, ok := all.Registry().Sniff(br)
	if !ok || src.Format() != tempo.Format {
		t.Fatalf("sniffed as %v", src)
	}
	db := importtest.OpenDB(t)
	res, err := src.Import(db, "-", br)
	if err != nil || res.Summary != "Tempo JSON, 6 spans imported" {
		t.Fatalf("%+v %v", res, err)
	}
}

// Tempo's API v2 marks a trace it cut short (larger than the querier's
// limit) "status": "PARTIAL" with a message, and leaves the status out
// when the trace is complete (jsonpb omits the enum's zero, COMPLETE).
// A partial trace imports as far as it goes and its summary says so; a
// COMPLETE written out, or the status as a number, reads as Tempo means it.
func TestImportsPartialTraceV2(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "tempo", "mailer-api-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	metrics := `"metrics": {`
	if !bytes.Contains(doc, []byte(metrics)) {
		t.Fatal("the v2 fixture has no metrics")
	}
	const cut = "Trace exceeds maximum size of 5000 bytes, a partial trace is returned"
	for _, c := range []struct{ status, want string }{
		{`"status": "PARTIAL", "message": "` + cut + `",`, "Tempo JSON, 6 spans imported; Tempo says the trace is partial: " + cut},
		{`"status": 1,`, "Tempo JSON, 6 spans imported; Tempo says the trace is partial"},
		{`"status": "COMPLETE",`, "Tempo JSON, 6 spans imported"},
		{`"status": 0, "message": "",`, "Tempo JSON, 6 spans imported"},
	} {
		t.Run(c.status, func(t *testing.T) {
			db := importtest.OpenDB(t)
			v2 := bytes.Replace(doc, []byte(metrics), []byte(c.status+"\n  "+metrics), 1)
			res, err := tempo.Source().Import(db, "v2.json", bytes.NewReader(v2))
			if err != nil || res.Summary != c.want {
				t.Fatalf("%q %v, want %q", res.Summary, err, c.want)
			}
			if n := len(importtest.Folded(t, db)); n != 1 {
				t.Errorf("%d executions", n)
			}
		})
	}
}
