package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

const fixtures = "../../fixtures/otlp"

func readFixture(t *testing.T, name string) []Span {
	t.Helper()
	var spans []Span
	if _, err := ReadFile(filepath.Join(fixtures, name), func(b Batch) error {
		spans = append(spans, b.Spans...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return spans
}

// callsOf lists the fold's calls as "tool args: outcome,outcome".
func callsOf(tr *trace.Trace) []string {
	var out []string
	var walk func([]trace.Node)
	walk = func(nodes []trace.Node) {
		for _, n := range nodes {
			switch x := n.(type) {
			case *trace.Run:
				walk(x.Nodes)
			case *trace.Turn:
				walk(x.Nodes)
			case *trace.Call:
				var oc []string
				for _, a := range x.Attempts {
					oc = append(oc, a.Mark().Glyph()+a.Ref)
				}
				out = append(out, x.Tool+" "+string(x.Args)+": "+strings.Join(oc, ","))
			}
		}
	}
	walk(tr.Nodes)
	return out
}

func TestFixtureShapes(t *testing.T) {
	cases := []struct {
		file  string
		runs  int
		turns []string // the turns' texts
		calls []string
	}{
		// an agent span is a turn, with the model calls inside it: the agent
		// invoked twice is two turns, not an empty turn before each model call
		{"adk-send-twice.json", 1, []string{"invoke_agent mail_agent", "invoke_agent mail_agent"}, []string{
			`get_contact {"name": "Ana"}: ✓a000000000000005`,
			`send_email {"subject": "Invoice 42", "to": "ana@example.com"}: ✓a000000000000006`,
			`send_email {"subject": "Invoice 42", "to": "ana@example.com"}: ✓a000000000000009`,
		}},
		{"openinference-charge.jsonl", 1, []string{"billing_agent"}, []string{
			`lookup_customer {"customer": "bo"}: ✓b000000000000003`,
			// same parent, tool and canonical arguments: one call, two attempts
			`charge_card {"amount": 4200, "card": "tok_visa", "order": 7}: ⏱b000000000000004,✓b000000000000005`,
		}},
		{"openllmetry-ticket.json", 1, []string{"triage.agent"}, []string{
			`create_ticket {"priority": "high", "title": "Printer on fire"}: ⏱c000000000000004,✓c000000000000005`,
		}},
		{"genai-semconv.json", 2, []string{"invoke_agent invoicer", "invoke_agent invoicer"}, []string{
			// one call id, two spans: two attempts
			`send_invoice {"invoice": "INV-9", "to": "bo@example.com"}: ✖d000000000000003,✓d000000000000004`,
			`create_refund {"invoice": "INV-8"}: ✓d000000000000005`,
			`send_invoice {"invoice": "INV-9", "to": "bo@example.com"}: ✓e000000000000003`,
			`send_sms {"text": "Invoice sent", "to": "+15550100"}: ⏱e000000000000004`,
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			evs := Events(readFixture(t, c.file))
			tr := trace.Fold("x", evs)
			if len(tr.Anomalies) > 0 {
				t.Errorf("anomalies: %+v", tr.Anomalies)
			}
			if len(tr.Runs) != c.runs {
				t.Errorf("%d runs, want %d", len(tr.Runs), c.runs)
			}
			var turns []string
			for _, e := range evs {
				if e.Kind == trace.TurnStarted {
					turns = append(turns, e.Text)
				}
			}
			if strings.Join(turns, "\n") != strings.Join(c.turns, "\n") {
				t.Errorf("turns %q, want %q", turns, c.turns)
			}
			got := callsOf(tr)
			if strings.Join(got, "\n") != strings.Join(c.calls, "\n") {
				t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.calls, "\n"))
			}
			if tr.End == nil || tr.Outcome() != trace.MarkOK {
				t.Errorf("execution end %v", tr.Outcome())
			}
		})
	}
}

func TestOrphanKeptAndMarked(t *testing.T) {
	evs := Events(readFixture(t, "genai-semconv.json"))
	if got := evs[0].Attrs["orphans"]; got != "d000000000000005" {
		t.Errorf("execution attrs orphans = %q", got)
	}
	found := false
	for _, e := range evs {
		if e.Kind == trace.AttemptStarted && e.Ref == "d000000000000005" {
			found = e.Attrs["orphan"] == "parent d000000000000099 never arrived"
		}
	}
	if !found {
		t.Error("the orphan's attempt is not marked")
	}
}

func TestParentCycleIsShownNotLooped(t *testing.T) {
	spans := []Span{
		{TraceID: "t1", SpanID: "01", ParentID: "02", Name: "execute_tool send_x", Start: 1e18, End: 1e18 + 5,
			Attrs: AttrsOf(map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_x"})},
		{TraceID: "t1", SpanID: "02", ParentID: "01", Name: "invoke_agent a", Start: 1e18 + 1, End: 1e18 + 4,
			Attrs: AttrsOf(map[string]string{"gen_ai.operation.name": "invoke_agent"})},
	}
	evs := Events(spans)
	if !strings.Contains(evs[0].Attrs["orphans"], "01") || !strings.Contains(evs[0].Attrs["orphans"], "02") {
		t.Errorf("cycle not reported: %v", evs[0].Attrs)
	}
	if n := len(callsOf(trace.Fold("x", evs))); n != 1 {
		t.Errorf("%d calls, want the one", n)
	}
}

// encodings writes one fixture in every encoding ReadFile accepts.
func encodings(t *testing.T, name string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"doc.json": raw, "doc.json.gz": gz(raw), "spans.pb": pb, "spans.pb.gz": gz(pb),
		"lines.jsonl": append(append(line, '\n'), "\n{}\n"...), "lines.jsonl.gz": gz(append(line, "\n{}\n"...)),
	}
	out := map[string]string{}
	for n, b := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out[n] = p
	}
	return out
}

func TestEveryEncodingGivesTheSameSpans(t *testing.T) {
	want := readFixture(t, "genai-semconv.json")
	SortSpans(want)
	wantJSON, _ := json.Marshal(want)
	formats := map[string]Format{"doc.json": FormatJSON, "doc.json.gz": FormatJSON, "spans.pb": FormatProto,
		"spans.pb.gz": FormatProto, "lines.jsonl": FormatJSONL, "lines.jsonl.gz": FormatJSONL}
	for name, path := range encodings(t, "genai-semconv.json") {
		var got []Span
		f, err := ReadFile(path, func(b Batch) error { got = append(got, b.Spans...); return nil })
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if f != formats[name] {
			t.Errorf("%s: format %s, want %s", name, f, formats[name])
		}
		SortSpans(got)
		if gotJSON, _ := json.Marshal(got); !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("%s: spans differ", name)
		}
	}
}

const goodSpan = `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"x","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000"}`

func doc(spans ...string) string {
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

func TestBadInputGetsOneClearError(t *testing.T) {
	withSpan := func(old, new string) string { return doc(strings.Replace(goodSpan, old, new, 1)) }
	cases := []struct{ name, content, want string }{
		{"empty", "", "empty file"},
		{"malformed JSON", `{"resourceSpans": [`, "not OTLP/JSON"},
		{"not JSON nor protobuf", "hello, world\n", "neither OTLP/JSON"},
		{"truncated protobuf", "\x0a\x80\x01\x12", "neither OTLP/JSON"},
		{"short span id", withSpan(`"a000000000000001"`, `"a0000001"`), "not OTLP/JSON"},
		{"span id not hex", withSpan(`"a000000000000001"`, `"zz00000000000001"`), "not OTLP/JSON"},
		{"no span id", withSpan(`"spanId":"a000000000000001",`, ``), "empty span id"},
		{"end before start", withSpan(`"endTimeUnixNano":"1790607001000000000"`, `"endTimeUnixNano":"1790606000000000000"`), "span a000000000000001: ends"},
		{"1970", withSpan(`"startTimeUnixNano":"1790607000000000000"`, `"startTimeUnixNano":"5"`), "outside 2000-2200"},
		{"2300", withSpan(`"endTimeUnixNano":"1790607001000000000"`, `"endTimeUnixNano":"10413792000000000000"`), "outside 2000-2200"},
		{"a logs document", `{"resourceLogs":[]}`, "no spans in this OTLP/JSON file (no resourceSpans)"},
		{"an empty trace document", `{"resourceSpans":[]}`, ""},
		{"bad second line", doc(goodSpan) + "\n" + `{"resourceSpans": [}` + "\n", "line 2: not OTLP/JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n int
			_, err := read(strings.NewReader(c.content), 1<<20, func(b Batch) error { n += len(b.Spans); return nil })
			if c.want == "" {
				if err != nil || n != 0 {
					t.Fatalf("err %v, %d spans; want none of either", err, n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestLongLineRefused(t *testing.T) {
	long := doc(goodSpan) + "\n" + `{"resourceSpans":[],"pad":"` + strings.Repeat("x", 4096) + `"}` + "\n"
	_, err := read(strings.NewReader(long), 1024, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Fatalf("error %v", err)
	}
}

// A document of one line longer than a JSON line may be, as 'retrylab
// export' writes a large database, is read as the document it is; JSON
// Lines whose first line is that long are still refused.
func TestOneLineDocumentOverTheLineBound(t *testing.T) {
	one := doc(goodSpan) + "\n"
	spans := 0
	format, err := read(strings.NewReader(one), 16, func(b Batch) error { spans += len(b.Spans); return nil })
	if err != nil || format != FormatJSON || spans != 1 {
		t.Fatalf("one-line document over the line bound: %v, %s, %d spans; want it read, 1 span", err, format, spans)
	}
	_, err = read(strings.NewReader(one+one), 16, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 1: longer than") {
		t.Fatalf("JSON Lines with an overlong first line: %v", err)
	}
}

// A gzip file cut short says so, whether it held a document or JSON Lines.
func TestCutShortGzipSaysSo(t *testing.T) {
	for name, plain := range map[string]string{"document": doc(goodSpan), "lines": doc(goodSpan) + "\n" + doc(goodSpan) + "\n"} {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write([]byte(plain))
		zw.Close()
		cut := gz.Bytes()[:gz.Len()-12]
		_, err := Read(bytes.NewReader(cut), func(Batch) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "the compressed file ends early (cut short?)") {
			t.Errorf("%s: %v, want it said the file is cut short", name, err)
		}
	}
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func executions(t *testing.T, db *store.DB) []history.Execution {
	t.Helper()
	var xs []history.Execution
	if err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(_ string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
			return true
		})
	}); err != nil {
		t.Fatal(err)
	}
	return xs
}

func TestImportIsAtomicPerFile(t *testing.T) {
	db := openDB(t)
	p := filepath.Join(t.TempDir(), "half.jsonl")
	second := strings.Replace(goodSpan, `"a000000000000001"`, `"a000000000000002"`, 1)
	second = strings.Replace(second, `"endTimeUnixNano":"1790607001000000000"`, `"endTimeUnixNano":"1"`, 1)
	os.WriteFile(p, []byte(doc(goodSpan)+"\n"+doc(second)+"\n"), 0o600)
	// Chunks of one span: line 1 is committed before line 2 fails.
	_, err := importFile(db, p, 1)
	if err == nil || !strings.Contains(err.Error(), p+": line 2: span a000000000000002: end time") {
		t.Fatalf("error %v", err)
	}
	if xs := executions(t, db); len(xs) != 0 {
		t.Fatalf("a failed file left %d executions", len(xs))
	}
	db.View(func(tx *store.Tx) error {
		if n := storedSpanCount(t, tx) + tx.Count(BucketImports); n != 0 {
			t.Errorf("a failed file left %d spans or pending imports", n)
		}
		return nil
	})
	// A span id used twice with different content fails the whole file.
	dup := strings.Replace(goodSpan, `"name":"x"`, `"name":"y"`, 1)
	os.WriteFile(p, []byte(doc(goodSpan, dup)), 0o600)
	if _, err := ImportFile(db, p); err == nil || !strings.Contains(err.Error(), "span a000000000000001: appears twice") {
		t.Fatalf("error %v", err)
	}
	if xs := executions(t, db); len(xs) != 0 {
		t.Fatalf("a failed file left %d executions", len(xs))
	}
}

func TestImportTwiceChangesNothing(t *testing.T) {
	db := openDB(t)
	p := filepath.Join(fixtures, "adk-send-twice.json")
	first, err := ImportFile(db, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ImportFile(db, p)
	if err != nil {
		t.Fatal(err)
	}
	if first.Spans != 9 || again.Spans != 0 || again.Repeated != 9 {
		t.Errorf("first %+v, again %+v", first.Stats, again.Stats)
	}
	xs := executions(t, db)
	if len(xs) != 1 || xs[0].Imported != ImportedFormat || xs[0].Source != p || xs[0].Status != history.StatusCompleted ||
		xs[0].Scenario != "invoke_workflow mail_agent" {
		t.Errorf("executions %+v", xs)
	}
}

// A trace whose conversation id arrives in a later batch joins the
// conversation's execution; nothing is left under the trace's own.
func TestConversationLearntLaterJoins(t *testing.T) {
	db := openDB(t)
	all := readFixture(t, "genai-semconv.json")
	var noConv, rest []Span
	for _, s := range all {
		if s.TraceID == "1f000000000000000000000000000a01" && s.Conversation() == "" {
			noConv = append(noConv, s)
		} else {
			rest = append(rest, s)
		}
	}
	for _, batch := range [][]Span{noConv, rest} {
		if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, batch, "test"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	xs := executions(t, db)
	if len(xs) != 1 || xs[0].ID != "otlp-conv-conv-9" || xs[0].Runs != 2 {
		t.Fatalf("executions %+v", xs)
	}
	var spans []Span
	db.View(func(tx *store.Tx) error { var err error; spans, err = Load(tx, xs[0].ID); return err })
	if len(spans) != len(all) {
		t.Errorf("%d spans, want %d", len(spans), len(all))
	}
	var count int
	db.View(func(tx *store.Tx) error { count = tx.ExecutionCount(); return nil })
	if count != 1 {
		t.Errorf("execution count %d", count)
	}
}

func TestImportedNeverOverwritesNative(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "openllmetry-ticket.json")
	exec := ExecutionID(spans[0].TraceID, "")
	db.Update(func(tx *store.Tx) error {
		return history.Put(tx, history.Execution{ID: exec, Status: history.StatusCompleted})
	})
	err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, spans, "x"); return err })
	if err == nil || !strings.Contains(err.Error(), "was not imported") {
		t.Fatalf("error %v", err)
	}
	var se *SpanError
	_ = errors.As(err, &se)
}

// An import cut short by a crash leaves spans that no reader sees, and the
// next import removes them.
func TestImportCutShortIsInvisibleThenCleaned(t *testing.T) {
	db := openDB(t)
	// A finished import of the conversation, then a crashed one adding to it.
	if _, err := ImportFile(db, filepath.Join(fixtures, "genai-semconv.json")); err != nil {
		t.Fatal(err)
	}
	exec := "otlp-conv-conv-9"
	before, _ := LoadSpans(db, exec)
	extra := before[0]
	extra.SpanID, extra.Name = "f000000000000001", "late span"
	db.Update(func(tx *store.Tx) error {
		id, err := tx.Append(BucketImports, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
		if err != nil {
			return err
		}
		w := newWriter("crashed.json", id)
		return w.write(tx, []Span{extra}, nil, nil) // and the process dies before finish
	})
	after, _ := LoadSpans(db, exec)
	if len(after) != len(before) {
		t.Fatalf("a pending import's span is visible: %d spans, were %d", len(after), len(before))
	}
	if err := CleanPending(db); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *store.Tx) error {
		if n := storedSpanCount(t, tx); n != len(before) {
			t.Errorf("%d spans stored after the clean-up, want %d", n, len(before))
		}
		return nil
	})
	// Importing the same file again is still a no-op.
	res, err := ImportFile(db, filepath.Join(fixtures, "genai-semconv.json"))
	if err != nil || res.Spans != 0 || res.Repeated != 9 {
		t.Errorf("%+v %v", res.Stats, err)
	}
}

// A crash while an import's records were being written leaves records of
// executions whose spans are pending; the clean-up removes both.
func TestCrashWhilePublishingIsCleaned(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "openllmetry-ticket.json")
	db.Update(func(tx *store.Tx) error {
		id, err := tx.Append(BucketImports, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
		if err != nil {
			return err
		}
		w := newWriter("crashed.json", id)
		if err := w.write(tx, spans, nil, nil); err != nil {
			return err
		}
		return w.publish(tx, w.toPublish(), true) // and the pending mark is never dropped
	})
	if xs := executions(t, db); len(xs) != 1 {
		t.Fatalf("set-up: %d executions", len(xs))
	}
	if got, _ := LoadSpans(db, executions(t, db)[0].ID); len(got) != 0 {
		t.Errorf("%d spans of a pending import visible", len(got))
	}
	if err := CleanPending(db); err != nil {
		t.Fatal(err)
	}
	if xs := executions(t, db); len(xs) != 0 {
		t.Errorf("%d executions left after the clean-up", len(xs))
	}
}

// storedSpanCount counts the spans BucketSpans holds, a block's each.
func storedSpanCount(t *testing.T, tx *store.Tx) int {
	t.Helper()
	n := 0
	tx.Scan(BucketSpans, nil, false, func(k, v []byte) bool {
		if err := eachStoredSpan(v, func([]byte) bool { n++; return true }); err != nil {
			t.Errorf("value %x: %v", k, err)
		}
		return true
	})
	return n
}
