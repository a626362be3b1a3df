package temporal_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// benchEvents is the size of the benchmark's history.
const benchEvents = 50_000

var (
	benchOnce sync.Once
	benchJSON []byte
)

// benchHistory is one run of benchEvents events as `temporal workflow show
// --output json` writes it (the api's JSON marshaler, indented): workflow
// tasks, each scheduling an activity that runs to completion, every third
// one on a later attempt with its last failure, and a timer now and then.
func benchHistory(b *testing.B) []byte {
	benchOnce.Do(func() {
		var err error
		benchJSON, err = temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(genHistory(benchEvents))
		if err != nil {
			panic(err)
		}
	})
	return benchJSON
}

// genHistory is one completed run of n events (n >= 10).
func genHistory(n int) *historypb.History {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	h := &historypb.History{}
	add := func(typ enumspb.EventType, set func(*historypb.HistoryEvent)) int64 {
		id := int64(len(h.Events) + 1)
		ev := &historypb.HistoryEvent{EventId: id, EventType: typ, TaskId: 1<<20 + id,
			EventTime: timestamppb.New(t0.Add(time.Duration(id) * 10 * time.Millisecond))}
		set(ev)
		h.Events = append(h.Events, ev)
		return id
	}
	payload := func(s string) *commonpb.Payloads {
		return &commonpb.Payloads{Payloads: []*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(s)}}}
	}
	add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: "BigWorkflow"}, Input: payload(`{"n":1}`),
			OriginalExecutionRunId: "bench-run", FirstExecutionRunId: "bench-run", Attempt: 1, WorkflowId: "bench"}}
	})
	for i := 0; len(h.Events) < n-8; i++ {
		ws := add(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{Attempt: 1, StartToCloseTimeout: durationpb.New(10 * time.Second)}}
		})
		wst := add(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{ScheduledEventId: ws, Identity: "1@bench", RequestId: fmt.Sprint("r", ws)}}
		})
		wc := add(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{ScheduledEventId: ws, StartedEventId: wst, Identity: "1@bench"}}
		})
		sch := add(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityId: fmt.Sprint(wc + 1), ActivityType: &commonpb.ActivityType{Name: "SendEmail"}, Input: payload(fmt.Sprintf(`{"to":"user%d@example.com","subject":"hello"}`, i)),
				StartToCloseTimeout: durationpb.New(10 * time.Second), WorkflowTaskCompletedEventId: wc,
				RetryPolicy: &commonpb.RetryPolicy{InitialInterval: durationpb.New(time.Second), BackoffCoefficient: 2, MaximumAttempts: 5}}}
		})
		if i%7 == 0 {
			add(enumspb.EVENT_TYPE_TIMER_STARTED, func(ev *historypb.HistoryEvent) {
				ev.Attributes = &historypb.HistoryEvent_TimerStartedEventAttributes{TimerStartedEventAttributes: &historypb.TimerStartedEventAttributes{TimerId: fmt.Sprint(i), StartToFireTimeout: durationpb.New(time.Second), WorkflowTaskCompletedEventId: wc}}
			})
		}
		st := add(enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, func(ev *historypb.HistoryEvent) {
			a := &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: sch, Identity: "1@bench", RequestId: fmt.Sprint("a", sch), Attempt: 1}
			if i%3 == 0 {
				a.Attempt = 3
				a.LastFailure = &failurepb.Failure{Message: "mail API answered 503", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: "HTTPError"}}}
			}
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: a}
		})
		add(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: sch, StartedEventId: st, Result: payload(`{"message_id":"m"}`), Identity: "1@bench"}}
		})
	}
	for len(h.Events) < n-1 {
		add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{SignalName: "nudge"}}
		})
	}
	add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{Result: payload(`"done"`)}}
	})
	return h
}

// BenchmarkImport50k compares importing a 50 000-event history (decode,
// validate, store every event, rebuild the record from the folded runs,
// one committed transaction into a fresh database) with the api's bare JSON
// decode of the same bytes, alternating the two in each round so both see
// the same machine. The goal: import at >= 0.5x the bare decode's rate
// (reported as import/decode).
func BenchmarkImport50k(b *testing.B) {
	data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	var decode, imp time.Duration
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		h := &historypb.History{}
		if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, h); err != nil {
			b.Fatal(err)
		}
		if len(h.Events) != benchEvents {
			b.Fatalf("%d events", len(h.Events))
		}
		decode += time.Since(t0)

		db, err := store.Open(filepath.Join(dir, fmt.Sprint(i, ".db")), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		hh, _, err := temporal.Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Update(func(tx *store.Tx) error {
			st, err := temporal.Save(tx, hh, "bench.json")
			if err == nil && st.Events != benchEvents {
				err = fmt.Errorf("stored %d events", st.Events)
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
		imp += time.Since(t1)
		db.Close()
	}
	b.ReportMetric(float64(benchEvents*b.N)/decode.Seconds(), "decode-events/s")
	b.ReportMetric(float64(benchEvents*b.N)/imp.Seconds(), "import-events/s")
	b.ReportMetric(decode.Seconds()/imp.Seconds(), "import/decode")
}

// BenchmarkLiveBatch is what a live follower's batch costs on a long
// running workflow that sends mail (10 000 events, side-effecting
// activities): one op saves one new event, a signal, with SaveFrom after
// what earlier batches stored, in one transaction (no fsync). A batch that
// cannot change the audit keeps the record's duplicate flag instead of
// folding and auditing the whole execution again.
func BenchmarkLiveBatch(b *testing.B) {
	full := genHistory(10_000)
	h := &historypb.History{Events: full.Events[:len(full.Events)-1]} // running
	db, err := store.Open(filepath.Join(b.TempDir(), "live.db"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *store.Tx) error { _, err := temporal.Save(tx, h, "live"); return err }); err != nil {
		b.Fatal(err)
	}
	t0 := h.Events[len(h.Events)-1].GetEventTime().AsTime()
	b.ResetTimer()
	for i := range b.N {
		known := len(h.Events)
		id := int64(known + 1)
		h.Events = append(h.Events, &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
			TaskId: 1<<20 + id, EventTime: timestamppb.New(t0.Add(time.Duration(i+1) * time.Millisecond)),
			Attributes: &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{SignalName: "nudge"}}})
		if err := db.Update(func(tx *store.Tx) error {
			st, err := temporal.SaveFrom(tx, h, "live", known)
			if err == nil && st.Events != 1 {
				err = fmt.Errorf("stored %d events", st.Events)
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
