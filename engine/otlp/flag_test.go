package otlp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// randomExecution builds the spans of one execution as agents emit them,
// drawn from r: one to three traces (a conversation when more than one),
// each an agent's root span, sometimes a nested agent and a model call,
// and tool calls under them. The draws make what the duplicate flag must
// get right: sends, charges and reads; retries under the same tool-call
// id and with new ones (or none, grouped by parent, tool and arguments);
// one id shared by a read and a send; arguments spaced and ordered
// otherwise, plain text, none; successes, errors, HTTP statuses, timeouts
// and cancellations (status, error.type, exception events); idempotency
// keys shared or not, in both attributes; deduplicated answers; replays;
// start times that tie; and, rarely, what only retrylab's own export
// says (attempt numbers, runs, crashed workers, recorded effects) and span
// ids used in two traces. n numbers the execution; its ids are unique.
func randomExecution(r *rand.Rand, n int) ptrace.Traces { return randomExecutionOf(r, n, 150) }

// randomExecutionOf is randomExecution with the rare draws (what only
// retrylab's own export says, span ids used in two traces) each one in
// oneIn.
func randomExecutionOf(r *rand.Rand, n, oneIn int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "random-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	base := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	traces := 1 + r.Intn(3)
	if r.Intn(2) == 0 {
		traces = 1
	}
	conv := ""
	if traces > 1 || r.Intn(3) == 0 {
		conv = fmt.Sprintf("conv-%d", n)
	}
	rare := func() bool { return r.Intn(oneIn) == 0 }
	for tr := range traces {
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("x%07d%08d", n, tr))
		sid := func(k int) pcommon.SpanID {
			var id pcommon.SpanID
			t := tr
			if rare() {
				t = 0 // the same span id in two traces of the conversation
			}
			copy(id[:], fmt.Sprintf("%04d%04d", t, k))
			return id
		}
		at := func() time.Time {
			return base.Add(time.Duration(tr)*time.Second + time.Duration(r.Intn(40))*time.Millisecond)
		}
		newSpan := func(id, parent pcommon.SpanID, name string, start time.Time) (ptrace.Span, pcommon.Map) {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(tid)
			s.SetSpanID(id)
			if !parent.IsEmpty() {
				s.SetParentSpanID(parent)
			}
			s.SetName(name)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(r.Intn(3)) * time.Millisecond)))
			a := s.Attributes()
			if conv != "" {
				a.PutStr("gen_ai.conversation.id", conv)
			}
			return s, a
		}
		k := 0
		next := func() pcommon.SpanID { k++; return sid(k) }
		root := next()
		rootStart := base.Add(time.Duration(tr) * time.Second)
		s, a := newSpan(root, pcommon.SpanID{}, "invoke_agent planner", rootStart)
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(rootStart.Add(time.Second)))
		a.PutStr("gen_ai.operation.name", "invoke_agent")
		switch {
		case rare():
			a.PutStr("retrylab.run", fmt.Sprint(1+r.Intn(2)))
		case rare():
			a.PutStr("retrylab.run.crashed", "true")
		case r.Intn(10) == 0:
			// A root that is itself a tool call.
			a.PutStr("gen_ai.operation.name", "execute_tool")
			a.PutStr("gen_ai.tool.name", pick("send_email", "get_contact"))
			a.PutStr("gen_ai.tool.call.arguments", `{"to":"a"}`)
		}
		parents := []pcommon.SpanID{root}
		if r.Intn(3) == 0 {
			// A nested agent, whose calls have it as their parent.
			id := next()
			_, a := newSpan(id, root, "invoke_agent helper", at())
			a.PutStr("gen_ai.operation.name", "invoke_agent")
			parents = append(parents, id)
		}
		if r.Intn(2) == 0 {
			_, a := newSpan(next(), root, "chat gpt-4o", at())
			a.PutStr("gen_ai.operation.name", "chat")
		}
		for range r.Intn(7) {
			tool := pick("send_email", "send_email", "charge_card", "get_contact", "search_docs", "create_ticket")
			s, a := newSpan(next(), parents[r.Intn(len(parents))], "execute_tool "+tool, at())
			if r.Intn(6) == 0 {
				// OpenInference's names.
				a.PutStr("openinference.span.kind", "TOOL")
				a.PutStr("tool.name", tool)
				if r.Intn(2) == 0 {
					a.PutStr("input.value", pick(`{"to":"a"}`, `{"to": "b"}`))
				}
			} else {
				a.PutStr("gen_ai.operation.name", "execute_tool")
				a.PutStr("gen_ai.tool.name", tool)
				switch args := pick(`{"to":"a"}`, `{ "to" : "a" }`, `{"to":"b"}`, `{"a":1,"b":[2,3]}`, `{"b":[2,3],"a":1}`, "plain text", ""); args {
				case "":
				default:
					a.PutStr("gen_ai.tool.call.arguments", args)
				}
			}
			if cid := pick("", "", "c1", "c1", "c2", "c3", "<not specified>"); cid != "" {
				a.PutStr("gen_ai.tool.call.id", cid)
			}
			switch r.Intn(16) {
			case 0, 1:
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage("boom")
			case 2:
				s.Status().SetCode(ptrace.StatusCodeError)
				a.PutStr("error.type", "timeout")
			case 3:
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage("request cancelled")
			case 4:
				a.PutInt("http.response.status_code", int64(pick2(r, 409, 422, 500, 200)))
			case 5:
				e := s.Events().AppendEmpty()
				e.SetName("exception")
				e.Attributes().PutStr("exception.type", pick("TimeoutError", "ValueError"))
			case 6:
				a.PutStr("retrylab.deduplicated", "true")
			case 7:
				if r.Intn(4) == 0 {
					a.PutStr("retrylab.outcome", pick("none", "ok", "timeout"))
				}
			default:
				a.PutStr("gen_ai.tool.call.result", `{"ok":true}`)
			}
			switch r.Intn(5) {
			case 0:
				a.PutStr("retrylab.idempotency_key", pick("k1", "k2"))
			case 1:
				a.PutEmptySlice("http.request.header.idempotency-key").AppendEmpty().SetStr(pick("k1", "k2"))
			}
			switch {
			case rare():
				a.PutStr("retrylab.replay", "true")
			case rare():
				a.PutStr("retrylab.attempt", fmt.Sprint(1+r.Intn(3)))
			case rare():
				a.PutStr("retrylab.effects", `[{"service":"mail","target":"a","summary":"hi"}]`)
			}
		}
	}
	return td
}

func pick2(r *rand.Rand, xs ...int) int { return xs[r.Intn(len(xs))] }

// auditOf is `retrylab audit`'s verdict on one execution's spans alone:
// translated, folded, audited with the default effects.
func auditOf(exec string, spans []Span) audit.Grade {
	return audit.Verdict(trace.Fold(exec, Events(spans)))
}

// The duplicate flag's fast path, on many generated executions, says what
// the full audit says whenever it is sure, and hasDuplicate (the fast path
// or, when it is not sure, the fold) always does; given only the spans the
// fast path reads (flagReads, what an import keeps in hand) it answers the
// same. The fast path must be sure of most of them, and both answers must
// come up often, or the test compares nothing.
func TestQuickFlagMatchesTheAudit(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(20261201))
	scratch := newFlagScratch()
	sure, dups, unsure, possible := 0, 0, 0, 0
	const n = 4000
	for i := range n {
		spans, err := Spans(randomExecution(r, i))
		if err != nil {
			t.Fatal(err)
		}
		exec := fmt.Sprintf("x%d", i)
		want := auditOf(exec, spans)
		v, ok := scratch.verdict(append([]Span(nil), spans...))
		if ok {
			sure++
			if v != want {
				t.Fatalf("execution %d: the fast path says %q, the audit %q; spans:\n%s", i, v, want, describe(spans))
			}
			if v == audit.Duplicate {
				dups++
			}
		} else {
			unsure++
		}
		if want == audit.Possible {
			possible++
		}
		if w, o := scratch.verdict(flagRead(spans)); w != v || o != ok {
			t.Fatalf("execution %d: on the spans it reads the fast path says %q (sure %v), on all %q (sure %v)", i, w, o, v, ok)
		}
		if got := verdictOn(exec, append([]Span(nil), spans...), scratch); got != want {
			t.Fatalf("execution %d: verdictOn says %q, the audit %q", i, got, want)
		}
	}
	t.Logf("%d executions: the fast path sure of %d (%d with a duplicate), not of %d; %d possible", n, sure, dups, unsure, possible)
	if sure < n/2 || dups < n/10 || sure-dups < n/10 || unsure < n/100 || possible < n/100 {
		t.Fatalf("%d executions: sure of %d (%d duplicates), unsure of %d, %d possible: the draws do not cover both paths and every answer", n, sure, dups, unsure, possible)
	}
}

// The same with retrylab's own attributes drawn often, among the usual
// agent's: runs numbered in some traces and not others, or alike; attempt
// numbers on some attempts of a call; crashes; effects on answers of any
// kind. Whenever the fast path is sure, it says what the full audit says,
// and it is sure of executions that carry them, with a duplicate and
// without.
func TestQuickFlagMatchesTheAuditWithOwnAttributes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(20261202))
	scratch := newFlagScratch()
	own, ownDups, unsure := 0, 0, 0
	const n = 3000
	for i := range n {
		spans, err := Spans(randomExecutionOf(r, i, 6))
		if err != nil {
			t.Fatal(err)
		}
		exec := fmt.Sprintf("x%d", i)
		want := auditOf(exec, spans)
		v, ok := scratch.verdict(append([]Span(nil), spans...))
		if !ok {
			unsure++
			continue
		}
		if v != want {
			t.Fatalf("execution %d: the fast path says %q, the audit %q; spans:\n%s", i, v, want, describe(spans))
		}
		dup := v == audit.Duplicate
		for _, s := range spans {
			run := s.Attrs.Has("retrylab.run")
			attempt := s.Attrs.Has("retrylab.attempt")
			if run || attempt || s.Attrs.Get("retrylab.run.crashed") != "" || s.Attrs.Get("retrylab.effects") != "" {
				own++
				if dup {
					ownDups++
				}
				break
			}
		}
	}
	t.Logf("%d executions: the fast path sure of %d with own attributes (%d with a duplicate), not sure of %d", n, own, ownDups, unsure)
	if own < n/4 || ownDups < n/50 || own-ownDups < n/50 || unsure < n/50 {
		t.Fatalf("sure of %d with own attributes (%d duplicates), unsure of %d: the draws do not cover both answers", own, ownDups, unsure)
	}
}

func describe(spans []Span) string {
	var b bytes.Buffer
	SortSpans(spans)
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s/%s parent=%s %q start=%d end=%d status=%s %q attrs=%v\n", s.TraceID, s.SpanID, s.ParentID, s.Name,
			s.Start, s.End, s.Status, s.Message, s.Attrs)
	}
	return b.String()
}

// Imported in chunks of any size, generated executions (one a line, or a
// conversation's traces over several lines) get on their records the
// duplicate flag `retrylab audit` gives each alone: whether the import
// graded them from the spans in hand, without the fold, or read them back.
func TestImportedFlagMatchesTheAuditOnGeneratedTraces(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	var lines [][]byte
	for i := range 400 {
		td := randomExecution(r, i)
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
		if i%7 == 0 {
			// A line of the execution's spans again: nothing changes.
			lines = append(lines, b)
		}
	}
	p := filepath.Join(t.TempDir(), "random.jsonl")
	if err := os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{3, 64, chunkSpans} {
		db := openDB(t)
		res, err := importFile(db, p, chunk)
		if err != nil {
			t.Fatalf("chunks of %d: %v", chunk, err)
		}
		if res.audits == 0 || (chunk == chunkSpans && res.audits == res.readBacks) {
			t.Errorf("chunks of %d: %d audits, %d read back: none in hand", chunk, res.audits, res.readBacks)
		}
		if dups := recordsAsAudited(t, db, fmt.Sprintf("chunks of %d", chunk)); dups < 20 {
			t.Errorf("chunks of %d: only %d executions with a duplicate", chunk, dups)
		}
	}
}

// The same generated executions, their spans sent over several requests
// as a live exporter sends them (the receiver's Save) and, apart, imported
// as two files of which the second adds to executions of the first: after
// each request and each file, every record's duplicate flag is what the
// audit says of its execution then, a span that arrives later making or
// unmaking a duplicate.
func TestFlagMatchesTheAuditAsSpansArrive(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(99))
	recv := openDB(t)
	var first, second [][]byte
	for i := range 300 {
		spans, err := Spans(randomExecution(r, i))
		if err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(spans), func(a, b int) { spans[a], spans[b] = spans[b], spans[a] })
		cut := r.Intn(len(spans) + 1)
		for _, batch := range [][]Span{spans[:cut], spans[cut:]} {
			if len(batch) == 0 {
				continue
			}
			var st Stats
			if err := recv.Update(func(tx *store.Tx) error { st, err = Save(tx, batch, "receiver"); return err }); err != nil {
				t.Fatalf("execution %d: %v", i, err)
			}
			for _, x := range st.Executions {
				if rec, says := record(t, recv, x), auditSays(t, recv, x); recorded(rec) != says {
					t.Fatalf("execution %d, after a request of %d spans: %s says %q, the audit %q", i, len(batch), x, recorded(rec), says)
				}
			}
		}
		for k, part := range [][]Span{spans[:cut], spans[cut:]} {
			if len(part) == 0 {
				continue
			}
			b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(tracesOf(part))
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				first = append(first, b)
			} else {
				second = append(second, b)
			}
		}
	}
	db := openDB(t)
	for k, lines := range [][][]byte{first, second} {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("part%d.jsonl", k))
		if err := os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := importFile(db, p, 64); err != nil {
			t.Fatalf("file %d: %v", k+1, err)
		}
		recordsAsAudited(t, db, fmt.Sprintf("after file %d", k+1))
	}
}

// tracesOf is spans as OTLP data again (what a span keeps of it).
func tracesOf(spans []Span) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "random-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	for _, s := range spans {
		p := ss.Spans().AppendEmpty()
		var tid pcommon.TraceID
		var sid, parent pcommon.SpanID
		hex.Decode(tid[:], []byte(s.TraceID))
		hex.Decode(sid[:], []byte(s.SpanID))
		p.SetTraceID(tid)
		p.SetSpanID(sid)
		if s.ParentID != "" {
			hex.Decode(parent[:], []byte(s.ParentID))
			p.SetParentSpanID(parent)
		}
		p.SetName(s.Name)
		p.SetStartTimestamp(pcommon.Timestamp(s.Start))
		p.SetEndTimestamp(pcommon.Timestamp(s.End))
		switch s.Status {
		case "ok":
			p.Status().SetCode(ptrace.StatusCodeOk)
		case "error":
			p.Status().SetCode(ptrace.StatusCodeError)
		}
		p.Status().SetMessage(s.Message)
		for _, a := range s.Attrs {
			p.Attributes().PutStr(a.Key, a.Value)
		}
		for _, e := range s.Events {
			pe := p.Events().AppendEmpty()
			pe.SetName(e.Name)
			pe.SetTimestamp(pcommon.Timestamp(e.Time))
			for _, a := range e.Attrs {
				pe.Attributes().PutStr(a.Key, a.Value)
			}
		}
	}
	return td
}

// ownExecutions are the executions of what `retrylab export --otlp`
// writes of a `gen` database made with opts: each one's spans, by
// execution id (the runs' shared conversation).
func ownExecutions(t *testing.T, opts gen.Options) map[string][]Span {
	t.Helper()
	var b bytes.Buffer
	writeOwnExportOf(t, &b, opts)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	spans, err := Spans(td)
	if err != nil {
		t.Fatal(err)
	}
	execOf := map[string]string{}
	for i := range spans {
		if c := spans[i].Conversation(); c != "" {
			execOf[spans[i].TraceID] = c
		}
	}
	out := map[string][]Span{}
	for _, s := range spans {
		x, ok := execOf[s.TraceID]
		if !ok {
			t.Fatalf("trace %s has no conversation", s.TraceID)
		}
		out[x] = append(out[x], s)
	}
	return out
}

// ownVariants are spans of an own export as given and changed in ways
// the fast path must read as the fold does: runs not numbered, or
// numbered alike; attempts not numbered (grouped by signature, numbered by
// place), or numbered alike (one after the other, or all at once); calls without ids and arguments (each
// attempt its own call); workers that did not die, or died mid-run, or in
// every run, with attempts that acted left without an answer; every
// attempt without an answer; effects on every timeout; answers
// deduplicated; spans shuffled.
func ownVariants(r *rand.Rand, spans []Span) map[string][]Span {
	edit := func(fn func(s *Span)) []Span {
		out := make([]Span, len(spans))
		for i, s := range spans {
			s.Attrs = slices.Clone(s.Attrs)
			fn(&s)
			out[i] = s
		}
		return out
	}
	fx := `[{"service":"mail","target":"a","summary":"hi"}]`
	v := map[string][]Span{
		"as exported":         spans,
		"runs not numbered":   edit(func(s *Span) { s.Attrs.Delete("retrylab.run") }),
		"attempts unnumbered": edit(func(s *Span) { s.Attrs.Delete("retrylab.attempt") }),
		"attempts numbered 1": edit(func(s *Span) {
			if s.Attrs.Has("retrylab.attempt") {
				s.Attrs.Set("retrylab.attempt", "1")
			}
		}),
		"no crash": edit(func(s *Span) { s.Attrs.Delete("retrylab.run.crashed") }),
		"no answers": edit(func(s *Span) {
			if s.Attrs.Get("retrylab.effects") != "" || r.Intn(3) == 0 {
				s.Attrs.Set("retrylab.outcome", "none")
			}
		}),
		"timeouts acted": edit(func(s *Span) {
			if s.Attrs.Get("retrylab.outcome") == "timeout" || s.Attrs.Get("retrylab.outcome") == "none" {
				s.Attrs.Set("retrylab.effects", fx)
			}
		}),
		"deduplicated": edit(func(s *Span) {
			if s.Role() == RoleTool && r.Intn(3) == 0 {
				s.Attrs.Set("retrylab.deduplicated", "true")
			}
		}),
		"no ids, no arguments": edit(func(s *Span) {
			s.Attrs.Delete("gen_ai.tool.call.id")
			s.Attrs.Delete("gen_ai.tool.call.arguments")
		}),
		"killed mid-run": edit(func(s *Span) {
			if s.ParentID == "" && s.Attrs.Get("retrylab.run.crashed") == "true" {
				s.End = s.Start + (s.End-s.Start)/2
			}
			if s.Attrs.Get("retrylab.effects") != "" {
				s.Attrs.Set("retrylab.outcome", "none")
			}
		}),
		"every run killed": edit(func(s *Span) {
			if s.ParentID == "" {
				s.Attrs.Set("retrylab.run.crashed", "true")
				s.End = s.Start + (s.End-s.Start)/2
			}
			if s.Attrs.Get("retrylab.effects") != "" {
				s.Attrs.Set("retrylab.outcome", "none")
			}
		}),
		"one run one number": edit(func(s *Span) {
			if s.Attrs.Has("retrylab.run") {
				s.Attrs.Set("retrylab.run", "1")
			}
		}),
	}
	first := map[string]int64{} // each trace's first start
	for _, s := range spans {
		if at, ok := first[s.TraceID]; !ok || s.Start < at {
			first[s.TraceID] = s.Start
		}
	}
	v["numbered 1, at once"] = edit(func(s *Span) {
		if s.Attrs.Has("retrylab.attempt") {
			s.Attrs.Set("retrylab.attempt", "1")
			s.Start = first[s.TraceID]
		}
	})
	shuffled := append([]Span(nil), spans...)
	r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
	v["shuffled"] = shuffled
	return v
}

// On retrylab's own exports of generated databases (several seeds and
// retry budgets: crashes and resumes, replays, several runs, recorded
// effects), and on variants of them, the duplicate flag's fast path says
// what the full audit says whenever it is sure, on all the spans and on
// those it reads; and it is sure of every execution as exported, so an
// import of an own export never folds.
func TestQuickFlagMatchesTheAuditOnOwnExports(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(8))
	scratch := newFlagScratch()
	execs, dups, possible, sure, crashed, acted := 0, 0, 0, map[string]int{}, 0, 0
	for _, opts := range []gen.Options{
		{Executions: 120, AttemptsPerStep: 1, Seed: 1},
		{Executions: 120, AttemptsPerStep: 2, Seed: 2},
		{Executions: 120, AttemptsPerStep: 3, Seed: 21},
		{Executions: 80, AttemptsPerStep: 5, Seed: 4},
	} {
		own := ownExecutions(t, opts)
		ids := slices.Sorted(maps.Keys(own))
		for _, id := range ids {
			execs++
			for _, s := range own[id] {
				if s.Attrs.Get("retrylab.run.crashed") == "true" {
					crashed++
					break
				}
			}
			for _, s := range own[id] {
				if s.Attrs.Get("retrylab.effects") != "" {
					acted++
					break
				}
			}
			variants := ownVariants(r, own[id])
			for _, name := range slices.Sorted(maps.Keys(variants)) {
				spans := variants[name]
				want := auditOf(id, spans)
				v, ok := scratch.verdict(append([]Span(nil), spans...))
				if ok && v != want {
					t.Fatalf("%s (seed %d), %s: the fast path says %q, the audit %q; spans:\n%s",
						id, opts.Seed, name, v, want, describe(append([]Span(nil), spans...)))
				}
				if ok {
					sure[name]++
				}
				if name == "as exported" {
					if !ok {
						t.Errorf("%s (seed %d): the fast path is not sure of an own export; spans:\n%s", id, opts.Seed, describe(spans))
					}
					switch want {
					case audit.Duplicate:
						dups++
					case audit.Possible:
						possible++
					}
				}
				if w, o := scratch.verdict(flagRead(spans)); w != v || o != ok {
					t.Fatalf("%s, %s: on the spans it reads the fast path says %q (sure %v), on all %q (sure %v)", id, name, w, o, v, ok)
				}
				if got := verdictOn(id, append([]Span(nil), spans...), scratch); got != want {
					t.Fatalf("%s, %s: verdictOn says %q, the audit %q", id, name, got, want)
				}
			}
		}
	}
	t.Logf("%d executions, %d with a duplicate, %d possible, %d crashed, %d with effects; sure of, by variant: %v", execs, dups, possible, crashed, acted, sure)
	if dups == 0 || dups == execs || crashed == 0 || acted == 0 {
		t.Fatalf("%d executions: %d with a duplicate, %d crashed, %d with effects: the exports test nothing", execs, dups, crashed, acted)
	}
}

// flagRead is the spans of spans the fast path reads (flagReads).
func flagRead(spans []Span) []Span {
	var read []Span
	for j := range spans {
		if flagReads(&spans[j], spans[j].Role()) {
			read = append(read, spans[j])
		}
	}
	return read
}
