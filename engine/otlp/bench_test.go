package otlp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/internal/cputime"
	"github.com/retrylab/retrylab/store"
)

// benchSpans is how many spans the import benchmark's file holds:
// RETRYLAB_BENCH_SPANS, default 100 000 (BENCHMARKS.md's figure uses
// 1 000 000).
func benchSpans() int {
	if n, err := strconv.Atoi(os.Getenv("RETRYLAB_BENCH_SPANS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// batchOf builds one TracesData of traces of 8 spans: an agent, a model
// call and six tool calls with GenAI attributes, as an agent emits them.
func batchOf(first, spans int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("bench")
	base := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	for i := first; i < first+spans; i++ {
		tr, k := i/8, i%8
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("t%015d", tr))
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		var sid, root pcommon.SpanID
		copy(sid[:], fmt.Sprintf("%07d%d", tr%10_000_000, k))
		copy(root[:], fmt.Sprintf("%07d0", tr%10_000_000))
		s.SetSpanID(sid)
		at := base.Add(time.Duration(tr) * time.Second).Add(time.Duration(k) * 10 * time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(8 * time.Millisecond)))
		a := s.Attributes()
		a.PutStr("gen_ai.conversation.id", "conv-"+strconv.Itoa(tr))
		switch k {
		case 0:
			s.SetName("invoke_agent bench")
			a.PutStr("gen_ai.operation.name", "invoke_agent")
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(90 * time.Millisecond)))
		case 1:
			s.SetParentSpanID(root)
			s.SetName("chat gpt-4o")
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4o")
			a.PutInt("gen_ai.usage.input_tokens", 812)
		default:
			s.SetParentSpanID(root)
			tool := []string{"get_contact", "send_email", "create_ticket"}[k%3]
			s.SetName("execute_tool " + tool)
			a.PutStr("gen_ai.operation.name", "execute_tool")
			a.PutStr("gen_ai.tool.name", tool)
			a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%d_%d", tr, k))
			a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"to": "user%d@example.com", "subject": "Invoice %d"}`, tr%1000, tr))
			a.PutStr("gen_ai.tool.call.result", `{"ok": true}`)
		}
	}
	return td
}

// longTraceBatchOf builds one TracesData of spans first to first+spans of
// one long trace: an invoke_agent root (span 0) and a send_email call its
// agent retried again and again under one tool-call id, with the same
// arguments: every other attempt timed out (its outcome unknown), the
// others failed with a 503, except one in a hundred that succeeded. Every
// attempt that timed out pairs with every later one that did not fail.
func longTraceBatchOf(first, spans int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("bench")
	base := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	var tid pcommon.TraceID
	copy(tid[:], "long-trace-00001")
	var root pcommon.SpanID
	copy(root[:], "root0000")
	for i := first; i < first+spans; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		var sid pcommon.SpanID
		copy(sid[:], fmt.Sprintf("%08d", i))
		at := base.Add(time.Duration(i) * 10 * time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(8 * time.Millisecond)))
		a := s.Attributes()
		a.PutStr("gen_ai.conversation.id", "conv-long")
		if i == 0 {
			s.SetSpanID(root)
			s.SetName("invoke_agent bench")
			a.PutStr("gen_ai.operation.name", "invoke_agent")
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(first+spans+1) * 10 * time.Millisecond)))
			continue
		}
		s.SetSpanID(sid)
		s.SetParentSpanID(root)
		s.SetName("execute_tool send_email")
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", "send_email")
		a.PutStr("gen_ai.tool.call.id", "call_1")
		a.PutStr("gen_ai.tool.call.arguments", `{"to": "user@example.com", "subject": "Invoice 1"}`)
		switch {
		case i%100 == 0:
			a.PutStr("gen_ai.tool.call.result", `{"ok": true}`)
		case i%2 == 1:
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("no response within 1s")
			a.PutStr("error.type", "timeout")
		default:
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("503 Service Unavailable")
			a.PutStr("error.type", "503")
		}
	}
	return td
}

// benchFile writes (once, into $TMPDIR/retrylab-bench) a JSON Lines file of
// n spans in batches of 512, as the OTLP file exporter writes them, of
// traces of 8 spans (batchOf).
func benchFile(b *testing.B, n int) string {
	return benchFileOf(b, n, "otlp-v1", batchOf)
}

// benchFileOf is benchFile with the batches batch builds, named name-n.jsonl.
func benchFileOf(b *testing.B, n int, name string, batch func(first, spans int) ptrace.Traces) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "retrylab-bench")
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", name, n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "otlp-*.tmp")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < n; i += 512 {
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(batch(i, min(512, n-i)))
		if err != nil {
			b.Fatal(err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.Rename(f.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// writtenBytes is what this process has caused to be written to disk so
// far (Linux's /proc/self/io write_bytes); 0 where it is not known.
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// peakHeap samples the heap in use until stop is called, and returns the
// highest figure seen.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if v := ms.HeapInuse + ms.StackInuse; v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// BenchmarkImportJSONL compares `retrylab import` of a JSON Lines file
// (decode, translate, store, fsync, under the CLI's ImportMemoryLimit)
// with pdata's bare unmarshal of the same lines, in alternating rounds; it
// reports both rates, their ratio (goal >= 0.5), the import's peak heap
// (goal <= 150 MB), the database's size and the bytes written per span.
func BenchmarkImportJSONL(b *testing.B) {
	n := benchSpans()
	path := benchFile(b, n)
	var bare, imp time.Duration
	var peak uint64
	var dbBytes, written int64
	var bareCPU, impCPU time.Duration
	for i := 0; i < b.N; i++ {
		runtime.GC()
		c0 := cputime.Process()
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				if _, uerr := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line); uerr != nil {
					b.Fatal(uerr)
				}
			}
			if err != nil {
				break
			}
		}
		f.Close()
		bare += time.Since(t0)
		bareCPU += cputime.Process() - c0

		dbPath := filepath.Join(b.TempDir(), "import.db")
		db, err := store.Open(dbPath, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		stop := peakHeap()
		w0 := writtenBytes()
		old := debug.SetMemoryLimit(ImportMemoryLimit) // as the CLI runs it
		c0 = cputime.Process()
		t0 = time.Now()
		res, err := ImportFile(db, path)
		imp += time.Since(t0)
		impCPU += cputime.Process() - c0
		debug.SetMemoryLimit(old)
		written += writtenBytes() - w0
		peak = max(peak, stop())
		if err != nil || res.Spans != n {
			b.Fatalf("imported %d of %d: %v", res.Spans, n, err)
		}
		db.Close()
		if fi, err := os.Stat(dbPath); err == nil {
			dbBytes = fi.Size()
		}
	}
	b.ReportMetric(float64(dbBytes)/float64(n), "db-bytes/span")
	b.ReportMetric(bareCPU.Seconds()/float64(b.N), "bare-cpu-s")
	b.ReportMetric(impCPU.Seconds()/float64(b.N), "import-cpu-s")
	if written > 0 {
		b.ReportMetric(float64(written)/float64(n*b.N), "written-bytes/span")
	}
	b.ReportMetric(float64(n*b.N)/bare.Seconds(), "bare-spans/s")
	b.ReportMetric(float64(n*b.N)/imp.Seconds(), "import-spans/s")
	b.ReportMetric(bare.Seconds()/imp.Seconds(), "ratio")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkImportLongTrace imports, in alternating rounds, a JSON Lines
// file of n spans that are one trace (longTraceBatchOf: one call retried
// n-1 times, 512 spans a line, so its spans come in many chunks) and the
// file of BenchmarkImportJSONL, of the same number of spans in traces of 8,
// each into a fresh database under the CLI's ImportMemoryLimit. It reports
// both rates, their CPU seconds and the ratio long/short (8f: ~1, the cost
// of a span does not grow with its trace).
func BenchmarkImportLongTrace(b *testing.B) {
	n := benchSpans()
	files := []string{benchFileOf(b, n, "otlp-long-v2", longTraceBatchOf), benchFile(b, n)}
	var wall, cpu [2]time.Duration
	for i := 0; i < b.N; i++ {
		for k, path := range files {
			db, err := store.Open(filepath.Join(b.TempDir(), fmt.Sprintf("import-%d.db", k)), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			old := debug.SetMemoryLimit(ImportMemoryLimit) // as the CLI runs it
			c0, t0 := cputime.Process(), time.Now()
			res, err := ImportFile(db, path)
			wall[k] += time.Since(t0)
			cpu[k] += cputime.Process() - c0
			debug.SetMemoryLimit(old)
			if err != nil || res.Spans != n {
				b.Fatalf("%s: imported %d of %d: %v", path, res.Spans, n, err)
			}
			db.Close()
		}
	}
	b.ReportMetric(float64(n*b.N)/wall[0].Seconds(), "long-spans/s")
	b.ReportMetric(float64(n*b.N)/wall[1].Seconds(), "short-spans/s")
	b.ReportMetric(cpu[0].Seconds()/float64(b.N), "long-cpu-s")
	b.ReportMetric(cpu[1].Seconds()/float64(b.N), "short-cpu-s")
	b.ReportMetric(wall[1].Seconds()/wall[0].Seconds(), "ratio")
}

// BenchmarkReceiver sends batches of 512 spans from 8 concurrent exporters
// to the OTLP/HTTP receiver (protobuf, fsync on, group commit) and reports
// durable spans per second (goal >= 50 000).
func BenchmarkReceiver(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "recv.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer((&Receiver{DB: db, Source: "bench"}).Handler())
	defer srv.Close()
	const exporters, batch = 8, 512
	// Every batch is new spans, built and marshalled before the clock
	// starts (as BenchmarkServeReceivers does): the figure is the
	// receiver's, not the exporters'.
	bodies := make([][]byte, b.N)
	for i := range bodies {
		if bodies[i], err = (&ptrace.ProtoMarshaler{}).MarshalTraces(batchOf(i*batch, batch)); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var sent atomic.Int64
	b.ResetTimer()
	t0, c0, w0 := time.Now(), cputime.Process(), writtenBytes()
	var wg sync.WaitGroup
	for w := 0; w < exporters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/traces", bytes.NewReader(bodies[i]))
				req.Header.Set("Content-Type", "application/x-protobuf")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				sent.Add(batch)
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(sent.Load())/time.Since(t0).Seconds(), "durable-spans/s")
	// The process's CPU a span (the exporters' client side included, the
	// same for every receiver): less noisy than the rate on a shared
	// machine.
	b.ReportMetric(float64((cputime.Process()-c0).Microseconds())/float64(max(sent.Load(), 1)), "CPU-µs/span")
	// What the commits wrote to the disk a span: their fsyncs wait for it.
	b.ReportMetric(float64(writtenBytes()-w0)/float64(max(sent.Load(), 1)), "written-bytes/span")
}
