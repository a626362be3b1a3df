package otlp

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/store"
)

// handAuditRequests are requests of every kind the audit on spans in hand
// meets: fresh agent batches (with duplicates), a long trace over several
// requests, a batch sent again, a batch with a span twice, a conversation
// over two requests, a trace whose conversation becomes known later, and
// the fixtures.
func handAuditRequests(t *testing.T) [][]Span {
	t.Helper()
	spansOf := func(td ptrace.Traces) []Span {
		s, err := Spans(td)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var reqs [][]Span
	for i := range 3 {
		reqs = append(reqs, spansOf(batchOf(i*512, 512)))
	}
	for i := range 3 {
		reqs = append(reqs, spansOf(longTraceBatchOf(i*200, 200)))
	}
	reqs = append(reqs, spansOf(batchOf(0, 512))) // sent again
	twice := spansOf(batchOf(3*512, 64))
	twice = append(twice, twice[10]) // a tool span twice
	reqs = append(reqs, twice)
	// One conversation, two requests: the second extends an execution.
	first, second := spansOf(batchOf(4*512, 16)), spansOf(batchOf(4*512+16, 16))
	for i := range second {
		second[i].Attrs.Set("gen_ai.conversation.id", first[0].Attrs.Get("gen_ai.conversation.id"))
	}
	reqs = append(reqs, first, second)
	// A trace first without its conversation, then with it.
	bare := spansOf(batchOf(5*512, 8))
	for i := range bare {
		bare[i].Attrs.Delete("gen_ai.conversation.id")
	}
	reqs = append(reqs, bare[:4], spansOf(batchOf(5*512, 8))[4:])
	// A trace stored under one conversation comes again under another,
	// beside a new trace of that other one: the write keeps the first
	// trace under its execution, and the new one alone is in hand.
	tool := func(trace, span, conv, call, args string) Span {
		return Span{TraceID: trace, SpanID: span, ParentID: "a0a0a0a0a0a0a0a0", Name: "execute_tool send_email",
			Start: 1790604000000000000, End: 1790604001000000000, Attrs: AttrsOf(map[string]string{
				"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_email", "gen_ai.conversation.id": conv,
				"gen_ai.tool.call.id": call, "gen_ai.tool.call.arguments": args})}
	}
	const t1, t2 = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1", "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	reqs = append(reqs,
		[]Span{tool(t1, "c100000000000001", "conv-one", "call_1", `{"to": "ana"}`)},
		[]Span{tool(t1, "c100000000000002", "conv-two", "call_2", `{"to": "bo"}`),
			tool(t2, "c200000000000001", "conv-two", "call_3", `{"to": "bo"}`),
			tool(t2, "c200000000000002", "conv-two", "call_4", `{"to": "cy"}`)})
	for _, f := range []string{"adk-send-twice.json", "genai-semconv.json", "openinference-charge.jsonl", "openllmetry-ticket.json"} {
		reqs = append(reqs, readFixture(t, f))
	}
	return reqs
}

// The receivers' audits made ahead of the transaction (auditAhead) leave
// every execution record as Save's audit in it does, and stand for most
// executions.
func TestAuditAheadAsSave(t *testing.T) {
	open := func(name string) *store.DB {
		db, err := store.Open(filepath.Join(t.TempDir(), name), store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	plain, ahead := open("plain.db"), open("ahead.db")
	execs := map[string]bool{}
	used, audited := 0, 0
	for n, req := range handAuditRequests(t) {
		var st Stats
		if err := plain.Update(func(tx *store.Tx) error {
			var err error
			st, err = Save(tx, slices.Clone(req), "test")
			return err
		}); err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		for _, x := range st.Executions {
			execs[x] = true
		}
		mem := &requestMemory{}
		spans := slices.Clone(req)
		encoded, facts := mem.prepare(spans)
		audits, grouped := mem.auditAhead(spans, facts)
		audited += len(audits)
		if err := ahead.Update(func(tx *store.Tx) error {
			w := newWriter("test", 0)
			w.written, w.oneTx, w.grouped = nil, true, grouped
			if err := w.write(tx, spans, encoded, facts); err != nil {
				return err
			}
			before := len(w.hand)
			w.useAhead(audits)
			used += before - len(w.hand)
			w.handJob(nil).run(nil)
			return w.finish(tx)
		}); err != nil {
			t.Fatalf("request %d, audited ahead: %v", n, err)
		}
	}
	if used == 0 || used > audited {
		t.Fatalf("%d audits made ahead, %d used", audited, used)
	}
	for x := range execs {
		var a, b []byte
		_ = plain.View(func(tx *store.Tx) error { a = bytes.Clone(tx.Execution(x)); return nil })
		_ = ahead.View(func(tx *store.Tx) error { b = bytes.Clone(tx.Execution(x)); return nil })
		if !bytes.Equal(a, b) {
			t.Errorf("execution %s:\n Save: %s\nahead: %s", x, a, b)
		}
	}
	t.Logf("%d executions, %d audits made ahead, %d used", len(execs), audited, used)
}
