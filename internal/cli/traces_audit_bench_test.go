package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

// BenchmarkAuditImported times what `retrylab audit` does (read every
// execution, fold it, audit it, report) on a database of imported traces:
// RETRYLAB_BENCH_IMPORTED_DB names one (BENCHMARKS.md, 8: the million-span
// import, 125 000 executions), else a small one is made here: 2 000
// conversations of one trace of 8 spans, each with send_email twice.
func BenchmarkAuditImported(b *testing.B) {
	db := os.Getenv("RETRYLAB_BENCH_IMPORTED_DB")
	if db == "" {
		db = smallImportedDB(b, 2000)
	}
	pats, err := audit.ParseEffects(audit.DefaultEffects)
	if err != nil {
		b.Fatal(err)
	}
	execs := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := &app{dbPath: db, imports: all.Registry()}
		t, err := a.traces()
		if err != nil {
			b.Fatal(err)
		}
		l, err := t.Audit(nil, audit.Options{Effects: pats, Window: audit.DefaultWindow})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := l.Collect()
		l.Close()
		t.Close()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Counts.Duplicate == 0 {
			b.Fatal("no duplicate found")
		}
		execs = rep.Executions
	}
	b.ReportMetric(float64(execs*b.N)/b.Elapsed().Seconds(), "executions/s")
}

// smallImportedDB imports traces of an agent that sent an email twice.
func smallImportedDB(b *testing.B, traces int) string {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "spans.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for first := 0; first < traces; first += 64 {
		td := agentTraces(first, min(64, traces-first))
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
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
	dbPath := filepath.Join(dir, "imported.db")
	s, err := store.Open(dbPath, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := otlp.ImportFile(s, path); err != nil {
		b.Fatal(err)
	}
	return dbPath
}

// agentTraces is count agent-shaped traces of 8 spans, numbered from first,
// each its own conversation: an agent invocation and seven tool calls
// (get_contact, send_email, create_ticket in turn, with arguments and a
// result), send_email twice with the same arguments.
func agentTraces(first, count int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	base := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	for tr := first; tr < first+count; tr++ {
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("t%015d", tr))
		var root pcommon.SpanID
		copy(root[:], fmt.Sprintf("%07d0", tr))
		for k := 0; k < 8; k++ {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(tid)
			var sid pcommon.SpanID
			copy(sid[:], fmt.Sprintf("%07d%d", tr, k))
			s.SetSpanID(sid)
			at := base.Add(time.Duration(tr)*time.Second + time.Duration(k)*10*time.Millisecond)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(8 * time.Millisecond)))
			a := s.Attributes()
			a.PutStr("gen_ai.conversation.id", "conv-"+strconv.Itoa(tr))
			if k == 0 {
				s.SetName("invoke_agent bench")
				a.PutStr("gen_ai.operation.name", "invoke_agent")
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(90 * time.Millisecond)))
				continue
			}
			s.SetParentSpanID(root)
			tool := []string{"get_contact", "send_email", "create_ticket"}[k%3]
			s.SetName("execute_tool " + tool)
			a.PutStr("gen_ai.operation.name", "execute_tool")
			a.PutStr("gen_ai.tool.name", tool)
			a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%d_%d", tr, k))
			a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"to": "user%d@example.com"}`, tr))
			a.PutStr("gen_ai.tool.call.result", `{"ok": true}`)
		}
	}
	return td
}
