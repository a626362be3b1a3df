package otlp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/store"
)

// spanList is the spans of s, in order.
func spanList(s ptrace.SpanSlice) []ptrace.Span {
	spans := make([]ptrace.Span, s.Len())
	for i := range spans {
		spans[i] = s.At(i)
	}
	return spans
}

// interleavedLines writes spans (from batchOf's traces) into JSON Lines of
// per spans, under name in dir, and returns the path: shuffled with seed
// within each run of window spans, as concurrent traces interleave.
func interleavedLines(t *testing.T, dir, name string, spans []ptrace.Span, per, window int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var order []int
	for i := 0; i < len(spans); i += window {
		for _, k := range rng.Perm(min(window, len(spans)-i)) {
			order = append(order, i+k)
		}
	}
	var out bytes.Buffer
	for i := 0; i < len(order); i += per {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "bench-agent")
		ss := rs.ScopeSpans().AppendEmpty()
		for _, k := range order[i:min(i+per, len(order))] {
			spans[k].CopyTo(ss.Spans().AppendEmpty())
		}
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Executions whose spans are shuffled across lines, and so across chunks,
// are audited at the end on the spans kept of them, not read back (unless
// a trace's spans are further apart than keptBackSpans: a shuffle of
// the whole file in small chunks), and their records say what the audit says: a duplicate where a trace sent
// its mail twice, none where a trace lost its second ticket and send. Spans that a
// second file adds to executions the first one made are read back: the
// database holds spans of them that the import did not keep.
func TestKeptSpansAuditExecutionsCutAcrossChunks(t *testing.T) {
	const traces = 40
	td := batchOf(0, 8*traces)
	all := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	var first, second []ptrace.Span
	for i := 0; i < all.Len(); i++ {
		tr, k := i/8, i%8
		switch {
		case (k == 5 || k == 7) && tr%3 == 0:
			// The trace's second ticket and second send never happened:
			// no duplicate.
		case tr%2 == 1 && k >= 4:
			second = append(second, all.At(i))
		default:
			first = append(first, all.At(i))
		}
	}
	dir := t.TempDir()
	// Eight traces at a time, as concurrent agents run, or the whole file.
	p1 := interleavedLines(t, dir, "first.jsonl", first, 16, 64, 21)
	p2 := interleavedLines(t, dir, "second.jsonl", second, 16, 64, 22)
	whole := interleavedLines(t, dir, "whole.jsonl", first, 16, len(first), 23)
	for _, c := range []struct {
		chunk, kept int
		file        string
	}{{16, keptBudget, p1}, {64, keptBudget, p1}, {7, keptBudget, whole}, {7, 0, p1}, {16, 2 << 10, p1}} {
		db := openDB(t)
		res, err := importFrom(db, c.file, nil, limits{chunkSpans: c.chunk, mergeChunks: 1, keptBytes: c.kept})
		if err != nil || res.Spans != len(first) {
			t.Fatalf("chunks of %d, %d bytes kept: %d of %d spans, %v", c.chunk, c.kept, res.Spans, len(first), err)
		}
		if c.kept == keptBudget && c.file == p1 && (res.readBacks != 0 || res.audits < traces/2) {
			t.Errorf("chunks of %d: %d audits, %d read back; want all on kept spans", c.chunk, res.audits, res.readBacks)
		}
		if c.kept == 0 && res.readBacks == 0 {
			t.Errorf("chunks of %d, nothing kept: nothing read back", c.chunk)
		}
		res2, err := importFrom(db, p2, nil, limits{chunkSpans: c.chunk, mergeChunks: 1, keptBytes: c.kept})
		if err != nil || res2.Spans != len(second) {
			t.Fatalf("chunks of %d, second file: %d of %d spans, %v", c.chunk, res2.Spans, len(second), err)
		}
		if res2.readBacks == 0 {
			t.Errorf("chunks of %d, second file: nothing read back", c.chunk)
		}
		dups := 0
		for _, x := range executions(t, db) {
			says := auditSays(t, db, x.ID)
			if recorded(x) != says {
				t.Errorf("chunks of %d, %d bytes kept: %s says %q, the audit %q", c.chunk, c.kept, x.ID, recorded(x), says)
			}
			if says == audit.Duplicate {
				dups++
			}
		}
		if dups == 0 || dups == traces {
			t.Errorf("chunks of %d: %d of %d executions with a duplicate; want some, not all", c.chunk, dups, traces)
		}
	}
}

// A flagSpan comes back from its encoding as it went in, strings, numbers
// (negative, large) and flags; and kept spans survive the pages' compaction
// while executions are let go around them.
func TestKeptEncodingRoundTrip(t *testing.T) {
	spans := []flagSpan{
		{},
		{trace: "5b8efff798038103d269b633813fc60c", span: "a000000000000002", parent: "a000000000000001",
			start: 1790607000000000000, end: -1, tool: "send_invoice_email", args: argsRef{key: "input.value", val: `{"to":"ana@example.com"}`},
			callID: "call_1", key: "idem-1", number: -7, run: 3, flags: flagTool | flagNumbered, state: attemptOKIfCrashed},
		{trace: "t", tool: "é✓", args: argsRef{val: string(make([]byte, 300))}, number: 1 << 30, state: attemptToFold},
	}
	var enc []byte
	for i := range spans {
		n := len(enc)
		enc = keptEncode(enc, &spans[i])
		if got := len(enc) - n; got != keptSize(&spans[i]) {
			t.Fatalf("span %d: encoded in %d bytes, keptSize says %d", i, got, keptSize(&spans[i]))
		}
	}
	got := keptDecode(enc, nil)
	if len(got) != len(spans) {
		t.Fatalf("decoded %d spans, want %d", len(got), len(spans))
	}
	for i := range spans {
		if got[i] != spans[i] {
			t.Fatalf("span %d: decoded %+v, want %+v", i, got[i], spans[i])
		}
	}

	// A budget of one page, and 16 MB encoded: the pages are compacted
	// many times over.
	k := newKeptSpans(pageBytes)
	want := map[string][]flagSpan{}
	big := spans[2]
	big.args.val = string(make([]byte, 20<<10))
	encoded := 0
	for w := range 800 {
		exec := fmt.Sprintf("x%d", w%50)
		h := &handExec{exec: exec, stored: 3, kept: []flagSpan{spans[1], big}}
		h.kept[0].span = fmt.Sprintf("%016x", w)
		encoded += keptSize(&h.kept[0]) + keptSize(&h.kept[1])
		if e := k.byExec[exec]; e == nil {
			k.byExec[exec] = &keptExec{exec: exec}
			want[exec] = nil
		}
		k.keep(k.byExec[exec], h)
		want[exec] = append(want[exec], h.kept...)
		if w%7 == 0 { // let one go, as add does over the budget
			gone := fmt.Sprintf("x%d", (w+25)%50)
			if e := k.byExec[gone]; e != nil {
				k.bytes -= e.bytes
				delete(k.byExec, gone)
				delete(want, gone)
			}
		}
	}
	if k.used > 2*max(k.bytes, pageBytes)+64<<10 || k.used >= encoded/2 {
		t.Errorf("the pages hold %d bytes of the %d encoded, %d kept: not compacted", k.used, encoded, k.bytes)
	}
	for exec, w := range want {
		e := k.byExec[exec]
		spans, ok := k.whole(exec, e.n, nil)
		if !ok || len(spans) != len(w) {
			t.Fatalf("%s: %d spans (whole %v), want %d", exec, len(spans), ok, len(w))
		}
		for i := range w {
			if spans[i] != w[i] {
				t.Fatalf("%s: span %d is %+v, want %+v", exec, i, spans[i], w[i])
			}
		}
	}
}

// The writes remembered: the one before always; while spread, those before
// it as long as they and the one before hold no more than keptBackSpans
// spans; never more.
func TestKeptRemembersWritesBySpans(t *testing.T) {
	for _, c := range []struct {
		spans  int
		spread bool
		want   int // writes remembered, this one included, once many came
	}{
		{8192, true, 2},  // an interleaved import's merged writes
		{2048, true, 5},  // 4 before this one: 8 192 spans
		{16, true, 513},  // a test's small chunks
		{16, false, 2},   // traces that come together
		{9000, true, 2},  // the one before, however large
		{2048, false, 2}, // ...
		{4096, true, 3},  // 2 before: 8 192
		{4097, true, 2},  // over by one
		{0, true, 600},   // writes of no spans count as one each: all 600, under keptBackSpans
	} {
		k := newKeptSpans(keptBudget)
		for range 600 {
			k.wrote(map[string]*handExec{}, c.spans, c.spread)
		}
		if len(k.recent) != c.want {
			t.Errorf("writes of %d spans, spread %v: %d remembered, want %d", c.spans, c.spread, len(k.recent), c.want)
		}
	}
}

// retrylab's own export puts the conversation on a run's root and agent
// spans, which end after its tool spans: with traces in flight across
// lines, a trace's first spans are stored under an execution of its own
// and join the conversation's when its root comes. Those executions are
// audited on the spans kept of both, not read back, and the records are
// the ones the export's document makes.
func TestKeptSpansFollowTracesIntoTheirConversation(t *testing.T) {
	dir := t.TempDir()
	var doc bytes.Buffer
	writeOwnExport(t, &doc, 60, 5)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	all := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	var spans []ptrace.Span
	for _, k := range concurrentOrderOf(spansByTrace(all), 16, rand.New(rand.NewPCG(5, 5))) {
		spans = append(spans, all.At(k))
	}
	// Lines of 16 spans kept in order (a window of 1): the concurrent
	// order is the file's.
	lines := interleavedLines(t, dir, "lines.jsonl", spans, 16, 1, 5)
	db, res := importAsTheDocument(t, td, lines, limits{chunkSpans: 32, mergeChunks: 1, keptBytes: keptBudget})
	if res.readBacks != 0 || res.audits == 0 {
		t.Errorf("%d audits, %d read back; want all on kept spans", res.audits, res.readBacks)
	}
	flagged := 0
	for _, x := range executions(t, db) {
		if says := auditSays(t, db, x.ID); recorded(x) != says {
			t.Errorf("%s says %q, the audit %q", x.ID, recorded(x), says)
		}
		if recorded(x) != "" {
			flagged++
		}
	}
	if flagged == 0 {
		t.Error("no execution flagged: the test shows nothing")
	}
}

// A file shuffled end to end, longer than the writes the kept spans
// remember (keptBackSpans): once the import finds its traces spread, it
// keeps every execution from the write that first stored it, so none is
// read back, and the records are the document's.
func TestKeptSpansOfAFileShuffledEndToEnd(t *testing.T) {
	t.Parallel()
	const n = 2 * keptBackSpans
	td := batchOf(0, n)
	all := spanList(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans())
	lines := interleavedLines(t, t.TempDir(), "shuffled.jsonl", all, 512, n, 9)
	_, res := importAsTheDocument(t, td, lines, defaultLimits)
	if res.readBacks != 0 || res.audits == 0 {
		t.Errorf("%d audits, %d read back; want all on kept spans", res.audits, res.readBacks)
	}
}

// importAsTheDocument imports lines, td's spans in another order, within
// lim, and checks that it stores all of them and makes the records td's
// document makes; it returns the database and the import's result.
func importAsTheDocument(t *testing.T, td ptrace.Traces, lines string, lim limits) (*store.DB, FileResult) {
	t.Helper()
	doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	docPath := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(docPath, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	want, db := openDB(t), openDB(t)
	if _, err := importFrom(want, docPath, nil, defaultLimits); err != nil {
		t.Fatal(err)
	}
	res, err := importFrom(db, lines, nil, lim)
	if err != nil || res.Spans != td.SpanCount() {
		t.Fatalf("%d of %d spans: %v", res.Spans, td.SpanCount(), err)
	}
	got, wantX := executions(t, db), executions(t, want)
	if len(got) != len(wantX) || len(got) == 0 {
		t.Fatalf("%d executions from the lines, %d from the document", len(got), len(wantX))
	}
	byID := map[string]audit.Grade{}
	for _, x := range wantX {
		byID[x.ID] = recorded(x)
	}
	for _, x := range got {
		if w, ok := byID[x.ID]; !ok || recorded(x) != w {
			t.Errorf("%s: %q from the lines, %q from the document", x.ID, recorded(x), w)
		}
	}
	return db, res
}
