package temporal_test

import (
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// importAndFold imports files into a fresh database and returns the record
// and the folded trace of the execution the last one belongs to.
func importAndFold(t *testing.T, files ...string) (history.Execution, *trace.Trace) {
	t.Helper()
	db := openDB(t)
	var res temporal.FileResult
	for _, f := range files {
		var err error
		if res, err = temporal.ImportFile(db, f); err != nil {
			t.Fatal(err)
		}
	}
	var x history.Execution
	var tr *trace.Trace
	err := db.View(func(tx *store.Tx) error {
		var err error
		if x, err = history.DecodeExecution(tx.Execution(res.Execution)); err != nil {
			return err
		}
		evs, err := temporal.LoadEvents(tx, res.Execution)
		tr = trace.Fold(res.Execution, evs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return x, tr
}

// A workflow's record says how it closed in Temporal's words: a cancelled,
// terminated or timed-out workflow is not "failed", and a run that
// continued as new into a run not imported is not "running".
func TestStatusOfEveryClose(t *testing.T) {
	for _, c := range []struct {
		file   string
		status history.Status
		errText,
		end string
	}{
		{"testdata/cancelled.ui-newest-first.json", history.StatusCancelled, "workflow cancelled", "cancelled"},
		{"testdata/terminated.cli.json", history.StatusTerminated, "workflow terminated stuck agent", "terminated"},
		{"testdata/timed-out.cli.json", history.StatusTimedOut, "workflow timed out", "timed out"},
		{"testdata/java-local-activity.cli.json", history.StatusFailed, "RefundError: refund failed", "failed"},
		{"testdata/go-local-activity.cli.json", history.StatusCompleted, "", "completed"},
		{run1File, history.StatusContinuedAsNew, "", ""},
	} {
		x, tr := importAndFold(t, c.file)
		if x.Status != c.status || x.Error != c.errText || !x.Status.Finished() || x.Ended.IsZero() {
			t.Errorf("%s: status %q error %q ended %s, want %q %q", c.file, x.Status, x.Error, x.Ended, c.status, c.errText)
		}
		switch {
		case c.end == "" && tr.End != nil:
			t.Errorf("%s: the execution ended: %+v", c.file, tr.End)
		case c.end != "" && (tr.End == nil || tr.End.Text != c.end):
			t.Errorf("%s: end %+v, want %q", c.file, tr.End, c.end)
		}
	}
	// A chain whose last run closed is that run's close.
	if x, _ := importAndFold(t, run1File, run2File); x.Status != history.StatusCompleted || x.Runs != 2 {
		t.Errorf("chain: %s, %d runs", x.Status, x.Runs)
	}
}

// The Web UI downloads a history newest first when its event list is
// sorted so: it is read oldest first, and is the same history.
func TestNewestFirstDownload(t *testing.T) {
	h, shape, err := temporal.Decode(read(t, "testdata/cancelled.ui-newest-first.json"))
	if err != nil {
		t.Fatal(err)
	}
	evs := h.GetEvents()
	if shape != temporal.ShapeUI || len(evs) != 15 {
		t.Fatalf("%s, %d events", shape, len(evs))
	}
	for i, ev := range evs {
		if ev.GetEventId() != int64(i+1) {
			t.Fatalf("event %d at position %d", ev.GetEventId(), i)
		}
	}
	_, tr := importAndFold(t, "testdata/cancelled.ui-newest-first.json")
	want := `run 1 ✖ [run1]
  turn 1 workflow task: workflow started [run1/turn1]
    call 1 SendEmail {"to":"ana@example.com","subject":"ticket 7"} [run1/1]
      ✓ #1 ok 100ms [event 6]
  turn 2 workflow task: SendEmail completed [run1/turn2]
     noted cancellation of the workflow requested [note7]
  turn 3 workflow task: cancel request [run1/turn3]
  ✖ execution.ended cancelled "workflow cancelled" [note9]
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Local activity markers as the Java SDK writes them (details activityId,
// type, input, meta with the attempt; a failure whose retry state says
// the attempts ran out) and as the Go SDK writes them (details data with
// ActivityID, ActivityType, Attempt): the call is the activity's type and
// id, the recorded attempt is the marker's, the ones before it not kept.
func TestLocalActivityMarkers(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"testdata/java-local-activity.cli.json", `run 1 ✖ [run1]
  turn 1 workflow task: workflow started [run1/turn1]
    call local:a6f1e9d2-1111-3c3c-8f39-000000000001 ValidateOrder {"order":9} [run1/local:a6f1e9d2-1111-3c3c-8f39-000000000001]
      ✓ #1 ok [event 5]
    call local:a6f1e9d2-1111-3c3c-8f39-000000000002 RefundPayment {"charge":"ch_9","amount":"12.00"} [run1/local:a6f1e9d2-1111-3c3c-8f39-000000000002]
      ⋯ #2 error not-kept=2 [event 6]
      ✖ #3 error "Activity task failed: java.io.IOException: payments API answered 502 (retries stopped: maximum attempts reached)" [event 6]
  turn 2 workflow task [run1/turn2]
  ✖ execution.ended failed "RefundError: refund failed" [note11]
`},
		{"testdata/go-local-activity.cli.json", `run 1 ✓ [run1]
  turn 1 workflow task: workflow started [run1/turn1]
    call local:1 RefundPayment  [run1/local:1]
      ⋯ #1 error not-kept=1 [event 5]
      ✖ #2 error "HTTPError: payments API answered 502" [event 5]
  turn 2 workflow task [run1/turn2]
  ✓ execution.ended completed [note8]
`},
	} {
		if got := dump(foldFile(t, c.file)); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.file, got, c.want)
		}
	}
}

// An event of a type this version does not know, which the server marks
// workerMayIgnore, is kept and shown as skipped; the rest reads as usual.
func TestIgnorableUnknownEventSkipped(t *testing.T) {
	x, tr := importAndFold(t, "testdata/ignorable-unknown-event.cli.json")
	got := dump(tr)
	if !strings.Contains(got, "noted skipped event 5, of a type this retrylab does not know, which the server marks workerMayIgnore") ||
		!strings.Contains(got, "call 1 LookupCustomer") || x.Status != history.StatusCompleted {
		t.Errorf("%s\n%s", x.Status, got)
	}
}

// A run continued as new whose start does not name the run before it
// says so, rather than "continued as new from run" and nothing.
func TestContinuedAsNewWithoutPreviousRun(t *testing.T) {
	got := dump(foldFile(t, "testdata/continued-no-previous-run.cli.json"))
	if !strings.Contains(got, "noted continued as new from a run this history does not name") {
		t.Errorf("%s", got)
	}
}

// Seven activities with one id each and the same arguments (a loop the
// workflow meant) are seven separate calls, not attempts of one.
func TestAuditSeparateActivities(t *testing.T) {
	_, tr := importAndFold(t, "testdata/loop-seven-calls.cli.json")
	rep := audit.Run([]*trace.Trace{tr}, audit.Options{Effects: []string{"send_*"}})
	if len(rep.Findings) != 1 || rep.Findings[0].Why != "7 separate calls with the same arguments succeeded" || len(rep.Findings[0].Attempts) != 7 {
		t.Errorf("%+v", rep.Findings)
	}
}

// Every bad input is refused in one line that names the file, the line and
// the event, and leaves nothing stored.
func TestBadInputNamesFileLineAndEvent(t *testing.T) {
	cases := []struct{ path, want string }{
		{"testdata/bad-event-after-close.cli.json", "line 88: event 6 comes after the workflow closed (event 5, WorkflowExecutionCompleted)"},
		{"testdata/bad-unknown-event.ui-newest-first.json", `line 4: event 5: unknown event type "WorkflowExecutionBudgetNoted" (written by a newer Temporal server than this retrylab reads; not marked workerMayIgnore)`},
		{"../../fixtures/temporal/bad-cut-short.json", "line 234: history cut short: events 13 to 14 are missing"},
		{"../../fixtures/temporal/bad-out-of-order.json", "line 161: events out of order: event 10 comes before event 9"},
		{"../../fixtures/temporal/bad-unknown-event-type.json", "line 234: event 13: unknown event type"},
		{"../../fixtures/temporal/bad-truncated.json", "not valid JSON (cut short?): unexpected end of JSON input at line 400 (byte 11395)"},
	}
	db := openDB(t)
	for _, c := range cases {
		_, err := temporal.ImportFile(db, c.path)
		if err == nil {
			t.Errorf("%s: imported", c.path)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.path+": "+c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line %q", c.path, msg, c.path+": "+c.want)
		}
	}
	_ = db.View(func(tx *store.Tx) error {
		if n := tx.Count(temporal.BucketEvents) + tx.Count(temporal.BucketRuns); n != 0 {
			t.Errorf("bad files left %d values behind", n)
		}
		return nil
	})
}

// A history fetched from a cluster keeps a newer server's event type as a
// number: skipped when the server marks it workerMayIgnore, refused when
// not, and refused after the workflow closed.
func TestValidateFetchedIgnorable(t *testing.T) {
	h, _, err := temporal.Decode(read(t, run2File))
	if err != nil {
		t.Fatal(err)
	}
	ev := h.Events[3]
	ev.EventType, ev.Attributes, ev.WorkerMayIgnore = 999, nil, true
	if err := temporal.Validate(h); err != nil {
		t.Fatal(err)
	}
	exec, run := temporal.Identify(h)
	got := dump(trace.Fold(exec, temporal.Events([]temporal.Run{{RunID: run, Events: h.GetEvents()}})))
	if !strings.Contains(got, "noted skipped event 4, of a type this retrylab does not know (999), which the server marks workerMayIgnore") {
		t.Errorf("%s", got)
	}
	ev.WorkerMayIgnore = false
	if err := temporal.Validate(h); err == nil || !strings.Contains(err.Error(), "event 4: unknown event type 999") {
		t.Errorf("not ignorable: %v", err)
	}
	ev.WorkerMayIgnore = true
	late := proto.Clone(h.Events[len(h.Events)-1]).(*historypb.HistoryEvent)
	late.EventId++
	h.Events = append(h.Events, late)
	if err := temporal.Validate(h); err == nil || !strings.Contains(err.Error(), "event 12 comes after the workflow closed (event 11, WorkflowExecutionCompleted)") {
		t.Errorf("an event after the close: %v", err)
	}
}
