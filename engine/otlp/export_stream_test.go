package otlp

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// exportBoth writes the OTLP/JSON document of one history streamed (as
// export does) and from the whole fold (Export marshalled by pdata).
func exportBoth(t *testing.T, id string, evs []history.Event) (streamed, whole []byte) {
	t.Helper()
	var buf bytes.Buffer
	jw := NewJSONWriter(&buf, "v9")
	err := jw.History(id, func(fn func(history.Event) error) error {
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	td := Export([]*trace.Trace{history.Fold(id, evs)}, "v9")
	whole, err = (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if jw.Spans() != td.SpanCount() {
		t.Errorf("%d spans streamed, %d in the whole export", jw.Spans(), td.SpanCount())
	}
	checkSpanOrder(t, buf.Bytes())
	return buf.Bytes(), whole
}

// checkSpanOrder reads a document with pdata's unmarshaler and requires
// each span to come after the spans inside it (its children first, each
// run's root span after every other span of its trace), every parent to
// be in the document, and no span id twice.
func checkSpanOrder(t *testing.T, doc []byte) {
	t.Helper()
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
	if err != nil {
		t.Fatalf("pdata does not read the document: %v", err)
	}
	type key struct {
		trace pcommon.TraceID
		span  pcommon.SpanID
	}
	at := map[key]int{}
	var spans []ptrace.Span
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j).Spans()
			for k := range ss.Len() {
				s := ss.At(k)
				if _, dup := at[key{s.TraceID(), s.SpanID()}]; dup {
					t.Fatalf("span %s twice", s.SpanID())
				}
				at[key{s.TraceID(), s.SpanID()}] = len(spans)
				spans = append(spans, s)
			}
		}
	}
	rootAt := map[pcommon.TraceID]int{}
	for i, s := range spans {
		if s.ParentSpanID().IsEmpty() {
			rootAt[s.TraceID()] = i
			continue
		}
		p, ok := at[key{s.TraceID(), s.ParentSpanID()}]
		switch {
		case !ok:
			t.Errorf("span %d (%s) has no parent %s in the document", i, s.Name(), s.ParentSpanID())
		case p < i:
			t.Errorf("span %d (%s) comes after its parent, span %d (%s)", i, s.Name(), p, spans[p].Name())
		}
	}
	for i, s := range spans {
		if r, ok := rootAt[s.TraceID()]; !ok || r < i {
			t.Errorf("span %d (%s) comes after its run's root span (or its run has none)", i, s.Name())
		}
	}
}

// The streamed export is the whole fold's Export, byte for byte (both
// write each span after the spans inside it), for every prefix
// of a history where events interleave: concurrent copies of a call whose
// answers and retries come after the other copy's next attempt began, two
// calls in flight, an effect, a journal record, a crash with attempts
// open, a second run with a replay, a record that comes before the retry
// of a concurrent copy, and the end.
func TestExportStreamsAsTheWholeFold(t *testing.T) {
	evs, _, _ := tracetest.Interleaved()
	for n := 1; n <= len(evs); n++ { // every prefix: a history read while it grows
		streamed, whole := exportBoth(t, "exec_M", evs[:n])
		if !bytes.Equal(streamed, whole) {
			t.Fatalf("after %d events the streamed export differs:\n%s\n--- whole fold:\n%s", n, streamed, whole)
		}
	}
}

// An execution with no events has nothing to export; a document with no
// span is the envelope alone, as pdata writes it.
func TestExportStreamEmpty(t *testing.T) {
	var buf bytes.Buffer
	jw := NewJSONWriter(&buf, "v9")
	if err := jw.History("exec_E", func(func(history.Event) error) error { return nil }); err != ErrNoEvents {
		t.Fatalf("History of nothing: %v, want ErrNoEvents", err)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	want, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(Export(nil, "v9"))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("empty document %s, want %s", buf.Bytes(), want)
	}
}

// Generated executions (crashes, concurrent copies, journals, escalations,
// seeded) stream as their whole folds' Export, byte for byte.
func TestExportStreamsGeneratedExecutions(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "g.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := gen.Generate(context.Background(), db, gen.Options{Executions: 150, AttemptsPerStep: 4, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, _ []byte) bool { ids = append(ids, id); return true })
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		var evs []history.Event
		if err := db.View(func(tx *store.Tx) error {
			return tx.Events(id, 0, func(_ uint64, data []byte) bool {
				ev, err := history.Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
				return true
			})
		}); err != nil {
			t.Fatal(err)
		}
		if streamed, whole := exportBoth(t, id, evs); !bytes.Equal(streamed, whole) {
			t.Fatalf("%s: the streamed export differs:\n%s\n--- whole fold:\n%s", id, streamed, whole)
		}
	}
}

// History writes each span as soon as it is final, not at the end of the
// history: an attempt once the next began, a turn (after its calls) once
// the next turn began; what only the end tells (the last turn, whose end
// is its run's, and the run's root span) comes last.
func TestExportWritesEachSpanWhenFinal(t *testing.T) {
	t0 := time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)
	var evs []history.Event
	add := func(e history.Event) {
		e.Seq, e.Time, e.Run = uint64(len(evs)+1), t0.Add(time.Duration(len(evs))*time.Second), 1
		evs = append(evs, e)
	}
	req := &history.Exchange{Method: "POST", URL: "/v1/send"}
	add(history.Event{Type: history.ExecutionStarted, Scenario: "two", Text: "keys"})
	add(history.Event{Type: history.WorkerStarted, PID: 7})
	add(history.Event{Type: history.TurnStarted, Turn: 1, Text: "first"})
	add(history.Event{Type: history.ToolCallScheduled, Step: "s1", Tool: "send", Turn: 1})
	for n := 1; n <= 3; n++ {
		add(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: n, Request: req, Key: "k1"})
		if n < 3 {
			add(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: n, Outcome: history.OutcomeError})
			add(history.Event{Type: history.RetryScheduled, Step: "s1", Attempt: n, Delay: time.Second})
		}
	}
	add(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: 3, Outcome: history.OutcomeOK})
	add(history.Event{Type: history.StepRecorded, Step: "s1", Tool: "send", Attempt: 3, Result: []byte(`{"id":"m1"}`)})
	add(history.Event{Type: history.TurnStarted, Turn: 2, Text: "second"})
	add(history.Event{Type: history.ToolCallScheduled, Step: "s2", Tool: "send", Turn: 2})
	add(history.Event{Type: history.AttemptStarted, Step: "s2", Attempt: 1, Request: req, Key: "k2"})
	add(history.Event{Type: history.AttemptFinished, Step: "s2", Attempt: 1, Outcome: history.OutcomeOK})
	add(history.Event{Type: history.StepRecorded, Step: "s2", Tool: "send", Attempt: 1})
	add(history.Event{Type: history.ExecutionCompleted})

	var buf bytes.Buffer
	jw := NewJSONWriter(&buf, "v9")
	written := map[string]int{} // spans written once an event was read, by "type attempt"
	if err := jw.History("exec_W", func(fn func(history.Event) error) error {
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
			written[fmt.Sprintf("%s %s %d", ev.Type, ev.Step, ev.Attempt)] = jw.Spans()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	for ev, want := range map[string]int{
		"AttemptStarted s1 2":   1, // s1's first attempt
		"AttemptStarted s1 3":   2,
		"StepRecorded s1 3":     2, // the last attempt carries the record: it waits for its call to close
		"AttemptStarted s2 1":   4, // s1's last attempt and turn 1, once turn 2 began
		"ExecutionCompleted  0": 5,
	} {
		if got := written[ev]; got != want {
			t.Errorf("after %s: %d spans written, want %d", ev, got, want)
		}
	}
	if jw.Spans() != 7 {
		t.Fatalf("%d spans in all, want 7", jw.Spans())
	}
	checkSpanOrder(t, buf.Bytes())
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range ss.Len() {
		names = append(names, ss.At(i).Name())
	}
	want := "execute_tool send, execute_tool send, execute_tool send, invoke_agent two, execute_tool send, invoke_agent two, retrylab.run two"
	if got := strings.Join(names, ", "); got != want {
		t.Errorf("spans in the order\n%s\nwant\n%s", got, want)
	}
}
