package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// record reads one execution's record.
func record(t *testing.T, db *store.DB, id string) history.Execution {
	t.Helper()
	for _, x := range executions(t, db) {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no execution %s in %+v", id, executions(t, db))
	return history.Execution{}
}

// auditSays is the audit's own verdict on one stored execution, alone,
// with the default effects.
func auditSays(t *testing.T, db *store.DB, id string) audit.Grade {
	t.Helper()
	spans, err := LoadSpans(db, id)
	if err != nil {
		t.Fatal(err)
	}
	return audit.Verdict(trace.Fold(id, Events(spans)))
}

// recorded is the verdict x's record says: its Duplicates and Possible
// flags.
func recorded(x history.Execution) audit.Grade {
	switch {
	case x.Duplicates && x.Possible:
		return "both duplicate and possible"
	case x.Duplicates:
		return audit.Duplicate
	case x.Possible:
		return audit.Possible
	}
	return ""
}

// recordsAsAudited checks that each execution's record says duplicates
// (or possible ones) as the audit of its spans does (when says it), and
// returns how many say duplicates.
func recordsAsAudited(t *testing.T, db *store.DB, when string) int {
	t.Helper()
	dups := 0
	for _, x := range executions(t, db) {
		if says := auditSays(t, db, x.ID); recorded(x) != says {
			t.Errorf("%s: %s says %q, the audit %q", when, x.ID, recorded(x), says)
		}
		if x.Duplicates {
			dups++
		}
	}
	return dups
}

// An imported execution whose audit finds a duplicate effect says so on
// its record, so the explorer's list shows ⚠ and its ⚠ and "dup" filters
// find it; one whose audit finds a possible one (the charge whose first
// attempt's outcome is unknown) says that, for ◇ and its filters; one
// with neither shows its status.
func TestImportRecordsDuplicates(t *testing.T) {
	db := openDB(t)
	for _, f := range []string{"adk-send-twice.json", "openinference-charge.jsonl", "openllmetry-ticket.json"} {
		if _, err := ImportFile(db, filepath.Join(fixtures, f)); err != nil {
			t.Fatal(err)
		}
	}
	filters := map[audit.Grade][]string{audit.Duplicate: {"⚠", "dup"}, audit.Possible: {"◇", "poss"}, "": {"✓"}}
	for id, want := range map[string]audit.Grade{"otlp-conv-sess-adk-mail-1": audit.Duplicate, "otlp-conv-sess-oi-7": audit.Possible,
		"otlp-4bf92f3577b34da6a3ce929d0e0e4736": ""} {
		x := record(t, db, id)
		if says := auditSays(t, db, id); recorded(x) != want || says != want {
			t.Errorf("%s: record says %q, audit %q; want %q", id, recorded(x), says, want)
		}
		for grade, fs := range filters {
			for _, filter := range fs {
				if got := execindex.Parse(filter).Match(x); got != (grade == want) {
					t.Errorf("%s: filter %q matches %v, want %v", id, filter, got, grade == want)
				}
			}
		}
	}
}

// The receiver sets the flag as spans arrive: the second send of an email,
// in a later request, makes the execution a duplicate.
func TestReceiverRecordsDuplicatesAsSpansArrive(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "adk-send-twice.json")
	SortSpans(spans)
	// Send everything but the last send_email attempt first.
	last := -1
	for i := range spans {
		if spans[i].Role() == RoleTool && spans[i].Tool() == "send_email" {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("fixture has no send_email span")
	}
	var first, second []Span
	for i := range spans {
		if i == last {
			second = append(second, spans[i])
		} else {
			first = append(first, spans[i])
		}
	}
	id := "otlp-conv-sess-adk-mail-1"
	for n, batch := range [][]Span{first, second} {
		if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, batch, "receiver"); return err }); err != nil {
			t.Fatal(err)
		}
		x := record(t, db, id)
		if want, says := n == 1, auditSays(t, db, id); x.Duplicates != want || (says == audit.Duplicate) != want || recorded(x) != says {
			t.Errorf("after request %d: record says %q, audit %q; want duplicates=%v", n+1, recorded(x), says, want)
		}
	}
}

// mixedFile writes a JSON Lines file whose executions are audited in all
// the ways an import audits them: conversations of one trace, of traces
// on several lines, a trace cut over two lines, a line sent twice, traces
// with and without duplicates, and the fixtures of real emitters.
func mixedFile(t *testing.T) string {
	t.Helper()
	var lines [][]byte
	marshal := func(td ptrace.Traces) {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	base := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	// span adds one span of trace tr; tool "" makes the agent's root span.
	span := func(ss ptrace.ScopeSpans, tr, k int, conv, tool, args string, failed bool) {
		s := ss.Spans().AppendEmpty()
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("m%015d", tr))
		var sid, root pcommon.SpanID
		copy(sid[:], fmt.Sprintf("%07d%d", tr, k))
		copy(root[:], fmt.Sprintf("%07d0", tr))
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		at := base.Add(time.Duration(tr)*time.Second + time.Duration(k)*10*time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(5 * time.Millisecond)))
		a := s.Attributes()
		if conv != "" {
			a.PutStr("gen_ai.conversation.id", conv)
		}
		if tool == "" {
			s.SetName("invoke_agent mixed")
			a.PutStr("gen_ai.operation.name", "invoke_agent")
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(900 * time.Millisecond)))
			return
		}
		s.SetParentSpanID(root)
		s.SetName("execute_tool " + tool)
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", tool)
		a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%d_%d", tr, k))
		a.PutStr("gen_ai.tool.call.arguments", args)
		if failed {
			s.Status().SetCode(ptrace.StatusCodeError)
			a.PutStr("error.type", "timeout")
		}
	}
	newLine := func() (ptrace.Traces, ptrace.ScopeSpans) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "mixed")
		return td, rs.ScopeSpans().AppendEmpty()
	}
	mail := `{"to":"a@example.com"}`
	// Line 1: one trace with a duplicate, one without, one with a
	// possible duplicate (a timeout, then a success).
	td, ss := newLine()
	for k, tool := range []string{"", "send_email", "send_email", "get_contact"} {
		span(ss, 1, k, "", tool, mail, false)
	}
	for k, tool := range []string{"", "send_email", "charge_card"} {
		span(ss, 2, k, "", tool, mail, false)
	}
	for k, tool := range []string{"", "send_email", "send_email"} {
		span(ss, 3, k, "", tool, mail, k == 1)
	}
	marshal(td)
	// Line 2: the first half of a conversation continued on line 3 (each
	// half alone has no duplicate), and the first spans of a trace whose
	// last one comes on line 4.
	td, ss = newLine()
	span(ss, 4, 0, "conv-split", "", "", false)
	span(ss, 4, 1, "conv-split", "send_email", mail, false)
	span(ss, 4, 2, "conv-split", "send_email", `{"to":"b@example.com"}`, false)
	span(ss, 5, 0, "", "", "", false)
	span(ss, 5, 1, "", "create_ticket", `{"t":1}`, false)
	span(ss, 5, 2, "", "create_ticket", `{"t":2}`, false)
	marshal(td)
	// Line 3: the conversation's second trace sends the same mail again.
	td, ss = newLine()
	span(ss, 6, 0, "conv-split", "", "", false)
	span(ss, 6, 1, "conv-split", "send_email", mail, false)
	span(ss, 6, 2, "conv-split", "send_email", `{"to":"c@example.com"}`, false)
	span(ss, 7, 0, "conv-alone", "", "", false)
	span(ss, 7, 1, "conv-alone", "send_email", mail, false)
	span(ss, 7, 2, "conv-alone", "send_email", `{"to":"b@example.com"}`, false)
	marshal(td)
	// Line 4: the rest of trace 5; line 5: line 1 sent again.
	td, ss = newLine()
	span(ss, 5, 3, "", "create_ticket", `{"t":1}`, false)
	marshal(td)
	lines = append(lines, lines[0])
	// The fixtures, one document a line.
	for _, f := range []string{"adk-send-twice.json", "genai-semconv.json", "openllmetry-ticket.json", "openinference-charge.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fixtures, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			var c bytes.Buffer
			if err := json.Compact(&c, l); err == nil && c.Len() > 0 {
				lines = append(lines, c.Bytes())
			}
		}
	}
	p := filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An import audits an execution from the spans in hand when they are all
// it has, and reads it back otherwise (a conversation or a trace over
// several chunks, an execution imported before): whichever way, and
// whatever the chunks, its record's duplicate flag is what `retrylab
// audit` says of it alone. The file imported twice changes nothing.
func TestDuplicateFlagMatchesTheAuditWhateverTheChunks(t *testing.T) {
	p := mixedFile(t)
	want := map[string]bool{
		"otlp-6d303030303030303030303030303031": true,  // two sends
		"otlp-6d303030303030303030303030303032": false, // two effects, each once
		"otlp-6d303030303030303030303030303033": false, // a timeout, then a send: possible
		"otlp-conv-conv-split":                  true,  // a@ on each of two lines
		"otlp-6d303030303030303030303030303035": true,  // a ticket created on line 1 and on line 3
		"otlp-conv-conv-alone":                  false, // two mails to two people
		"otlp-conv-sess-adk-mail-1":             true,
	}
	// Executions cut across chunks are audited on the spans kept across
	// them, or read back when the import keeps none.
	// Several chunks may go in one commit (merge), as decoding runs ahead.
	for _, c := range []struct{ chunk, merge, kept int }{{1, 1, keptBudget}, {2, 1, keptBudget}, {3, 1, keptBudget},
		{5, 1, keptBudget}, {8, 1, keptBudget}, {chunkSpans, 1, keptBudget}, {1, 1, 0}, {3, 1, 0}, {8, 1, 0},
		{1, 4, keptBudget}, {3, 4, 0}} {
		chunk := c.chunk
		db := openDB(t)
		for round := range 2 {
			res, err := importFrom(db, p, nil, limits{chunkSpans: chunk, mergeChunks: c.merge, keptBytes: c.kept})
			if err != nil {
				t.Fatalf("chunks of %d, import %d: %v", chunk, round+1, err)
			}
			if round == 1 && res.Spans != 0 {
				t.Errorf("chunks of %d: the second import stored %d spans", chunk, res.Spans)
			}
			if res.readBacks > len(res.Executions) {
				t.Errorf("chunks of %d, import %d: %d executions read back to audit, of %d", chunk, round+1, res.readBacks, len(res.Executions))
			}
			xs := executions(t, db)
			if len(xs) < len(want) {
				t.Fatalf("chunks of %d: %d executions", chunk, len(xs))
			}
			for _, x := range xs {
				if says := auditSays(t, db, x.ID); recorded(x) != says {
					t.Errorf("chunks of %d, import %d: %s says %q, the audit %q", chunk, round+1, x.ID, recorded(x), says)
				}
				if w, ok := want[x.ID]; ok && x.Duplicates != w {
					t.Errorf("chunks of %d: %s says duplicates=%v, want %v", chunk, x.ID, x.Duplicates, w)
				}
			}
		}
	}
}

// A span sent again is recognised even in a database that does not map its
// trace to an execution (the look-up skipped for traces it has never seen
// must not skip these).
func TestResentSpanFoundWithoutTraceMapping(t *testing.T) {
	db := openDB(t)
	p := filepath.Join(fixtures, "adk-send-twice.json")
	first, err := ImportFile(db, p)
	if err != nil || first.Spans == 0 {
		t.Fatalf("%+v %v", first.Stats, err)
	}
	if err := db.Update(func(tx *store.Tx) error {
		var keys [][]byte
		if err := tx.Scan(BucketTraces, nil, false, func(k, _ []byte) bool { keys = append(keys, k); return true }); err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(BucketTraces, k); err != nil {
				return err
			}
		}
		if len(keys) == 0 {
			t.Fatal("no trace mapped")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err := ImportFile(db, p)
	if err != nil || again.Spans != 0 || again.Repeated != first.Spans {
		t.Fatalf("imported again: %+v, %v; want all %d spans repeated", again.Stats, err, first.Spans)
	}
}

// A trace that grows over several requests, as a live exporter sends it:
// its first spans are indexed as a run, later ones one by one; all of it
// reads back, and a request sent again finds every span already there.
func TestTraceGrowingOverRequests(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "adk-send-twice.json")
	SortSpans(spans)
	if len(spans) < 3 {
		t.Fatalf("%d spans", len(spans))
	}
	save := func(batch []Span) Stats {
		t.Helper()
		var st Stats
		if err := db.Update(func(tx *store.Tx) error { var err error; st, err = Save(tx, batch, "receiver"); return err }); err != nil {
			t.Fatal(err)
		}
		return st
	}
	for i, batch := range [][]Span{spans[:2], spans[2:3], spans[3:]} {
		if st := save(batch); st.Spans != len(batch) || st.Repeated != 0 {
			t.Fatalf("request %d: %+v", i+1, st)
		}
	}
	if st := save(spans); st.Spans != 0 || st.Repeated != len(spans) {
		t.Fatalf("everything sent again: %+v", st)
	}
	runs, single := 0, 0
	db.View(func(tx *store.Tx) error {
		return tx.Scan(BucketIndex, nil, false, func(_, v []byte) bool {
			if _, _, n := decodeIndex(v); len(v) == 20 {
				runs += n
			} else {
				single++
			}
			return true
		})
	})
	if runs != 2 || single != len(spans)-2 {
		t.Errorf("indexed %d spans in runs and %d one by one, want 2 and %d", runs, single, len(spans)-2)
	}
	got, err := LoadSpans(db, "otlp-conv-sess-adk-mail-1")
	if err != nil || len(got) != len(spans) {
		t.Fatalf("read back %d of %d spans: %v", len(got), len(spans), err)
	}
}

// One long trace (a call retried thousands of times) whose spans come in
// many chunks is audited once, when all of it is in: not after every
// chunk, which made importing it quadratic. And its flag is the audit's.
func TestLongTraceAuditedOnce(t *testing.T) {
	t.Parallel()
	const n = 3000
	var lines [][]byte
	for i := 0; i < n; i += 512 {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(longTraceBatchOf(i, min(512, n-i)))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	p := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// Chunks of 2n hold the whole file: its audit runs on the spans in
	// hand. In smaller chunks it runs on the spans kept across them, or,
	// when they are more than the import keeps, on its spans read back.
	for _, c := range []struct{ chunk, kept, readBacks int }{{64, keptBudget, 0}, {512, keptBudget, 0}, {2 * n, keptBudget, 0},
		{64, 64 << 10, 1}, {512, 1, 1}} {
		db := openDB(t)
		res, err := importFrom(db, p, nil, limits{chunkSpans: c.chunk, keptBytes: c.kept})
		if err != nil || res.Spans != n {
			t.Fatalf("chunks of %d: %d spans, %v", c.chunk, res.Spans, err)
		}
		if res.audits != 1 || res.readBacks != c.readBacks {
			t.Errorf("chunks of %d, %d bytes kept: %d audits, %d read back; want 1 and %d", c.chunk, c.kept, res.audits, res.readBacks, c.readBacks)
		}
		x := record(t, db, "otlp-conv-conv-long")
		if says := auditSays(t, db, x.ID); recorded(x) != audit.Duplicate || says != audit.Duplicate {
			t.Errorf("chunks of %d: record says %q, the audit %q; want both duplicate", c.chunk, recorded(x), says)
		}
		again, err := importFile(db, p, c.chunk)
		if err != nil || again.Spans != 0 || again.Repeated != n || again.audits != 0 {
			t.Errorf("chunks of %d, again: %+v, %d audits, %v", c.chunk, again.Stats, again.audits, err)
		}
	}
}

// retrylab's own export (its runs and attempts numbered, its crashes and
// effects recorded): an execution the write holds whole is audited on its
// spans in hand, not read back at the end, and its record says what
// `retrylab audit` says of it, whatever the chunks.
func TestOwnExportAuditedInHand(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "own.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	writeOwnExport(t, f, 60, 5)
	f.Close()
	for _, chunk := range []int{7, 64, chunkSpans} {
		db := openDB(t)
		res, err := importFrom(db, p, nil, limits{chunkSpans: chunk, mergeChunks: 1, keptBytes: keptBudget})
		if err != nil {
			t.Fatalf("chunks of %d: %v", chunk, err)
		}
		if chunk == chunkSpans && (res.readBacks != 0 || res.audits == 0) {
			t.Errorf("one chunk: %d audits, %d read back; want all in hand", res.audits, res.readBacks)
		}
		dups := recordsAsAudited(t, db, fmt.Sprintf("chunks of %d", chunk))
		if dups == 0 || dups == len(res.Executions) {
			t.Errorf("chunks of %d: %d of %d executions with a duplicate: the file tests nothing", chunk, dups, len(res.Executions))
		}
	}
}

// The OpenTelemetry analogue of a Temporal activity whose retry is still
// running: send_email timed out, and its repeat's span says it has no
// answer yet (retrylab.outcome "none", its worker not dead; OpenTelemetry
// exports only ended spans, so that attribute is how a trace says it). The
// record (the fast path), the audit and its words agree: possible, the
// repeat in flight.
func TestInFlightRepeatIsPossible(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "adk-send-twice.json")
	var sends []int
	for i := range spans {
		if spans[i].Role() == RoleTool && spans[i].Tool() == "send_email" {
			sends = append(sends, i)
		}
	}
	if len(sends) != 2 {
		t.Fatalf("fixture has %d send_email spans, want 2", len(sends))
	}
	first, second := &spans[sends[0]], &spans[sends[1]]
	first.Status, first.Message = "error", "TimeoutError: response lost"
	first.Attrs.Set("error.type", "TimeoutError")
	second.Attrs.Set("retrylab.outcome", "none")
	if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, spans, "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
	const id = "otlp-conv-sess-adk-mail-1"
	if got := recorded(record(t, db, id)); got != audit.Possible {
		t.Errorf("record says %q, want possible", got)
	}
	loaded, err := LoadSpans(db, id)
	if err != nil {
		t.Fatal(err)
	}
	rep := audit.Run([]*trace.Trace{trace.Fold(id, Events(loaded))}, audit.Options{Effects: []string{"send_*"}})
	const why = "an attempt with an unknown outcome was followed by another; the repeat is in flight"
	if len(rep.Findings) != 1 || rep.Findings[0].Grade != audit.Possible || rep.Findings[0].Why != why {
		t.Fatalf("findings %+v, want one possible: %q", rep.Findings, why)
	}
	if ev := rep.Findings[0].Attempts; len(ev) != 2 || ev[1].Outcome != "in flight" {
		t.Errorf("evidence %+v, want the timeout and the repeat in flight", ev)
	}
}
