package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

func fixturePaths(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "fixtures/otlp/*.json*"))
	if err != nil || len(paths) != 4 {
		t.Fatalf("fixtures %v %v", paths, err)
	}
	for i, p := range paths {
		abs, _ := filepath.Abs(p)
		paths[i] = abs
	}
	return paths
}

func TestCLIImportAndAudit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, append([]string{"import"}, fixturePaths(t)...)...)
	has(t, r, "adk-send-twice.json: OTLP/JSON, 9 spans imported -> otlp-conv-sess-adk-mail-1",
		"openinference-charge.jsonl: OTLP/JSON Lines, 6 spans imported -> otlp-conv-sess-oi-7")
	r = ok(t, db, append([]string{"import"}, fixturePaths(t)[0])...)
	has(t, r, "0 spans imported, 9 already there")

	r = must(t, 1, db, "audit")
	has(t, r, "audit of 4 executions: 11 side-effecting attempts",
		"DUPLICATE send_email {\"subject\": \"Invoice 42\", \"to\": \"ana@example.com\"}",
		"ref a000000000000006", "ref a000000000000009",
		"POSSIBLE  charge_card", "ABSORBED  create_ticket", "key tk-77",
		"2 duplicate, 1 possible, 1 absorbed")
	if msg := oneLineError(t, r); msg != "retrylab: audit: 2 duplicate effects found" {
		t.Errorf("stderr %q", msg)
	}
	// One is said in the singular, as the rest of the CLI says it.
	r = must(t, 1, db, "audit", "otlp-conv-sess-adk-mail-1")
	if msg := oneLineError(t, r); msg != "retrylab: audit: 1 duplicate effect found" {
		t.Errorf("stderr for one duplicate %q", msg)
	}

	r = must(t, 1, db, "audit", "--json")
	var rep struct {
		Findings []struct {
			Grade    string `json:"grade"`
			Tool     string `json:"tool"`
			Attempts []struct {
				Ref string `json:"ref"`
			} `json:"attempts"`
		} `json:"findings"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(rep.Findings) != 4 || rep.Findings[0].Grade != "duplicate" || rep.Counts["possible"] != 1 {
		t.Errorf("%+v", rep)
	}

	r = must(t, 1, db, "audit", "--markdown")
	// The send that failed with a 503 and was repeated may have acted: it is
	// evidence of the duplicate it led to.
	has(t, r, "# Effect audit", "## 1. duplicate: `send_invoice`", "| ✖ failed: upstream unavailable |",
		"## 2. duplicate: `send_email`", "| ✓ ok |")

	// Narrow the effects: only the charge, graded possible, which does not fail a CI gate.
	r = ok(t, db, "audit", "--effects", "charge_*")
	has(t, r, "POSSIBLE  charge_card", "0 duplicate, 1 possible, 0 absorbed")
	hasNot(t, r, "send_email")
	// --fail-on possible lets CI gate on it; --fail-on never gates on nothing.
	r = must(t, 1, db, "audit", "--effects", "charge_*", "--fail-on", "possible")
	if msg := oneLineError(t, r); msg != "retrylab: audit: 1 possible duplicate effect found" {
		t.Errorf("stderr with --fail-on possible %q", msg)
	}
	ok(t, db, "audit", "--fail-on", "never")
	oneLineError(t, must(t, 2, db, "audit", "--fail-on", "sometimes"))
	r = ok(t, db, "audit", "otlp-4bf92f3577b34da6a3ce929d0e0e4736")
	has(t, r, "audit of 1 execution:", "0 duplicate, 0 possible, 1 absorbed")

	r = ok(t, db, "show", "otlp-conv-conv-9")
	has(t, r, "otlp-conv-conv-9  imported from ", "genai-semconv.json  scenario invoke_agent invoicer  completed  runs 2  spans 9",
		"orphans (parent never arrived, kept): d000000000000005",
		"✖ attempt 1  failed  500ms  span d000000000000003  upstream unavailable",
		"✓ attempt 1  ok  100ms  span d000000000000005  (orphan: parent d000000000000099 never arrived)",
		" +60.000s  run 2\n", "⏱ attempt 1  timeout  2.9s  span e000000000000004  cancelled",
		" +64.000s    ✓ execution completed\n")
	r = ok(t, db, "show", "otlp-conv-conv-9", "--json")
	var shown struct {
		Execution struct{ Imported, Source string }
		Events    []struct{ Kind, Ref string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.Execution.Imported != "otlp" || len(shown.Events) < 10 {
		t.Errorf("show --json: %v %+v", err, shown)
	}

	oneLineError(t, must(t, 2, db, "audit", "--effects", "[bad"))
	oneLineError(t, must(t, 2, db, "audit", "--json", "--markdown"))
	oneLineError(t, must(t, 1, db, "audit", "nope"))
	// Imported executions are not held to the simulated providers' ledger.
	r = ok(t, db, "check")
	has(t, r, "0 executions")
}

func TestCLIImportBadFiles(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"x","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000"}]}]}]}`
	cases := []struct{ file, want string }{
		{write("broken.json", `{"resourceSpans": [`), "broken.json: not OTLP/JSON"},
		{write("badid.json", strings.Replace(good, "a000000000000001", "a0001", 1)),
			`badid.json: line 1: not OTLP/JSON: span a0001 ("x"), field spanId: expected 16 hex digits, found the string "a0001"`},
		{write("lines.jsonl", good+"\n"+strings.Replace(good, `"1790607001000000000"`, `"1790606000000000000"`, 1)+"\n"), "lines.jsonl: line 2: span a000000000000001: ends 16m40s before it starts"},
		{write("logs.json", `{"resourceLogs":[]}`), "logs.json: no spans"},
		{write("empty.pb", ""), "empty.pb: empty file"},
		{filepath.Join(dir, "missing.json"), "missing.json: no such file"},
	}
	for _, c := range cases {
		r := must(t, 1, db, "import", c.file)
		if msg := oneLineError(t, r); !strings.Contains(msg, c.want) {
			t.Errorf("%s: stderr %q, want %q", c.file, msg, c.want)
		}
	}
	// An empty trace document is taken, as the receiver takes it: nothing stored.
	r := ok(t, db, "import", write("none.json", `{"resourceSpans": []}`))
	has(t, r, "none.json: OTLP/JSON, 0 spans imported")
	// Nothing of the failed files is in the database; a good file after a bad one still loads.
	r = must(t, 1, db, "import", cases[0].file, write("good.json", good))
	has(t, r, "good.json: OTLP/JSON, 1 span imported -> otlp-5b8efff798038103d269b633813fc60c")
	ok(t, db, "check")
}

// The fixtures load with pdata's own unmarshaler: they are OTLP, not a
// dialect of ours.
func TestFixturesAreOTLP(t *testing.T) {
	t.Parallel()
	for _, p := range fixturePaths(t) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if !strings.HasSuffix(p, ".jsonl") {
				line = string(raw)
			}
			if _, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line)); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			if !strings.HasSuffix(p, ".jsonl") {
				break
			}
		}
	}
}

// modelOf is what a reader sees of a folded execution, without its id:
// runs, turns, calls, attempts with their marks, replays and ends.
func modelOf(t *trace.Trace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s, policy %q, outcome %s\n", t.Scenario, t.Policy, t.Outcome())
	var nodes func([]trace.Node, string)
	nodes = func(ns []trace.Node, indent string) {
		for _, n := range ns {
			switch x := n.(type) {
			case *trace.Turn:
				fmt.Fprintf(&b, "%sturn %d %q\n", indent, x.Number, x.Text)
				nodes(x.Nodes, indent+"  ")
			case *trace.Call:
				args, _ := idemkey.Canonical(x.Args)
				fmt.Fprintf(&b, "%scall %s %s %s key=%s kind=%s recorded=%v\n", indent, x.Call, x.Tool, args, x.Key, x.Kind, x.Recorded != nil)
				for _, a := range x.Attempts {
					var fx []string
					for _, e := range a.Effects {
						fx = append(fx, e.Service+":"+e.ID)
					}
					fmt.Fprintf(&b, "%s  attempt %d %s %s dedup=%v key=%s faults=%v effects=%v retry=%s status=%d crashed=%v\n", indent,
						a.N, a.Mark(), a.Outcome, a.Deduplicated, a.Key, a.Faults, fx, a.Retry, a.Status, a.Crashed)
				}
			case *trace.Replay:
				fmt.Fprintf(&b, "%sreplay %s %s from run %d decision=%v\n", indent, x.Call, x.Tool, x.ResultRun, x.Decision)
			}
		}
	}
	for _, r := range t.Runs {
		fmt.Fprintf(&b, "run %d %q end %s faults %v\n", r.Number, r.Policy, r.Mark(), r.Faults)
		nodes(r.Nodes, "  ")
	}
	return b.String()
}

func foldAll(t *testing.T, path string) map[string]*trace.Trace {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]*trace.Trace{}
	var ids []string
	db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, _ []byte) bool { ids = append(ids, id); return true })
	})
	for _, id := range ids {
		tr, err := foldOne(all.Registry(), db, id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = tr
	}
	return out
}

// Export then import gives the same model, and the file is OTLP as pdata
// reads it.
func TestCLIExportImportSameModel(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	must(t, 137, db, "run", "crash")
	ok(t, db, "resume")
	ok(t, db, "run", "safe")
	must(t, 3, db, "run", "unsafe-escalates")
	file := filepath.Join(t.TempDir(), "out.json")
	r := ok(t, db, "export", "--otlp", file)
	has(t, r, "wrote 4 executions")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil || td.SpanCount() == 0 {
		t.Fatalf("pdata reads %d spans: %v", td.SpanCount(), err)
	}
	db2 := newDB(t)
	ok(t, db2, "import", file)
	native, imported := foldAll(t, db), foldAll(t, db2)
	if len(imported) != len(native) {
		t.Fatalf("%d executions imported, %d exported", len(imported), len(native))
	}
	for id, tr := range native {
		back := imported[otlp.ExecutionID("", id)]
		if back == nil {
			t.Errorf("%s not imported", id)
			continue
		}
		if want, got := modelOf(tr), modelOf(back); want != got {
			t.Errorf("%s: the model changed on the way:\n--- native\n%s--- imported\n%s", id, want, got)
		}
		if len(back.Anomalies) > 0 {
			t.Errorf("%s: anomalies %+v", id, back.Anomalies)
		}
	}
	// Exported executions audit the same as the natives they came from.
	a1, a2 := must(t, 1, db, "audit", "--json"), must(t, 1, db2, "audit", "--json")
	strip := func(s string) string {
		s = regexp.MustCompile(`"(execution|ref)": "[^"]*"`).ReplaceAllString(s, "")
		return s
	}
	if strip(a1.stdout) != strip(a2.stdout) {
		t.Errorf("audits differ:\n%s\n%s", a1.stdout, a2.stdout)
	}
}

// export streams an execution's history and writes each span once it is
// final, children first: testdata/v2/export.json is its export of
// testdata/v2/retrylab.db, written again byte for byte. (It holds the 106
// spans c610b32's export of the same database held, parents first, with
// the same ids and bytes: only their order changed.) The same bytes go to
// standard output with --otlp -, the summary to standard error. Importing
// it gives the same executions as importing the same spans parents first
// (TestCLIExportImportSameModel requires the imported model to be the
// native one).
func TestCLIExportWritesTheSameBytes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "v2", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "v2", "export.json"))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`"version":"[^"]*"`)
	same := func(got []byte) bool {
		return string(version.ReplaceAll(got, []byte(`"version":"(devel)"`))) == string(want)
	}
	file := filepath.Join(t.TempDir(), "out.json")
	has(t, ok(t, db, "export", "--otlp", file), "wrote 16 executions, 106 spans to "+file)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !same(got) {
		t.Errorf("export --otlp FILE differs from testdata/v2/export.json:\n%s", firstByteDiff(string(got), string(want)))
	}
	r := must(t, 0, db, "export", "--otlp", "-")
	if !same([]byte(r.stdout)) {
		t.Errorf("export --otlp - differs from testdata/v2/export.json:\n%s", firstByteDiff(r.stdout, string(want)))
	}
	if r.stderr != "wrote 16 executions, 106 spans to standard output (OTLP/JSON)\n" {
		t.Errorf("export --otlp - said on stderr %q", r.stderr)
	}
	// Order does not matter to import: the file and the same spans
	// parents first (reversed) import as the same executions.
	reversed := filepath.Join(t.TempDir(), "reversed.json")
	writeReversed(t, file, reversed)
	db1, db2 := newDB(t), newDB(t)
	has(t, ok(t, db1, "import", file), "106 spans imported")
	has(t, ok(t, db2, "import", reversed), "106 spans imported")
	source := regexp.MustCompile(`"source": "[^"]*"`)
	for id := range foldAll(t, db) {
		id = otlp.ExecutionID("", id)
		a, b := ok(t, db1, "show", id, "--json").stdout, ok(t, db2, "show", id, "--json").stdout
		if source.ReplaceAllString(a, "") != source.ReplaceAllString(b, "") {
			t.Errorf("%s imports otherwise with its spans reversed:\n%s", id, firstDiff(a, b))
		}
	}
}

// writeReversed writes the document at from to to with its spans in the
// reverse order, read and written by pdata.
func writeReversed(t *testing.T, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		t.Fatal(err)
	}
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	rev := ptrace.NewSpanSlice()
	for i := spans.Len() - 1; i >= 0; i-- {
		spans.At(i).CopyTo(rev.AppendEmpty())
	}
	rev.CopyTo(spans)
	data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The streamed export of fresh runs (a crash and its resume, an
// escalation, an invoice whose copies overlap) is Export's document of
// their whole folds, byte for byte: both write each span after the spans
// inside it.
func TestCLIExportStreamsAsTheWholeFold(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 137, db, "run", "crash")
	ok(t, db, "resume")
	must(t, 3, db, "run", "unsafe-escalates")
	must(t, 137, db, "run", "invoice-crm")
	ok(t, db, "resume")
	ok(t, db, "run", "concurrent-duplicates")
	must(t, 137, db, "run", "key-retention")
	r := must(t, 0, db, "export", "--otlp", "-")
	folds := foldAll(t, db)
	var ids []string
	s, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, _ []byte) bool { ids = append(ids, id); return true })
	})
	s.Close()
	var traces []*trace.Trace
	for _, id := range ids {
		traces = append(traces, folds[id])
	}
	td := otlp.Export(traces, "(devel)")
	want, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`"version":"[^"]*"`).ReplaceAllString(r.stdout, `"version":"(devel)"`)
	if got != string(want)+"\n" {
		t.Errorf("streamed export differs from the whole fold's:\n%s", firstByteDiff(got, string(want)+"\n"))
	}
	if td.SpanCount() < 20 {
		t.Errorf("only %d spans", td.SpanCount())
	}
}

// export to a place it cannot write names that place, not the temporary
// file it writes first, and leaves nothing behind.
func TestCLIExportBadDestination(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	dir := t.TempDir()
	cases := []struct{ file, want string }{
		{filepath.Join(dir, "nodir", "out.json"), "export: directory " + filepath.Join(dir, "nodir") + " does not exist"},
		{dir, "export: " + dir + " is a directory"},
	}
	for _, c := range cases {
		r := must(t, 1, db, "export", "--otlp", c.file)
		msg := oneLineError(t, r)
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "/.") {
			t.Errorf("%s: stderr %q, want %q and no temporary file", c.file, msg, c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("export left %d files in %s", len(left), dir)
	}
}

// export's --help examples work as written, after 'retrylab run naive'.
func TestCLIExportHelpExamplesRun(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	ex := (&app{}).exportCmd().Example
	lines := strings.Split(strings.TrimSpace(ex), "\n")
	if len(lines) == 0 {
		t.Fatal("export has no examples")
	}
	for _, line := range lines {
		args := strings.Fields(line)
		if args[0] != "retrylab" {
			t.Fatalf("example %q does not start with retrylab", line)
		}
		has(t, ok(t, db, args[1:]...), "wrote 1 execution,")
	}
}

// An imported execution was not run by retrylab: resume says so, rather than
// looking for a scenario named after the file or hinting to run it again.
func TestCLIResumeImportedSaysImported(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "import", fixturePaths(t)[0])
	r := must(t, 1, db, "resume", "otlp-conv-sess-adk-mail-1")
	want := "retrylab: execution otlp-conv-sess-adk-mail-1 was imported (otlp), not run by retrylab: there is nothing to resume"
	if msg := oneLineError(t, r); msg != want {
		t.Errorf("stderr %q, want %q", msg, want)
	}
}

// firstByteDiff shows where two one-line documents part, with some context.
func firstByteDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-300)
	return fmt.Sprintf("at byte %d:\n got …%s\nwant …%s", i, got[from:min(len(got), i+200)], want[from:min(len(want), i+200)])
}

// importStdin runs `retrylab --db db import -` with input on standard input.
func importStdin(t *testing.T, db string, input []byte) ran {
	t.Helper()
	cmd := exec.Command(bin, "--db", db, "import", "-")
	cmd.Dir = filepath.Dir(db)
	cmd.Env = cliEnv()
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := ran{args: []string{"import", "-"}, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("import -: %v", err)
	}
	return r
}

// 'export --otlp - | retrylab import -' moves executions into a fresh
// database through a pipe: import reads standard input once, telling
// OTLP from a Temporal history by what it buffered, not by a first read
// that would eat the document's head. Bad input on it is one line.
func TestCLIImportFromStandardInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	doc := must(t, 0, db, "export", "--otlp", "-").stdout
	fresh := newDB(t)
	r := importStdin(t, fresh, []byte(doc))
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("want a quiet success\n%s", r)
	}
	has(t, r, "standard input: OTLP/JSON, 4 spans imported -> otlp-conv-exec_7K2Q")
	has(t, ok(t, fresh, "show", "otlp-conv-exec_7K2Q"), "send_invoice_email")

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	hist, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "temporal", "order-run1.cli.json"))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(hist)
	zw.Close()
	r = importStdin(t, fresh, gz.Bytes())
	if r.code != 0 {
		t.Fatalf("a gzipped Temporal history on standard input\n%s", r)
	}
	has(t, r, "standard input: Temporal history JSON, ")

	msg := oneLineError(t, importStdin(t, fresh, []byte(`{"resourceSpans": [`)))
	if !strings.HasPrefix(msg, "retrylab: import standard input: ") {
		t.Errorf("cut-short input: %q, want the error to name standard input", msg)
	}
}
