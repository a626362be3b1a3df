package otlp

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

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
// a trace's spans are further apart than keptWrites writes: a shuffle of
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
			if x.Duplicates != says {
				t.Errorf("chunks of %d, %d bytes kept: %s says duplicates=%v, the audit %v", c.chunk, c.kept, x.ID, x.Duplicates, says)
			}
			if says {
				dups++
			}
		}
		if dups == 0 || dups == traces {
			t.Errorf("chunks of %d: %d of %d executions with a duplicate; want some, not all", c.chunk, dups, traces)
		}
	}
}
