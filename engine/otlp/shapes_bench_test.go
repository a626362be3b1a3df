package otlp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/cputime"
	"github.com/retrylab/retrylab/store"
)

// shapeSpans is how many spans each file of BenchmarkImportShapes holds:
// RETRYLAB_BENCH_SHAPE_SPANS, default 50 000.
func shapeSpans() int {
	if n, err := strconv.Atoi(os.Getenv("RETRYLAB_BENCH_SHAPE_SPANS")); err == nil && n > 0 {
		return n
	}
	return 50_000
}

// padded is s grown to about size bytes of JSON: a "note" field of x's
// added to the object s is.
func padded(s string, size int) string {
	if pad := size - len(s) - len(`, "note": ""`); pad > 0 {
		return strings.TrimSuffix(s, "}") + `, "note": "` + strings.Repeat("x", pad) + `"}`
	}
	return s
}

// largeBatchOf is batchOf with the tool calls' arguments and results
// grown to 1 KB each, as agents that pass documents around record them.
func largeBatchOf(first, spans int) ptrace.Traces {
	td := batchOf(first, spans)
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < ss.Len(); i++ {
		a := ss.At(i).Attributes()
		for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
			if v, ok := a.Get(k); ok {
				a.PutStr(k, padded(v.Str(), 1024))
			}
		}
	}
	return td
}

// shapeFile writes (once, into $TMPDIR/retrylab-bench) the file named
// name with write.
func shapeFile(b *testing.B, name string, write func(w *bufio.Writer)) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "retrylab-bench")
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "shape-*.tmp")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.Rename(f.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// marshal is td as OTLP/JSON.
func marshal(b *testing.B, td ptrace.Traces) []byte {
	data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// interleavedFile is JSON Lines of batchOf's n spans shuffled (seed 21)
// into lines of 512: a BatchSpanProcessor's export with every trace of
// the file in flight at once, each trace's spans spread over the whole
// file (the extreme of concurrentFile).
func interleavedFile(b *testing.B, n int) string {
	return shapeFile(b, fmt.Sprintf("otlp-interleaved-v1-%d.jsonl", n), func(w *bufio.Writer) {
		writeLines(b, w, batchOf(0, n), rand.New(rand.NewPCG(21, 21)).Perm(n))
	})
}

// concurrentFile is JSON Lines of batchOf's n spans in the order a
// BatchSpanProcessor exports them from c traces in flight at once: a
// trace starts when one ends, each step one span of a trace in flight
// (picked at random, seed 21) ends, and the spans go out 512 a line in
// the order they ended. A trace's spans spread over the lines of about c
// traces; interleavedFile is the extreme, every trace in flight at once
// across the whole file.
func concurrentFile(c int) func(*testing.B, int) string {
	return func(b *testing.B, n int) string {
		return shapeFile(b, fmt.Sprintf("otlp-concurrent-%d-v1-%d.jsonl", c, n), func(w *bufio.Writer) {
			writeLines(b, w, batchOf(0, n), concurrentOrder(n, c, rand.New(rand.NewPCG(21, 21))))
		})
	}
}

// concurrentOrder is the order in which the n spans of batchOf (8 a
// trace) end when c traces are in flight at once: see concurrentFile.
func concurrentOrder(n, c int, r *rand.Rand) []int {
	traces := make([][]int, 0, (n+7)/8)
	for first := 0; first < n; first += 8 {
		var t []int
		for k := first; k < min(first+8, n); k++ {
			t = append(t, k)
		}
		traces = append(traces, t)
	}
	return concurrentOrderOf(traces, c, r)
}

// concurrentOrderOf is the order in which spans end when c of traces (each
// its spans' indexes, in the order they end) are in flight at once: a
// trace starts when one ends, and each step one span of a trace in flight,
// picked at random, ends.
func concurrentOrderOf(traces [][]int, c int, r *rand.Rand) []int {
	type inFlight struct{ trace, ended int }
	var flying []inFlight
	var order []int
	next := 0
	for next < len(traces) || len(flying) > 0 {
		for len(flying) < c && next < len(traces) {
			flying = append(flying, inFlight{trace: next})
			next++
		}
		i := r.IntN(len(flying))
		t := &flying[i]
		order = append(order, traces[t.trace][t.ended])
		if t.ended++; t.ended == len(traces[t.trace]) {
			flying[i] = flying[len(flying)-1]
			flying = flying[:len(flying)-1]
		}
	}
	return order
}

// writeLines writes the spans of all (one resource, one scope) in order,
// 512 a line of JSON Lines.
func writeLines(b *testing.B, w *bufio.Writer, all ptrace.Traces, order []int) {
	spans := all.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < len(order); i += 512 {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		all.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("bench")
		for _, k := range order[i:min(i+512, len(order))] {
			spans.At(k).CopyTo(ss.Spans().AppendEmpty())
		}
		w.Write(marshal(b, td))
		w.WriteByte('\n')
	}
}

// documentFile is batchOf's n spans as one OTLP/JSON document.
func documentFile(b *testing.B, n int) string {
	return shapeFile(b, fmt.Sprintf("otlp-document-v1-%d.json", n), func(w *bufio.Writer) {
		w.Write(marshal(b, batchOf(0, n)))
		w.WriteByte('\n')
	})
}

// largeFile is JSON Lines of largeBatchOf's n spans, 512 a line.
func largeFile(b *testing.B, n int) string {
	return shapeFile(b, fmt.Sprintf("otlp-large-v1-%d.jsonl", n), func(w *bufio.Writer) {
		for i := 0; i < n; i += 512 {
			w.Write(marshal(b, largeBatchOf(i, min(512, n-i))))
			w.WriteByte('\n')
		}
	})
}

// ownExportFile is what `retrylab export --otlp` writes (one document) of
// generated executions (gen, seed 21) until about n spans.
func ownExportFile(b *testing.B, n int) string {
	return shapeFile(b, fmt.Sprintf("otlp-own-export-v2-%d.json", n), func(w *bufio.Writer) {
		// About 7 spans an execution with 3 attempts a step.
		writeOwnExport(b, w, max(1, n/7), 21)
		w.WriteByte('\n')
	})
}

// ownExportLinesFile is ownExportFile's spans as JSON Lines, 512 a line,
// in the order order gives them (of the spans grouped by trace, as the
// export writes them); name tells the order apart.
func ownExportLinesFile(name string, order func(traces [][]int, r *rand.Rand) []int) func(*testing.B, int) string {
	return func(b *testing.B, n int) string {
		doc, err := os.ReadFile(ownExportFile(b, n))
		if err != nil {
			b.Fatal(err)
		}
		return shapeFile(b, fmt.Sprintf("otlp-own-export-%s-v1-%d.jsonl", name, n), func(w *bufio.Writer) {
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
			if err != nil {
				b.Fatal(err)
			}
			traces := spansByTrace(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans())
			writeLines(b, w, td, order(traces, rand.New(rand.NewPCG(21, 21))))
		})
	}
}

// spansByTrace is the indexes of spans, by trace, each trace's in order,
// the traces in the order of their first span.
func spansByTrace(spans ptrace.SpanSlice) [][]int {
	var traces [][]int
	at := map[pcommon.TraceID]int{}
	for k := 0; k < spans.Len(); k++ {
		id := spans.At(k).TraceID()
		t, ok := at[id]
		if !ok {
			t = len(traces)
			at[id] = t
			traces = append(traces, nil)
		}
		traces[t] = append(traces[t], k)
	}
	return traces
}

// inTraceOrder is the spans trace after trace, as the export wrote them.
func inTraceOrder(traces [][]int, _ *rand.Rand) []int {
	var order []int
	for _, t := range traces {
		order = append(order, t...)
	}
	return order
}

// shuffled is the spans in random order (interleavedFile's).
func shuffled(traces [][]int, r *rand.Rand) []int {
	order := inTraceOrder(traces, r)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// inFlight is the order of c traces in flight at once (concurrentOrderOf).
func inFlight(c int) func([][]int, *rand.Rand) []int {
	return func(traces [][]int, r *rand.Rand) []int { return concurrentOrderOf(traces, c, r) }
}

// writeOwnExport writes what `retrylab export --otlp` writes of a `gen`
// database of n executions (3 attempts a step, seed): one document.
func writeOwnExport(tb testing.TB, w io.Writer, n int, seed uint64) {
	tb.Helper()
	writeOwnExportOf(tb, w, gen.Options{Executions: n, AttemptsPerStep: 3, Seed: seed})
}

// writeOwnExportOf is writeOwnExport of a `gen` database made with opts.
func writeOwnExportOf(tb testing.TB, w io.Writer, opts gen.Options) {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "gen.db"), store.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := gen.Generate(context.Background(), db, opts); err != nil {
		tb.Fatal(err)
	}
	var ids []string
	if err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, _ []byte) bool { ids = append(ids, id); return true })
	}); err != nil {
		tb.Fatal(err)
	}
	jw := NewJSONWriter(w, "bench")
	for _, id := range ids {
		err := jw.History(id, func(fn func(history.Event) error) error {
			return db.View(func(tx *store.Tx) error {
				var ferr error
				err := tx.Events(id, 0, func(_ uint64, data []byte) bool {
					ev, err := history.Decode(data)
					if err == nil {
						err = fn(ev)
					}
					ferr = err
					return err == nil
				})
				if ferr != nil {
					return ferr
				}
				return err
			})
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := jw.Close(); err != nil {
		tb.Fatal(err)
	}
}

// bareDecode is pdata's unmarshal of the file alone: each line of JSON
// Lines, or the whole document. It returns the spans decoded.
func bareDecode(b testing.TB, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	var u ptrace.JSONUnmarshaler
	if !strings.HasSuffix(path, ".jsonl") {
		td, err := u.UnmarshalTraces(data)
		if err != nil {
			b.Fatal(err)
		}
		return td.SpanCount()
	}
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		td, err := u.UnmarshalTraces(line)
		if err != nil {
			b.Fatal(err)
		}
		n += td.SpanCount()
	}
	return n
}

// BenchmarkImportShapes imports each shape of issue 21's item 5 — JSON
// Lines with traces interleaved across lines (every trace across the whole
// file; 64 and 1024 traces in flight at once), one large document, spans
// with 1 KB arguments and results, retrylab's own export (one document,
// and as JSON Lines with its traces together, 1024 in flight, or
// shuffled) — and, in the
// same run, in alternating rounds, decodes the same file with pdata alone.
// Per shape it reports both rates, their ratio (goal >= 0.5), both peak
// heaps, and both sides' peak RSS, each side run once more in a process of
// its own (one document: the import's <= 1.5x the bare decode's).
func BenchmarkImportShapes(b *testing.B) {
	n := shapeSpans()
	shapes := []struct {
		name string
		file func(*testing.B, int) string
	}{
		{"interleaved", interleavedFile},
		{"concurrent-64", concurrentFile(64)},
		{"concurrent-1024", concurrentFile(1024)},
		{"document", documentFile},
		{"large-attrs", largeFile},
		{"own-export", ownExportFile},
		{"own-export-lines", ownExportLinesFile("lines", inTraceOrder)},
		{"own-export-concurrent-1024", ownExportLinesFile("concurrent-1024", inFlight(1024))},
		{"own-export-interleaved", ownExportLinesFile("interleaved", shuffled)},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			path := sh.file(b, n)
			var bare, imp, bareCPU, impCPU time.Duration
			var barePeak, impPeak uint64
			spans := 0
			host0 := cputime.Host()
			for i := 0; i < b.N; i++ {
				// Each side from a clean start: the bare decode's heap, freed
				// but still the runtime's, counted against the import's
				// memory limit, whose collector then ran back to back.
				debug.FreeOSMemory()
				stop := peakHeap()
				c0, t0 := cputime.Process(), time.Now()
				spans = bareDecode(b, path)
				bare += time.Since(t0)
				bareCPU += cputime.Process() - c0
				barePeak = max(barePeak, stop())

				db, err := store.Open(filepath.Join(b.TempDir(), fmt.Sprintf("import-%d.db", i)), store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				debug.FreeOSMemory()
				stop = peakHeap()
				old := debug.SetMemoryLimit(ImportMemoryLimit) // as the CLI runs it
				c0, t0 = cputime.Process(), time.Now()
				res, err := ImportFile(db, path)
				imp += time.Since(t0)
				impCPU += cputime.Process() - c0
				debug.SetMemoryLimit(old)
				impPeak = max(impPeak, stop())
				if err != nil || res.Spans != spans {
					b.Fatalf("imported %d of %d spans: %v", res.Spans, spans, err)
				}
				db.Close()
			}
			b.ReportMetric(host0.StealPercent(cputime.Host()), "host-steal-%")
			if fi, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(fi.Size())/float64(spans), "file-bytes/span")
			}
			b.ReportMetric(float64(spans), "spans")
			b.ReportMetric(float64(spans*b.N)/bare.Seconds(), "bare-spans/s")
			b.ReportMetric(float64(spans*b.N)/imp.Seconds(), "import-spans/s")
			b.ReportMetric(bare.Seconds()/imp.Seconds(), "ratio")
			b.ReportMetric(bareCPU.Seconds()/float64(b.N), "bare-cpu-s")
			b.ReportMetric(impCPU.Seconds()/float64(b.N), "import-cpu-s")
			b.ReportMetric(float64(barePeak)/(1<<20), "bare-peak-heap-MB")
			b.ReportMetric(float64(impPeak)/(1<<20), "import-peak-heap-MB")
			// Peak RSS needs a process of its own for each side: this test
			// binary again, running TestShapeSide.
			b.ReportMetric(sidePeakRSS(b, "bare", path), "bare-peak-RSS-MB")
			b.ReportMetric(sidePeakRSS(b, "import", path), "import-peak-RSS-MB")
		})
	}
}

// sidePeakRSS runs one side of BenchmarkImportShapes (bare or import) on
// path in a process of its own, this test binary running TestShapeSide,
// and returns the process's peak RSS in MB.
func sidePeakRSS(b *testing.B, side, path string) float64 {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestShapeSide$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "RETRYLAB_SHAPE_SIDE="+side, "RETRYLAB_SHAPE_FILE="+path,
		"RETRYLAB_SHAPE_DB="+filepath.Join(b.TempDir(), "side.db"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s side: %v\n%s", side, err, out)
	}
	// The child says its own VmHWM: its rusage would count the parent's
	// pages it shared until its exec.
	_, after, ok := strings.Cut(string(out), "peak-RSS-kB ")
	kb, err := strconv.Atoi(strings.Fields(after + " x")[0])
	if !ok || err != nil {
		b.Fatalf("%s side said no peak RSS:\n%s", side, out)
	}
	return float64(kb) / 1024
}

// vmHWM is this process's peak RSS in kB (/proc/self/status).
func vmHWM(t testing.TB) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(status), "VmHWM:")
	kb, err := strconv.Atoi(strings.Fields(after + " x")[0])
	if !ok || err != nil {
		t.Fatalf("no VmHWM in /proc/self/status")
	}
	return kb
}

// TestShapeSide is one side of BenchmarkImportShapes in a process of its
// own (sidePeakRSS): pdata's bare decode of RETRYLAB_SHAPE_FILE, or its
// import into a new database at RETRYLAB_SHAPE_DB under the CLI's memory
// limit. Without RETRYLAB_SHAPE_SIDE it does nothing.
func TestShapeSide(t *testing.T) {
	side, path := os.Getenv("RETRYLAB_SHAPE_SIDE"), os.Getenv("RETRYLAB_SHAPE_FILE")
	switch side {
	case "":
		t.Skip("a side of BenchmarkImportShapes, run by it")
	case "bare":
		if n := bareDecode(t, path); n == 0 {
			t.Fatal("no spans")
		}
	case "import":
		db, err := store.Open(os.Getenv("RETRYLAB_SHAPE_DB"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		debug.SetMemoryLimit(ImportMemoryLimit)
		if res, err := ImportFile(db, path); err != nil || res.Spans == 0 {
			t.Fatalf("imported %d spans: %v", res.Spans, err)
		}
	default:
		t.Fatalf("RETRYLAB_SHAPE_SIDE=%q: bare or import", side)
	}
	fmt.Printf("peak-RSS-kB %d\n", vmHWM(t))
}
