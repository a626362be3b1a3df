package otlp

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A document of more spans than a chunk (delivered and stored in pieces)
// and the same spans as JSON Lines with the traces interleaved across
// lines (each trace's spans in many chunks, none read back unless it may
// have been stored) import alike; a span sent again is found either way,
// the same content counted as a repeat.
func TestDocumentAndInterleavedLinesImportAlike(t *testing.T) {
	t.Parallel()
	const n = 3 * deliverSpans
	all := batchOf(0, n)
	src := all.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	// The first span sent again at the end.
	src.At(0).CopyTo(src.AppendEmpty())
	var m ptrace.JSONMarshaler
	data, err := m.MarshalTraces(all)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	docPath := filepath.Join(dir, "doc.json")
	if err := os.WriteFile(docPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var lines []byte
	order := rand.New(rand.NewPCG(3, 3)).Perm(n)
	order = append(order, n) // the repeat last
	for i := 0; i < len(order); i += 100 {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		all.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
		ss := rs.ScopeSpans().AppendEmpty()
		for _, k := range order[i:min(i+100, len(order))] {
			src.At(k).CopyTo(ss.Spans().AppendEmpty())
		}
		line, err := m.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, line...), '\n')
	}
	linesPath := filepath.Join(dir, "lines.jsonl")
	if err := os.WriteFile(linesPath, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	var got [2][]string
	for k, p := range []string{docPath, linesPath} {
		// Chunks of 512 committed one by one, and as an import commits
		// them: several in one commit when decoding runs ahead.
		for _, lim := range []limits{{chunkSpans: 512, mergeChunks: 1, keptBytes: keptBudget}, {chunkSpans: 512, mergeChunks: 4}, defaultLimits} {
			chunk := lim.chunkSpans
			db := openDB(t)
			res, err := importFrom(db, p, nil, lim)
			if err != nil {
				t.Fatalf("%s, chunks of %d: %v", p, chunk, err)
			}
			if res.Spans != n || res.Repeated != 1 {
				t.Errorf("%s, chunks of %d: %d spans stored, %d repeated; want %d, 1", p, chunk, res.Spans, res.Repeated, n)
			}
			got[k] = nil
			for _, x := range executions(t, db) {
				got[k] = append(got[k], x.ID)
			}
		}
	}
	if len(got[0]) != n/8 || len(got[0]) != len(got[1]) {
		t.Errorf("%d executions from the document, %d from the lines; want %d", len(got[0]), len(got[1]), n/8)
	}
}

// The benchmark's concurrent shape holds each span once, and a trace's
// spans end within the spans of about c traces in flight: with 64 in
// flight no trace spreads over more than a few lines of 512.
func TestConcurrentOrderKeepsTracesInFlightTogether(t *testing.T) {
	const n, c = 50_000, 64
	order := concurrentOrder(n, c, rand.New(rand.NewPCG(21, 21)))
	if len(order) != n {
		t.Fatalf("%d spans in order, want %d", len(order), n)
	}
	seen := make([]bool, n)
	first := map[int]int{}
	widest := 0
	for i, span := range order {
		if seen[span] {
			t.Fatalf("span %d twice", span)
		}
		seen[span] = true
		tr := span / 8
		if f, ok := first[tr]; !ok {
			first[tr] = i
		} else {
			widest = max(widest, i-f)
		}
	}
	if widest < 8 || widest > 40*c {
		t.Errorf("a trace's spans spread over %d spans with %d in flight", widest, c)
	}
}

// The own export's traces differ in size: in flight, each trace's spans
// still end in their own order, every span once.
func TestConcurrentOrderOfTracesOfAnySize(t *testing.T) {
	var traces [][]int
	n := 0
	for size := range 40 {
		var tr []int
		for range size%9 + 1 {
			tr = append(tr, n)
			n++
		}
		traces = append(traces, tr)
	}
	order := concurrentOrderOf(traces, 5, rand.New(rand.NewPCG(21, 21)))
	if len(order) != n {
		t.Fatalf("%d spans in order, want %d", len(order), n)
	}
	last := map[int]int{} // trace -> its last span so far
	of := map[int]int{}
	for k, tr := range traces {
		for _, s := range tr {
			of[s] = k
		}
	}
	for _, s := range order {
		k := of[s]
		if prev, ok := last[k]; ok && prev >= s {
			t.Fatalf("trace %d: span %d ends after span %d", k, s, prev)
		}
		last[k] = s
	}
	if len(last) != len(traces) {
		t.Fatalf("%d traces in order, want %d", len(last), len(traces))
	}
}
