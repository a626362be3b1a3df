package temporal_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

const (
	run1File = "../../fixtures/temporal/order-run1.cli.json"
	run2File = "../../fixtures/temporal/order-run2.ui.json"
	execID   = "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Errorf("check: %v", err)
		}
		db.Close()
	})
	return db
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dump prints a folded trace as a tree, one node a line: what a reader of
// the timeline sees, without the screen.
func dump(tr *trace.Trace) string {
	var b strings.Builder
	var walk func(ns []trace.Node, depth int)
	walk = func(ns []trace.Node, depth int) {
		for _, n := range ns {
			b.WriteString(strings.Repeat("  ", depth))
			switch n := n.(type) {
			case *trace.Run:
				fmt.Fprintf(&b, "run %d %s", n.Number, n.Mark())
			case *trace.Gap:
				fmt.Fprintf(&b, "gap")
			case *trace.Turn:
				fmt.Fprintf(&b, "turn %d %s", n.Number, n.Text)
			case *trace.Call:
				fmt.Fprintf(&b, "call %s %s %s", n.Call, n.Tool, n.Args)
			case *trace.Attempt:
				fmt.Fprintf(&b, "%s #%d %s", n.Mark(), n.N, n.Outcome)
				if n.NotKept > 0 {
					fmt.Fprintf(&b, " not-kept=%d", n.NotKept)
				}
				if n.Error != "" {
					fmt.Fprintf(&b, " %q", n.Error)
				}
				if n.Duration > 0 {
					fmt.Fprintf(&b, " %s", n.Duration)
				}
			case *trace.Note:
				fmt.Fprintf(&b, "%s %s %s", n.Mark, n.Kind, n.Text)
				if n.Error != "" {
					fmt.Fprintf(&b, " %q", n.Error)
				}
			}
			b.WriteString(" [" + refOf(n) + "]\n")
			walk(n.Children(), depth+1)
		}
	}
	walk(tr.Nodes, 0)
	return b.String()
}

func refOf(n trace.Node) string {
	switch n := n.(type) {
	case *trace.Attempt:
		return n.Ref
	}
	return n.ID()
}

func foldFile(t *testing.T, path string) *trace.Trace {
	t.Helper()
	h, _, err := temporal.Decode(read(t, path))
	if err != nil {
		t.Fatal(err)
	}
	exec, run := temporal.Identify(h)
	return trace.Fold(exec, temporal.Events([]temporal.Run{{RunID: run, Events: h.GetEvents()}}))
}

// Every kind of activity ending the issue names, from the CLI's JSON: the
// attempts Temporal did not keep carry the last failure on attempt N-1; a
// timeout is ⏱ whatever its kind; a local activity, a child workflow,
// timers and a signal are on the timeline; continue-as-new ends the run and
// not the execution.
func TestEventsEveryActivityEnding(t *testing.T) {
	tr := foldFile(t, run1File)
	want := `run 1 ✓ [run1]
  turn 1 workflow task: workflow started [run1/turn1]
    call 5 ChargeCard {"order":1042,"amount":"49.00"} [run1/5]
      ⋯ #2 error not-kept=2 "HTTPError: card service answered 503" [event 7]
      ✓ #3 ok 400ms [event 7]
     noted timer 6 started (30s) [note4]
  turn 2 workflow task: ChargeCard completed [run1/turn2]
    call 12 SendConfirmation {"to":"ana@example.com","order":1042} [run1/12]
      ⋯ #1 timeout not-kept=1 "start-to-close timeout" [event 13]
      ✓ #2 ok 300.001ms [event 13]
  turn 3 workflow task: SendConfirmation completed [run1/turn3]
    call 18 ReserveStock {"sku":"B-7","qty":1} [run1/18]
      ⋯ #3 timeout not-kept=3 "heartbeat timeout" [event 20]
      ⏱ #4 timeout "heartbeat timeout" 2s [event 20]
    call local:3 ValidateAddress  [run1/local:3]
      ⋯ #1 error not-kept=1 [event 19]
      ✓ #2 ok [event 19]
  turn 4 workflow task: ReserveStock timed out [run1/turn4]
    call 25 RefundPayment {"charge":"ch_81"} [run1/25]
     noted RefundPayment timed out before an attempt started: schedule-to-close timeout: HTTPError: refund service answered 500 [note24]
    call child:ship-1042 ShipOrder {"order":1042} [run1/child:ship-1042]
      ✓ #1 ok 1.35s [event 28]
     noted signal address-changed received {"zip":"10115"} [note27]
  turn 5 workflow task: RefundPayment timed out, signal address-changed [run1/turn5]
    call 33 NotifyWarehouse {"order":1042} [run1/33]
      ✖ #1 error "Rejected: warehouse rejected the order" 50ms [event 34]
     noted timer 6 fired [note33]
  turn 6 workflow task: NotifyWarehouse failed, ShipOrder completed, timer 6 fired [run1/turn6]
  ✓ run.ended continued as new as run 3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1002 [note35]
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(tr.Anomalies) != 0 {
		t.Errorf("anomalies: %+v", tr.Anomalies)
	}
	if tr.End != nil || tr.Outcome() != trace.MarkRunning {
		t.Errorf("a run that continued as new ended the execution: %v", tr.Outcome())
	}
}

// The Web UI's download (short enum names, nulls, the response wrapper)
// decodes to the same model as the CLI's JSON.
func TestDecodeBothShapes(t *testing.T) {
	for _, c := range []struct {
		file  string
		shape temporal.Shape
		n     int
		run   string
	}{
		{run1File, temporal.ShapeCLI, 41, "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"},
		{run2File, temporal.ShapeUI, 11, "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1002"},
	} {
		data := read(t, c.file)
		if !temporal.Sniff(data) {
			t.Errorf("%s: not recognised", c.file)
		}
		h, shape, err := temporal.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		exec, run := temporal.Identify(h)
		if shape != c.shape || len(h.GetEvents()) != c.n || exec != execID || run != c.run {
			t.Errorf("%s: %s, %d events, %s/%s", c.file, shape, len(h.GetEvents()), exec, run)
		}
	}
	for _, notOurs := range []string{`{"resourceSpans":[]}`, `[1,2]`, "\x1f\x8b", `{"resourceSpans":[{"scopeSpans":[]}]}` + "\n"} {
		if temporal.Sniff([]byte(notOurs)) {
			t.Errorf("%q taken for a Temporal history", notOurs)
		}
	}
}

// Two runs of one chain, from two files in the two shapes, in either order,
// make one execution with two runs; importing again changes nothing.
func TestImportChainAcrossFiles(t *testing.T) {
	for _, order := range [][]string{{run1File, run2File}, {run2File, run1File}} {
		db := openDB(t)
		for _, f := range order {
			if _, err := temporal.ImportFile(db, f); err != nil {
				t.Fatal(err)
			}
		}
		res, err := temporal.ImportFile(db, order[0])
		if err != nil || res.Events != 0 || res.Repeated == 0 {
			t.Errorf("re-import: %+v, %v", res, err)
		}
		var x history.Execution
		var tr *trace.Trace
		err = db.View(func(tx *store.Tx) error {
			var err error
			if x, err = history.DecodeExecution(tx.Execution(execID)); err != nil {
				return err
			}
			if tx.Get(store.Active, []byte(execID)) != nil {
				t.Error("an imported execution is in the index of unfinished ones")
			}
			evs, err := temporal.LoadEvents(tx, execID)
			tr = trace.Fold(execID, evs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if x.Imported != temporal.ImportedFormat || x.Runs != 2 || x.Status != history.StatusCompleted ||
			x.Scenario != "OrderWorkflow" || !strings.Contains(x.Source, run1File) || !strings.Contains(x.Source, run2File) {
			t.Errorf("record %+v", x)
		}
		if len(tr.Runs) != 2 || tr.Outcome() != trace.MarkOK || tr.Runs[0].Mark() != trace.MarkOK {
			t.Errorf("order %v: %d runs, outcome %s", order, len(tr.Runs), tr.Outcome())
		}
		second := tr.Runs[1]
		if c, ok := second.Nodes[1].(*trace.Turn).Nodes[0].(*trace.Call); !ok || c.Call != "5@r2e5" || c.Attempts[0].Ref != "run 2 event 6" {
			t.Errorf("run 2's activity 5 is not told apart from run 1's: %+v", second.Nodes)
		}
	}
}

// Bad input: a clear error naming what is wrong, and nothing stored.
func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run1 := string(read(t, run1File))
	changed := strings.Replace(run1, `"requestId": "r7"`, `"requestId": "r7-again"`, 1)
	cases := []struct{ path, want string }{
		{"../../fixtures/temporal/bad-cut-short.json", "history cut short: events 13 to 14 are missing"},
		{"../../fixtures/temporal/bad-out-of-order.json", "events out of order: event 10 comes before event 9"},
		{"../../fixtures/temporal/bad-truncated.json", "not valid JSON (cut short?)"},
		{"../../fixtures/temporal/bad-unknown-event-type.json", `event 13: unknown event type "EVENT_TYPE_WORKFLOW_EXECUTION_TIME_TRAVELLED" (written by a newer Temporal server`},
		{write("page2.json", strings.Replace(run1, `"eventId": "1",`, `"eventId": "0",`, 1)), "history cut short: it starts at event 0, not 1"},
		{write("empty.json", `{"events": []}`), "the history holds no events"},
		{write("null.json", `{"history": null, "archived": false}`), `holds no history`},
		{write("text.json", `{"events": "yes"}`), "not a Temporal history"},
		{write("other.json", `{"eventsX": 1}`), "not a Temporal workflow history"},
		{write("notime.json", `{"events":[{"eventId":"1","eventType":"WorkflowExecutionStarted","workflowExecutionStartedEventAttributes":{}}]}`), "event 1 (WorkflowExecutionStarted) has no eventTime"},
		{write("noattrs.json", `{"events":[{"eventId":"1","eventTime":"2026-01-01T00:00:00Z","eventType":"WorkflowExecutionStarted"}]}`), "has no attributes"},
		{write("late.json", `{"events":[{"eventId":"1","eventTime":"2026-01-01T00:00:00Z","eventType":"TimerFired","timerFiredEventAttributes":{}}]}`), "event 1 is TimerFired, not WorkflowExecutionStarted"},
		{write("changed.json", changed), "event 7 of run 3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001 was imported before with other content"},
	}
	db := openDB(t)
	if _, err := temporal.ImportFile(db, run1File); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		_ = db.View(func(tx *store.Tx) error { n = tx.Count(temporal.BucketEvents); return nil })
		return n
	}
	before := count()
	for _, c := range cases {
		_, err := temporal.ImportFile(db, c.path)
		if err == nil {
			t.Errorf("%s: imported", c.path)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, c.path+": ") || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line naming the file and %q", c.path, msg, c.want)
		}
	}
	if n := count(); n != before {
		t.Errorf("bad files left %d events behind", n-before)
	}
}

// A history may come gzip-compressed.
func TestImportGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(read(t, run2File))
	zw.Close()
	p := filepath.Join(t.TempDir(), "run2.json.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := temporal.SniffFile(p); !ok || err != nil {
		t.Fatalf("gzip not recognised: %v", err)
	}
	res, err := temporal.ImportFile(openDB(t), p)
	if err != nil || res.Events != 11 || res.Shape != temporal.ShapeUI {
		t.Errorf("%+v %v", res, err)
	}
}

// A workflow still running imports as running, and a later download of it
// adds the events that came since.
func TestImportRunningThenLater(t *testing.T) {
	h, _, err := temporal.Decode(read(t, run2File))
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	status := func() history.Status {
		var x history.Execution
		_ = db.View(func(tx *store.Tx) error {
			x, _ = history.DecodeExecution(tx.Execution(execID))
			return nil
		})
		return x.Status
	}
	full := h.GetEvents()
	h.Events = full[:7]
	if err := db.Update(func(tx *store.Tx) error { _, err := temporal.Save(tx, h, "early"); return err }); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != history.StatusRunning {
		t.Errorf("running workflow imported as %s", s)
	}
	h.Events = full
	var st temporal.Stats
	if err := db.Update(func(tx *store.Tx) error { st, err = temporal.Save(tx, h, "later"); return err }); err != nil {
		t.Fatal(err)
	}
	if st.Events != 4 || st.Repeated != 7 || status() != history.StatusCompleted {
		t.Errorf("later download: %+v, %s", st, status())
	}
}

// Attempts retrylab's worker interceptor recorded as spans (here stored as
// the OTLP receiver stores them) replace the ones Temporal did not keep;
// the audit leaves their OTLP execution to the workflow's.
func TestRecordedAttemptsReplaceNotKept(t *testing.T) {
	db := openDB(t)
	const run = "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	span := func(id string, attempt int, status, errType, msg string, at int64) otlp.Span {
		s := otlp.Span{TraceID: "0123456789abcdef0123456789abcdef", SpanID: id, Name: "execute_tool ChargeCard",
			Start: base + at*int64(time.Second), End: base + (at+1)*int64(time.Second), Status: status, Message: msg,
			Attrs: otlp.AttrsOf(map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ChargeCard", "gen_ai.tool.call.id": "5",
				"gen_ai.conversation.id": temporal.SpanConversation(run), temporal.AttrRunID: run, temporal.AttrActivityID: "5",
				temporal.AttrAttempt: fmt.Sprint(attempt), "retrylab.idempotency_key": "order-1042/5"})}
		if errType != "" {
			s.Attrs.Set("error.type", errType)
		}
		return s
	}
	spans := []otlp.Span{
		span("a000000000000001", 1, "error", "timeout", "activity StartToClose timeout", 0),
		span("a000000000000002", 2, "error", "HTTPError", "card service answered 503", 2),
		span("a000000000000003", 3, "ok", "", "", 3),
	}
	receiveThenImport(t, db, spans, run1File)
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		if !temporal.MergedSpans(tx, otlp.ExecutionID("", temporal.SpanConversation(run))) || temporal.MergedSpans(tx, "otlp-conv-other") {
			t.Error("MergedSpans does not tell the interceptor's spans of an imported run")
		}
		evs, err := temporal.LoadEvents(tx, execID)
		tr = trace.Fold(execID, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c := tr.LastCall("5")
	var got []string
	for _, a := range c.Attempts {
		got = append(got, fmt.Sprintf("%s #%d %s %q key=%s %s", a.Mark(), a.N, a.Outcome, a.Error, a.Key, a.Ref))
	}
	want := []string{
		`⏱ #1 timeout "activity StartToClose timeout" key=order-1042/5 span a000000000000001`,
		`✖ #2 error "card service answered 503" key=order-1042/5 span a000000000000002`,
		`✓ #3 ok "" key=order-1042/5 event 7`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// SendConfirmation had no spans: still not kept.
	if a := tr.LastCall("12").Attempts[0]; a.NotKept != 1 {
		t.Errorf("call 12 %+v", a)
	}
}

// A fault retrylab injected into a recorded attempt (the interceptor's
// retrylab.faults, on the attempt's span or on the marker sent as the
// fault is taken) marks that attempt ⚡ in the fold, as in a native trace:
// an earlier attempt whose worker was killed by it, and the kept one.
func TestRecordedFaultsMarkAttempts(t *testing.T) {
	db := openDB(t)
	const run = "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	span := func(id, name string, attempt int, at int64, kv ...string) otlp.Span {
		s := otlp.Span{TraceID: "0123456789abcdef0123456789abcdef", SpanID: id, Name: name,
			Start: base + at*int64(time.Second), End: base + (at+1)*int64(time.Second), Status: "ok",
			Attrs: otlp.AttrsOf(map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ChargeCard", "gen_ai.tool.call.id": "5",
				"gen_ai.conversation.id": temporal.SpanConversation(run), temporal.AttrRunID: run, temporal.AttrActivityID: "5",
				temporal.AttrAttempt: fmt.Sprint(attempt)})}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Attrs.Set(kv[i], kv[i+1])
		}
		return s
	}
	spans := []otlp.Span{
		// Attempt 1: started, took a crash, its worker died (no span of its own).
		span("b000000000000001", temporal.SpanAttemptStarted, 1, 0, temporal.AttrPhase, "started", "temporal.worker", "41@box"),
		span("b000000000000002", temporal.SpanFaultInjected, 1, 0, temporal.AttrPhase, "fault",
			temporal.AttrFaults, "crash-after-effect", temporal.AttrFaultSource, "armed from the explorer"),
		// Attempt 2: timed out after its effect, then 3 succeeded; the
		// fault is only on attempt 2's span.
		span("b000000000000003", "execute_tool ChargeCard", 2, 2, temporal.AttrFaults, "timeout-after-effect", "error.type", "timeout"),
		span("b000000000000004", "execute_tool ChargeCard", 3, 3, temporal.AttrFaults, "slow-response"),
		span("b000000000000005", temporal.SpanFaultInjected, 3, 3, temporal.AttrPhase, "fault",
			temporal.AttrFaults, "slow-response", temporal.AttrFaultSource, "from the scenario's fault plan"),
	}
	spans[2].Status = "error"
	receiveThenImport(t, db, spans, run1File)
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		evs, err := temporal.LoadEvents(tx, execID)
		tr = trace.Fold(execID, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range tr.LastCall("5").Attempts {
		line := fmt.Sprintf("%s #%d %s", a.Mark(), a.N, a.Outcome)
		for _, in := range a.Injections {
			line += fmt.Sprintf(" %s%s (%s)", trace.MarkFault.Glyph(), in.Fault, in.Text)
		}
		got = append(got, line)
	}
	want := []string{
		"⏱ #1 timeout ⚡crash-after-effect (armed from the explorer)",
		"⏱ #2 timeout ⚡timeout-after-effect (recorded by the worker interceptor)",
		"✓ #3 ok ⚡slow-response (from the scenario's fault plan)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(tr.Anomalies) != 0 {
		t.Errorf("anomalies: %v", tr.Anomalies)
	}
}

// A history fetched from a cluster is checked as a file is; an event type
// newer than the api module is named by its number.
func TestValidateFetched(t *testing.T) {
	h, _, err := temporal.Decode(read(t, run2File))
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Validate(h); err != nil {
		t.Fatal(err)
	}
	h.Events[3].EventType = 999
	if err := temporal.Validate(h); err == nil || !strings.Contains(err.Error(), "event 4: unknown event type 999") {
		t.Errorf("%v", err)
	}
	h.Events = h.Events[1:]
	if err := temporal.Validate(h); err == nil || !strings.Contains(err.Error(), "starts at event 2") {
		t.Errorf("%v", err)
	}
}

// The record of a one-run import is read from the events without folding
// them; it must say what the fold says.
func TestRecordAgreesWithFold(t *testing.T) {
	histories := map[string]*historypb.History{}
	for _, f := range []string{run1File, run2File} {
		h, _, err := temporal.Decode(read(t, f))
		if err != nil {
			t.Fatal(err)
		}
		histories[f] = h
	}
	running, _, _ := temporal.Decode(read(t, run2File))
	running.Events = running.Events[:7]
	histories["running"] = running
	failed, _, _ := temporal.Decode(read(t, run2File))
	last := failed.Events[len(failed.Events)-1]
	last.EventType = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
	last.Attributes = &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
		Failure: &failurepb.Failure{Message: "card declined", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: "Declined"}}}}}
	histories["failed"] = failed
	closeAs := func(set func(last *historypb.HistoryEvent)) *historypb.History {
		h, _, _ := temporal.Decode(read(t, run2File))
		set(h.Events[len(h.Events)-1])
		return h
	}
	histories["cancelled"] = closeAs(func(last *historypb.HistoryEvent) {
		last.EventType = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
		last.Attributes = &historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes{WorkflowExecutionCanceledEventAttributes: &historypb.WorkflowExecutionCanceledEventAttributes{}}
	})
	histories["terminated"] = closeAs(func(last *historypb.HistoryEvent) {
		last.EventType = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
		last.Attributes = &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{Reason: "by hand"}}
	})
	histories["timed out"] = closeAs(func(last *historypb.HistoryEvent) {
		last.EventType = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT
		last.Attributes = &historypb.HistoryEvent_WorkflowExecutionTimedOutEventAttributes{WorkflowExecutionTimedOutEventAttributes: &historypb.WorkflowExecutionTimedOutEventAttributes{}}
	})
	// The fold's end says how the workflow closed: its verb is the status.
	statusOf := map[string]history.Status{"completed": history.StatusCompleted, "failed": history.StatusFailed,
		"cancelled": history.StatusCancelled, "terminated": history.StatusTerminated, "timed out": history.StatusTimedOut}
	for name, h := range histories {
		db := openDB(t)
		var x history.Execution
		var tr *trace.Trace
		if err := db.Update(func(tx *store.Tx) error {
			st, err := temporal.Save(tx, h, name)
			if err != nil {
				return err
			}
			if x, err = history.DecodeExecution(tx.Execution(st.Execution)); err != nil {
				return err
			}
			evs, err := temporal.LoadEvents(tx, st.Execution)
			tr = trace.Fold(st.Execution, evs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		status, ended, errText := history.StatusRunning, time.Time{}, ""
		lastRun := tr.Runs[len(tr.Runs)-1]
		switch {
		case tr.End != nil:
			verb, _, _ := strings.Cut(tr.End.Text, " ")
			if verb == "timed" {
				verb = "timed out"
			}
			status, ended = statusOf[verb], tr.End.Time
			if tr.End.Mark != trace.MarkOK {
				errText = tr.End.Error
			}
		case lastRun.End != nil && strings.HasPrefix(lastRun.End.Text, "continued as new"):
			status, ended = history.StatusContinuedAsNew, lastRun.End.Time
		}
		if x.Status != status || !x.Ended.Equal(ended) || x.Error != errText || !x.Started.Equal(tr.Started) ||
			!x.Updated.Equal(tr.Last) || x.Scenario != tr.Scenario || x.Runs != len(tr.Runs) {
			t.Errorf("%s: record %+v\nfold: %s %s %q started %s last %s %s runs %d", name, x, status, ended, errText, tr.Started, tr.Last, tr.Scenario, len(tr.Runs))
		}
	}
}

// The Web UI's download with its keys in another order is still read.
func TestDecodeKeysInAnyOrder(t *testing.T) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(read(t, run2File), &doc); err != nil {
		t.Fatal(err)
	}
	reordered, err := json.Marshal(doc) // keys sorted: "archived" comes first
	if err != nil || !bytes.HasPrefix(reordered, []byte(`{"archived"`)) {
		t.Fatalf("%.40s %v", reordered, err)
	}
	if !temporal.Sniff(reordered) {
		t.Fatal("not recognised")
	}
	h, shape, err := temporal.Decode(reordered)
	if err != nil || shape != temporal.ShapeUI || len(h.GetEvents()) != 11 {
		t.Errorf("%s %v", shape, err)
	}
}

// An attempt known only from its start marker (its worker died before its
// span ended) shows as started with an unknown outcome, Temporal's last
// failure beside it.
func TestRecordedStartMarkerOnly(t *testing.T) {
	db := openDB(t)
	const run = "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	attrs := func(attempt int, extra ...string) otlp.Attrs {
		m := map[string]string{"gen_ai.conversation.id": temporal.SpanConversation(run), temporal.AttrRunID: run,
			temporal.AttrActivityID: "5", temporal.AttrAttempt: fmt.Sprint(attempt)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return otlp.AttrsOf(m)
	}
	spans := []otlp.Span{
		{TraceID: "0123456789abcdef0123456789abcdef", SpanID: "b000000000000001", Name: "execute_tool ChargeCard", Start: base, End: base + 1e9,
			Status: "ok", Attrs: attrs(1, "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "ChargeCard")},
		{TraceID: "0123456789abcdef0123456789abcdef", SpanID: "b000000000000002", ParentID: "b000000000000001", Name: temporal.SpanAttemptStarted,
			Start: base, End: base, Attrs: attrs(1, temporal.AttrPhase, "started")},
		{TraceID: "1123456789abcdef0123456789abcdef", SpanID: "b000000000000003", ParentID: "b0000000000000ff", Name: temporal.SpanAttemptStarted,
			Start: base + 2e9, End: base + 2e9, Attrs: attrs(2, temporal.AttrPhase, "started", "temporal.worker", "77@host-b")},
	}
	receiveThenImport(t, db, spans, run1File)
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		evs, err := temporal.LoadEvents(tx, execID)
		tr = trace.Fold(execID, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range tr.LastCall("5").Attempts {
		got = append(got, fmt.Sprintf("%s #%d %q %s %s", a.Mark(), a.N, a.Error, a.Ref, a.Attrs["temporal.worker"]))
	}
	want := []string{
		`✓ #1 "" span b000000000000001 `,
		`⏱ #2 "started, no end recorded (its worker died?); Temporal: HTTPError: card service answered 503" span b000000000000003 77@host-b`,
		`✓ #3 "" event 7 4242@worker-a`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Following a live workflow: each batch is saved knowing what earlier ones
// stored; the result is the same as one import of the whole history.
func TestSaveFromInBatches(t *testing.T) {
	full := genHistory(1000)
	db := openDB(t)
	known := 0
	for _, upto := range []int{3, 300, 301, 700, 1000} {
		h := &historypb.History{Events: full.Events[:upto]}
		var st temporal.Stats
		if err := db.Update(func(tx *store.Tx) error {
			var err error
			st, err = temporal.SaveFrom(tx, h, "follow", known)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if st.Events != upto-known || st.Events+st.Repeated != upto {
			t.Errorf("batch to %d: %+v", upto, st)
		}
		known = upto
	}
	one := openDB(t)
	if err := one.Update(func(tx *store.Tx) error { _, err := temporal.Save(tx, full, "whole"); return err }); err != nil {
		t.Fatal(err)
	}
	var a, b []trace.Event
	var xa, xb history.Execution
	for _, c := range []struct {
		db *store.DB
		ev *[]trace.Event
		x  *history.Execution
	}{{db, &a, &xa}, {one, &b, &xb}} {
		if err := c.db.View(func(tx *store.Tx) error {
			var err error
			if *c.ev, err = temporal.LoadEvents(tx, "temporal-bench-run"); err != nil {
				return err
			}
			*c.x, err = history.DecodeExecution(tx.Execution("temporal-bench-run"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) || len(a) < 500 {
		for i := range a {
			x, _ := json.Marshal(a[i])
			y, _ := json.Marshal(b[i])
			if !bytes.Equal(x, y) {
				t.Errorf("event %d:\n%s\n%s", i, x, y)
				break
			}
		}
		t.Errorf("batched import differs from one import (%d vs %d events)", len(a), len(b))
	}
	if xa.Status != history.StatusCompleted || xa.Status != xb.Status || !xa.Updated.Equal(xb.Updated) || xa.Runs != 1 {
		t.Errorf("records %+v vs %+v", xa, xb)
	}
}

// receiveThenImport stores spans as the OTLP receiver would (a worker's
// interceptor sent them), then imports the Temporal history file.
func receiveThenImport(t *testing.T, db *store.DB, spans []otlp.Span, file string) {
	t.Helper()
	if err := db.Update(func(tx *store.Tx) error { _, err := otlp.Save(tx, spans, "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := temporal.ImportFile(db, file); err != nil {
		t.Fatal(err)
	}
}

// A live follower saves a history batch by batch (SaveFrom with what it
// stored before); the record's duplicate flag is then carried over from
// the batch before when the new events cannot change the audit, and
// audited again when they can. After every batch, whatever its size, it
// must say what auditing the whole execution says.
func TestLiveBatchesAuditAsTheWhole(t *testing.T) {
	for _, size := range []int{1, 2, 5} {
		db := openDB(t)
		sawDuplicate := false
		for _, file := range []string{run1File, run2File} {
			full, _, err := temporal.Decode(read(t, file))
			if err != nil {
				t.Fatal(err)
			}
			h := &historypb.History{}
			for known := 0; known < len(full.Events); known = len(h.Events) {
				h.Events = full.Events[:min(known+size, len(full.Events))]
				if err := db.Update(func(tx *store.Tx) error {
					st, err := temporal.SaveFrom(tx, h, "live", known)
					if err != nil {
						return err
					}
					x, err := history.DecodeExecution(tx.Execution(st.Execution))
					if err != nil {
						return err
					}
					evs, err := temporal.LoadEvents(tx, st.Execution)
					if err != nil {
						return err
					}
					whole := audit.Verdict(trace.Fold(st.Execution, evs))
					if x.Duplicates != (whole == audit.Duplicate) || x.Possible != (whole == audit.Possible) {
						t.Errorf("batches of %d, %s up to event %d: record says duplicates %v, possible %v, the whole audit %q",
							size, file, len(h.Events), x.Duplicates, x.Possible, whole)
					}
					sawDuplicate = sawDuplicate || x.Duplicates
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !sawDuplicate {
			t.Errorf("batches of %d: the chain's duplicate confirmation was never flagged", size)
		}
	}
}

// Translating a run batch by batch as it is committed (Live) gives what
// translating its whole history gives, whatever the batches; a batch that
// repeats events is fine, one that leaves a hole is refused.
func TestLiveTranslationAsTheWhole(t *testing.T) {
	for _, file := range []string{run1File, run2File} {
		h, _, err := temporal.Decode(read(t, file))
		if err != nil {
			t.Fatal(err)
		}
		_, run := temporal.Identify(h)
		want, err := json.Marshal(temporal.Events([]temporal.Run{{RunID: run, Events: h.Events}}))
		if err != nil {
			t.Fatal(err)
		}
		for size := 1; size <= 7; size++ {
			live := temporal.NewLive(run)
			var got []trace.Event
			for i := 0; i < len(h.Events); i += size {
				// Each batch repeats the event before it, as a re-read may.
				evs, err := live.Add(h.Events[max(0, i-1):min(i+size, len(h.Events))])
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, evs...)
			}
			if b, _ := json.Marshal(got); !bytes.Equal(b, want) {
				t.Errorf("%s in batches of %d: differs from the whole translation", file, size)
			}
			if b, _ := json.Marshal(live.Events()); !bytes.Equal(b, want) {
				t.Errorf("%s in batches of %d: Events differs from the whole translation", file, size)
			}
		}
		live := temporal.NewLive(run)
		if _, err := live.Add(h.Events[2:]); err == nil || !strings.Contains(err.Error(), "event 3 follows event 0") {
			t.Errorf("a hole: %v", err)
		}
	}
}

// While an activity retries, its history holds no attempt (Temporal writes
// ActivityTaskStarted when the activity closes): the interceptor's spans
// show its attempts meanwhile, the fault injected into one marked ⚡ and
// the last in flight; once the history has the kept attempt, the same
// spans fill the attempts before it.
func TestRecordedAttemptsOfAnActivityStillRetrying(t *testing.T) {
	db := openDB(t)
	const run = "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	span := func(id, name string, attempt int, at int64, kv ...string) otlp.Span {
		s := otlp.Span{TraceID: "0123456789abcdef0123456789abcdef", SpanID: id, Name: name, Status: "error",
			Start: base + at*int64(time.Second), End: base + (at+1)*int64(time.Second),
			Attrs: otlp.AttrsOf(map[string]string{"gen_ai.conversation.id": temporal.SpanConversation(run), temporal.AttrRunID: run,
				temporal.AttrActivityID: "5", temporal.AttrAttempt: fmt.Sprint(attempt), "gen_ai.tool.name": "ChargeCard"})}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Attrs.Set(kv[i], kv[i+1])
		}
		return s
	}
	spans := []otlp.Span{
		span("d000000000000001", "execute_tool ChargeCard", 1, 0, "gen_ai.operation.name", "execute_tool", "error.type", "HTTPError",
			temporal.AttrFaults, "server-error"),
		span("d000000000000002", temporal.SpanAttemptStarted, 2, 2, temporal.AttrPhase, "started", "temporal.worker", "7@box"),
	}
	full, _, err := temporal.Decode(read(t, run1File))
	if err != nil {
		t.Fatal(err)
	}
	attempts := func(h *historypb.History) []string {
		t.Helper()
		var got []string
		if err := db.Update(func(tx *store.Tx) error {
			if _, err := temporal.Save(tx, h, "live"); err != nil {
				return err
			}
			evs, err := temporal.LoadEvents(tx, execID)
			tr := trace.Fold(execID, evs)
			for _, a := range tr.LastCall("5").Attempts {
				got = append(got, fmt.Sprintf("%s #%d %v", a.Mark(), a.N, a.Faults))
			}
			if len(tr.Anomalies) > 0 {
				t.Errorf("anomalies: %v", tr.Anomalies)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := db.Update(func(tx *store.Tx) error { _, err := otlp.Save(tx, spans, "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
	if got, want := attempts(&historypb.History{Events: full.Events[:6]}), "✖ #1 [server-error]\n… #2 []"; strings.Join(got, "\n") != want {
		t.Errorf("retrying:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	if got, want := attempts(full), "✖ #1 [server-error]\n⏱ #2 []\n✓ #3 []"; strings.Join(got, "\n") != want {
		t.Errorf("closed:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}
