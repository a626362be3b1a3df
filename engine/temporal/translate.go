package temporal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/retrylab/retrylab/engine/trace"
	durtext "github.com/retrylab/retrylab/internal/dur"
)

// Run is one workflow run's history: RunID is the run it is (its original
// run id as WorkflowExecutionStarted gives it).
type Run struct {
	RunID  string
	Events []*historypb.HistoryEvent
	// Recorded are the attempts the worker interceptor recorded, by
	// activity id; nil when none were.
	Recorded map[string][]Recorded
}

// Events translates the runs of one execution (a continue-as-new or retry
// chain, oldest run first) into the fold's input events:
//
//   - WorkflowExecutionStarted starts the execution (first run) or a run;
//     a run that is a retry, a continue-as-new or a cron run says so in a
//     note;
//   - each completed workflow task is a turn, whose text says what woke the
//     workflow (a signal, a timer, an activity's end, ...);
//   - ActivityTaskScheduled is a tool call (the activity id; the activity
//     type is the tool; the input payloads are the arguments);
//   - ActivityTaskStarted is the attempt Temporal kept, attempt N; when N > 1
//     the N-1 attempts before it are not kept, and lastFailure is the error
//     of attempt N-1; unless the worker interceptor recorded them
//     (Run.Recorded): then each shows with its own outcome, and one known
//     only from its start marker as started with an unknown outcome;
//   - ActivityTaskCompleted/Failed/TimedOut/Canceled end that attempt: ok,
//     error, timeout (start-to-close, schedule-to-close, heartbeat) or
//     cancelled;
//   - a local activity's marker is a call with its one recorded attempt (and
//     the earlier ones not kept); a child workflow is a call whose attempt is
//     the child run;
//   - timers, signals, other markers, updates, cancel requests and failed
//     workflow tasks are notes on the timeline;
//   - the workflow's close ends the execution, or only the run when another
//     run continues it (continue-as-new, retry, cron).
//
// Event ids are the events' Ref ("event 12"); Seq numbers the output.
func Events(runs []Run) []trace.Event {
	n := 0
	for _, r := range runs {
		n += len(r.Events)
	}
	// About one output event per input event: allocated once, since an
	// Event is large and a history may hold 50 000 of them.
	tr := &translator{usedCalls: map[string]bool{}, out: make([]trace.Event, 0, n+n/4)}
	for i, r := range runs {
		tr.run(i+1, r, i == len(runs)-1)
	}
	return tr.out
}

// Live translates one workflow run's history as it is committed, batch by
// batch, for a reader that follows the run (the explorer on a cluster):
// each batch costs what it brings, where Events translates the whole
// history again. The events Add returns, concatenated, are what Events
// gives for the run's history so far, with no recorded attempts (a live
// reader has no interceptor spans).
type Live struct {
	t *translator
	s *runState
	// next is the id of the event the next batch must start with.
	next int64
}

// NewLive starts translating the run runID (the one run of its execution
// the reader holds).
func NewLive(runID string) *Live {
	return &Live{t: &translator{usedCalls: map[string]bool{}}, s: &runState{n: 1, runID: runID, last: true, acts: map[int64]*activity{}}, next: 1}
}

// Add translates the events after those added before and returns their
// fold events (Seq continuing). Events it has seen are skipped, so a batch
// may repeat the end of the one before; a batch that leaves a hole is
// refused.
func (l *Live) Add(evs []*historypb.HistoryEvent) ([]trace.Event, error) {
	from := len(l.t.out)
	for _, ev := range evs {
		switch id := ev.GetEventId(); {
		case id < l.next:
			continue
		case id > l.next:
			return nil, fmt.Errorf("run %s: event %d follows event %d", l.s.runID, id, l.next-1)
		}
		l.t.event(l.s, ev)
		l.next++
	}
	return l.t.out[from:len(l.t.out):len(l.t.out)], nil
}

// Events is every event translated so far. Later batches never change
// them, so a reader may keep the slice.
func (l *Live) Events() []trace.Event { return l.t.out[:len(l.t.out):len(l.t.out)] }

type translator struct {
	out       []trace.Event
	usedCalls map[string]bool
}

// activity is what the translator remembers of a scheduled activity or an
// initiated child workflow, by its scheduling event's id.
type activity struct {
	id        string // the activity id
	call      string
	tool      string
	scheduled time.Time
	attempt   int // the started attempt, 0 before ActivityTaskStarted
	started   time.Time
}

type runState struct {
	recorded map[string][]Recorded
	n        int
	runID    string
	last     bool
	acts     map[int64]*activity
	turn     int
	woke     []string
}

func (t *translator) emit(e trace.Event) {
	e.Seq = uint64(len(t.out) + 1)
	t.out = append(t.out, e)
}

// callID is the activity's id, made unique within the execution: a later
// run (or a reused id) gets the scheduling event's id appended.
func (t *translator) callID(prefix, id string, run int, eventID int64) string {
	c := prefix + id
	if t.usedCalls[c] {
		c = fmt.Sprintf("%s@r%de%d", c, run, eventID)
	}
	t.usedCalls[c] = true
	return c
}

func (t *translator) run(n int, r Run, last bool) {
	s := &runState{n: n, runID: r.RunID, last: last, acts: map[int64]*activity{}, recorded: r.Recorded}
	for _, ev := range r.Events {
		t.event(s, ev)
	}
	t.pending(s)
}

// pending reports the recorded attempts of activities whose history holds
// no attempt yet: Temporal writes ActivityTaskStarted only once the
// activity closes, so while it retries (or after a timeout before any
// start) only the interceptor's spans know its attempts. Each shows as
// recorded; the last, unended, is in flight.
func (t *translator) pending(s *runState) {
	if len(s.recorded) == 0 {
		return
	}
	ids := make([]int64, 0, len(s.acts))
	for id, act := range s.acts {
		if act.attempt == 0 && act.id != "" && len(s.recorded[act.id]) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		act := s.acts[id]
		rs := s.recorded[act.id]
		for i, r := range rs {
			base := trace.Event{Run: s.n}
			t.recordedAttempt(base, act, r, i < len(rs)-1, nil, false)
		}
	}
}

// recordedAttempt reports one attempt as the interceptor recorded it: its
// start, the faults injected into it and, when its span ended (or a later
// attempt says it is over: over), its end. An attempt that started and
// never ended while another followed died with its worker; last is
// Temporal's failure of it, when it was the attempt before the kept one.
func (t *translator) recordedAttempt(base trace.Event, act *activity, r Recorded, over bool, last *failurepb.Failure, beforeKept bool) {
	e := base
	e.Kind, e.Call, e.Tool, e.Attempt, e.Time, e.Key, e.Ref = trace.AttemptStarted, act.call, act.tool, r.Attempt, r.Start, r.Key, "span "+r.SpanID
	e.Attrs = attrs("retrylab.recorded_by", "worker interceptor", "retrylab.args_digest", r.Digest, "temporal.worker", r.Worker)
	t.emit(e)
	t.faults(e, act, r)
	if !r.Ended() && !over {
		return // in flight
	}
	e.Kind, e.Outcome, e.Error, e.Time, e.Duration, e.Attrs = trace.AttemptFinished, r.Outcome, r.Error, r.End, r.End.Sub(r.Start), nil
	if !r.Ended() {
		// Started, never ended: its worker died with it. The caller
		// never learnt what it did; Temporal timed it out.
		e.Outcome, e.Time, e.Duration = trace.OutcomeTimeout, r.Start, 0
		e.Error = "started, no end recorded (its worker died?)"
		if beforeKept {
			if f := failureText(last); f != "" {
				e.Error += "; Temporal: " + f
			}
		}
	}
	t.emit(e)
}

func (t *translator) event(s *runState, ev *historypb.HistoryEvent) {
	at := ev.GetEventTime().AsTime()
	base := trace.Event{Time: at, Run: s.n, Ref: ref(s.n, ev.GetEventId())}
	note := func(text string) {
		e := base
		e.Kind, e.Text = trace.Noted, text
		t.emit(e)
	}
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		t.started(s, base, ev.GetWorkflowExecutionStartedEventAttributes())
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		// Part of the turn that WorkflowTaskCompleted reports.
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		s.turn++
		e := base
		e.Kind, e.Turn = trace.TurnStarted, s.turn
		e.Text = "workflow task"
		if len(s.woke) > 0 {
			e.Text += ": " + strings.Join(s.woke, ", ")
		} else if s.turn == 1 {
			e.Text += ": workflow started"
		}
		s.woke = s.woke[:0]
		if id := ev.GetWorkflowTaskCompletedEventAttributes().GetIdentity(); id != "" {
			e.Attrs = map[string]string{"temporal.worker": id}
		}
		t.emit(e)
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
		a := ev.GetWorkflowTaskFailedEventAttributes()
		text := "workflow task failed: " + a.GetCause().String()
		if f := failureText(a.GetFailure()); f != "" {
			text += ": " + f
		}
		note(text)
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
		note("workflow task timed out (" + timeoutWords(ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType()) + ")")

	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		a := ev.GetActivityTaskScheduledEventAttributes()
		act := &activity{id: a.GetActivityId(), call: t.callID("", a.GetActivityId(), s.n, ev.GetEventId()), tool: a.GetActivityType().GetName(), scheduled: at}
		s.acts[ev.GetEventId()] = act
		e := base
		e.Kind, e.Call, e.Tool, e.Args, e.Turn = trace.CallScheduled, act.call, act.tool, payloadsJSON(a.GetInput()), s.turn
		e.MaxAttempts = int(a.GetRetryPolicy().GetMaximumAttempts())
		e.Attrs = attrs("temporal.activity_id", a.GetActivityId(), "temporal.task_queue", a.GetTaskQueue().GetName(),
			"temporal.start_to_close", dur(a.GetStartToCloseTimeout()), "temporal.schedule_to_close", dur(a.GetScheduleToCloseTimeout()),
			"temporal.schedule_to_start", dur(a.GetScheduleToStartTimeout()), "temporal.heartbeat", dur(a.GetHeartbeatTimeout()),
			"temporal.retry_policy", retryWords(a.GetRetryPolicy()))
		t.emit(e)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		a := ev.GetActivityTaskStartedEventAttributes()
		act := s.acts[a.GetScheduledEventId()]
		if act == nil {
			note(fmt.Sprintf("ActivityTaskStarted for event %d, which scheduled no activity", a.GetScheduledEventId()))
			return
		}
		t.attemptStarted(s, base, act, int(a.GetAttempt()), a.GetLastFailure(), at,
			attrs("temporal.worker", a.GetIdentity(), "temporal.request_id", a.GetRequestId()))
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		a := ev.GetActivityTaskCompletedEventAttributes()
		t.attemptFinished(s, base, a.GetScheduledEventId(), trace.OutcomeOK, "", payloadsJSON(a.GetResult()), "completed")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := ev.GetActivityTaskFailedEventAttributes()
		t.attemptFinished(s, base, a.GetScheduledEventId(), failureOutcome(a.GetFailure()), failureText(a.GetFailure()), nil, "failed")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := ev.GetActivityTaskTimedOutEventAttributes()
		t.attemptFinished(s, base, a.GetScheduledEventId(), trace.OutcomeTimeout, failureText(a.GetFailure()), nil, "timed out")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
		a := ev.GetActivityTaskCancelRequestedEventAttributes()
		e := base
		e.Kind, e.Text = trace.Noted, "cancellation requested"
		if act := s.acts[a.GetScheduledEventId()]; act != nil {
			e.Call, e.Tool = act.call, act.tool
			e.Text = "cancellation of " + act.tool + " requested"
		}
		t.emit(e)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		a := ev.GetActivityTaskCanceledEventAttributes()
		t.attemptFinished(s, base, a.GetScheduledEventId(), trace.OutcomeCancelled, "cancelled", nil, "cancelled")

	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		t.marker(s, base, ev.GetMarkerRecordedEventAttributes())

	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes()
		act := &activity{call: t.callID("child:", a.GetWorkflowId(), s.n, ev.GetEventId()), tool: a.GetWorkflowType().GetName(), scheduled: at}
		s.acts[ev.GetEventId()] = act
		e := base
		e.Kind, e.Call, e.Tool, e.Args, e.Turn = trace.CallScheduled, act.call, act.tool, payloadsJSON(a.GetInput()), s.turn
		e.MaxAttempts = int(a.GetRetryPolicy().GetMaximumAttempts())
		e.Attrs = attrs("temporal.kind", "child workflow", "temporal.workflow_id", a.GetWorkflowId(),
			"temporal.namespace", a.GetNamespace(), "temporal.task_queue", a.GetTaskQueue().GetName())
		t.emit(e)
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
		a := ev.GetChildWorkflowExecutionStartedEventAttributes()
		if act := s.acts[a.GetInitiatedEventId()]; act != nil {
			t.attemptStarted(s, base, act, 1, nil, at, attrs("temporal.run_id", a.GetWorkflowExecution().GetRunId()))
		}
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
		a := ev.GetStartChildWorkflowExecutionFailedEventAttributes()
		e := base
		e.Kind, e.Text = trace.Noted, "child workflow "+a.GetWorkflowId()+" did not start: "+a.GetCause().String()
		if act := s.acts[a.GetInitiatedEventId()]; act != nil {
			e.Call, e.Tool = act.call, act.tool
		}
		t.emit(e)
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
		a := ev.GetChildWorkflowExecutionCompletedEventAttributes()
		t.attemptFinished(s, base, a.GetInitiatedEventId(), trace.OutcomeOK, "", payloadsJSON(a.GetResult()), "completed")
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
		a := ev.GetChildWorkflowExecutionFailedEventAttributes()
		t.attemptFinished(s, base, a.GetInitiatedEventId(), trace.OutcomeError, failureText(a.GetFailure()), nil, "failed")
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
		a := ev.GetChildWorkflowExecutionTimedOutEventAttributes()
		t.attemptFinished(s, base, a.GetInitiatedEventId(), trace.OutcomeTimeout, "child workflow timed out", nil, "timed out")
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
		a := ev.GetChildWorkflowExecutionCanceledEventAttributes()
		t.attemptFinished(s, base, a.GetInitiatedEventId(), trace.OutcomeCancelled, "child workflow cancelled", nil, "cancelled")
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
		a := ev.GetChildWorkflowExecutionTerminatedEventAttributes()
		t.attemptFinished(s, base, a.GetInitiatedEventId(), trace.OutcomeError, "child workflow terminated", nil, "terminated")

	case enumspb.EVENT_TYPE_TIMER_STARTED:
		a := ev.GetTimerStartedEventAttributes()
		note("timer " + a.GetTimerId() + " started (" + dur(a.GetStartToFireTimeout()) + ")")
	case enumspb.EVENT_TYPE_TIMER_FIRED:
		id := ev.GetTimerFiredEventAttributes().GetTimerId()
		note("timer " + id + " fired")
		s.woke = append(s.woke, "timer "+id+" fired")
	case enumspb.EVENT_TYPE_TIMER_CANCELED:
		note("timer " + ev.GetTimerCanceledEventAttributes().GetTimerId() + " cancelled")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		a := ev.GetWorkflowExecutionSignaledEventAttributes()
		text := "signal " + a.GetSignalName() + " received"
		if in := payloadsJSON(a.GetInput()); len(in) > 0 {
			text += " " + string(in)
		}
		note(text)
		s.woke = append(s.woke, "signal "+a.GetSignalName())
	case enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		a := ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes()
		note("signal " + a.GetSignalName() + " sent to " + a.GetWorkflowExecution().GetWorkflowId())
	case enumspb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED:
		note("signal delivered to " + ev.GetExternalWorkflowExecutionSignaledEventAttributes().GetWorkflowExecution().GetWorkflowId())
	case enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
		a := ev.GetSignalExternalWorkflowExecutionFailedEventAttributes()
		note("signal to " + a.GetWorkflowExecution().GetWorkflowId() + " failed: " + a.GetCause().String())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
		note("cancellation of the workflow requested")
		s.woke = append(s.woke, "cancel request")
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes()
		note("update " + a.GetAcceptedRequest().GetInput().GetName() + " accepted")
		s.woke = append(s.woke, "update "+a.GetAcceptedRequest().GetInput().GetName())

	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		c, _ := closeOf(ev)
		t.closed(s, base, c.outcome, c.err, c.next, c.verb, c.result)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes()
		e := base
		e.Kind, e.Outcome, e.Text = trace.RunEnded, trace.OutcomeOK, "continued as new as run "+a.GetNewExecutionRunId()
		if !s.last {
			e.Text = "continued as new"
		}
		e.Attrs = attrs("temporal.new_run_id", a.GetNewExecutionRunId())
		t.emit(e)
	default:
		if Unknown(ev.GetEventType()) {
			// Decode and Validate let one through only when the server
			// marks it workerMayIgnore.
			text := fmt.Sprintf("skipped event %d, of a type this retrylab does not know", ev.GetEventId())
			if t := ev.GetEventType(); t != enumspb.EVENT_TYPE_UNSPECIFIED {
				text += fmt.Sprintf(" (%d)", int32(t))
			}
			note(text + ", which the server marks workerMayIgnore")
			return
		}
		// Known to the api, without a place in the model of its own:
		// shown by name on the timeline (search attributes, properties,
		// Nexus operations, ...).
		note(ev.GetEventType().String())
	}
}

func (t *translator) started(s *runState, base trace.Event, a *historypb.WorkflowExecutionStartedEventAttributes) {
	e := base
	e.Attrs = attrs("temporal.workflow_id", a.GetWorkflowId(), "temporal.run_id", s.runID,
		"temporal.task_queue", a.GetTaskQueue().GetName(), "temporal.first_run_id", a.GetFirstExecutionRunId())
	if s.n == 1 {
		e.Kind, e.Scenario = trace.ExecutionStarted, a.GetWorkflowType().GetName()
		e.Text = "Temporal"
		if rp := retryWords(a.GetRetryPolicy()); rp != "" {
			e.Text += ", workflow retry " + rp
		}
	} else {
		e.Kind = trace.RunStarted
	}
	t.emit(e)
	prev := a.GetContinuedExecutionRunId()
	var text string
	switch a.GetInitiator() {
	case enumspb.CONTINUE_AS_NEW_INITIATOR_RETRY:
		text = fmt.Sprintf("workflow attempt %d, a retry of run %s", a.GetAttempt(), prev)
		if prev == "" {
			text = fmt.Sprintf("workflow attempt %d, a retry of a run this history does not name", a.GetAttempt())
		}
		if f := failureText(a.GetContinuedFailure()); f != "" {
			text += ", which failed: " + f
		}
		if s.n == 1 {
			text += " (earlier attempts are runs not in this history)"
		}
	case enumspb.CONTINUE_AS_NEW_INITIATOR_WORKFLOW:
		text = "continued as new from run " + prev
		if prev == "" {
			text = "continued as new from a run this history does not name"
		}
	case enumspb.CONTINUE_AS_NEW_INITIATOR_CRON_SCHEDULE:
		text = "cron run after run " + prev
		if prev == "" {
			text = "cron run after a run this history does not name"
		}
	}
	if text != "" {
		n := base
		n.Kind, n.Text = trace.Noted, text
		t.emit(n)
	}
}

// attemptStarted reports the attempt Temporal kept, and the ones before it
// that it did not.
func (t *translator) attemptStarted(s *runState, base trace.Event, act *activity, n int, last *failurepb.Failure, at time.Time, a map[string]string) {
	if n < 1 {
		n = 1
	}
	rec := recordedBefore(s.recorded[act.id], n)
	if act.id != "" && rec != nil {
		// The interceptor recorded every attempt before the kept one.
		for _, r := range rec[:n-1] {
			t.recordedAttempt(base, act, r, true, last, r.Attempt == n-1)
		}
	} else if n > 1 {
		e := base
		e.Kind, e.Call, e.Tool, e.Attempt, e.Time = trace.AttemptsNotKept, act.call, act.tool, n, act.scheduled
		e.Error, e.Outcome = failureText(last), failureOutcome(last)
		e.Attrs = map[string]string{"temporal.not_kept": fmt.Sprintf("attempts 1-%d are not kept by Temporal", n-1)}
		t.emit(e)
	}
	// The kept attempt's own span, when recorded, gives its key and the
	// faults injected into it.
	var kept *Recorded
	for i, r := range s.recorded[act.id] {
		if act.id != "" && r.Attempt == n {
			a = withAttrs(a, "retrylab.span", r.SpanID)
			base.Key = r.Key
			kept = &s.recorded[act.id][i]
		}
	}
	act.attempt, act.started = n, at
	e := base
	e.Kind, e.Call, e.Tool, e.Attempt, e.Time, e.Attrs = trace.AttemptStarted, act.call, act.tool, n, at, a
	t.emit(e)
	if kept != nil {
		t.faults(e, act, *kept)
	}
}

// faults reports the faults retrylab injected into a recorded attempt (the
// worker interceptor's retrylab.faults), as a native trace does: the fold
// marks the attempt ⚡.
func (t *translator) faults(base trace.Event, act *activity, r Recorded) {
	for _, f := range r.Faults {
		e := base
		e.Kind, e.Call, e.Tool, e.Attempt, e.Fault, e.Text, e.Key, e.Attrs = trace.FaultInjected, act.call, act.tool, r.Attempt, f.Point, f.Source, "", nil
		e.Time = base.Time
		if !f.Time.IsZero() && f.Time.After(e.Time) {
			e.Time = f.Time
		}
		if e.Text == "" {
			e.Text = "recorded by the worker interceptor"
		}
		t.emit(e)
	}
}

// attemptFinished ends the started attempt of the activity or child
// scheduled by event id. When none started (a schedule-to-start timeout,
// a cancellation before a worker took it, a timeout during a retry's
// backoff), no attempt is invented: a note says what happened, and a
// failure carried as the cause shows that earlier attempts were not kept.
func (t *translator) attemptFinished(s *runState, base trace.Event, id int64, o trace.Outcome, errText string, result json.RawMessage, verb string) {
	act := s.acts[id]
	if act == nil {
		e := base
		e.Kind, e.Text = trace.Noted, fmt.Sprintf("an activity %s, but event %d scheduled none", verb, id)
		t.emit(e)
		return
	}
	s.woke = append(s.woke, act.tool+" "+verb)
	if act.attempt == 0 {
		e := base
		e.Kind, e.Call, e.Tool = trace.Noted, act.call, act.tool
		e.Text = fmt.Sprintf("%s %s before an attempt started", act.tool, verb)
		if errText != "" {
			e.Text += ": " + errText
		}
		t.emit(e)
		return
	}
	e := base
	e.Kind, e.Call, e.Tool, e.Attempt, e.Outcome, e.Error = trace.AttemptFinished, act.call, act.tool, act.attempt, o, errText
	if o == trace.OutcomeOK {
		e.Error = ""
	}
	if d := base.Time.Sub(act.started); d > 0 {
		e.Duration = d
	}
	if len(result) > 0 {
		e.Result = result
		e.Response = &trace.Exchange{Body: result}
	}
	t.emit(e)
}

// runClose is how a close event ends its run.
type runClose struct {
	outcome trace.Outcome
	err     string
	// next is the run that goes on (a retry, a cron run), "" when the
	// workflow ends here.
	next   string
	verb   string
	result json.RawMessage
}

// closeOf reads a workflow's close event; ok is false for any other event
// (continue-as-new included: it ends the run as a RunEnded).
func closeOf(ev *historypb.HistoryEvent) (c runClose, ok bool) {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		a := ev.GetWorkflowExecutionCompletedEventAttributes()
		return runClose{trace.OutcomeOK, "", a.GetNewExecutionRunId(), "completed", payloadsJSON(a.GetResult())}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		a := ev.GetWorkflowExecutionFailedEventAttributes()
		return runClose{trace.OutcomeError, failureText(a.GetFailure()), a.GetNewExecutionRunId(), "failed", nil}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		a := ev.GetWorkflowExecutionTimedOutEventAttributes()
		return runClose{trace.OutcomeTimeout, "workflow timed out", a.GetNewExecutionRunId(), "timed out", nil}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		return runClose{trace.OutcomeCancelled, "workflow cancelled", "", "cancelled", nil}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		a := ev.GetWorkflowExecutionTerminatedEventAttributes()
		return runClose{trace.OutcomeError, strings.TrimSpace("workflow terminated " + a.GetReason()), "", "terminated", nil}, true
	}
	return runClose{}, false
}

func (t *translator) closed(s *runState, base trace.Event, o trace.Outcome, errText, next, verb string, result json.RawMessage) {
	e := base
	e.Outcome, e.Error, e.Result = o, errText, result
	if next != "" {
		e.Kind = trace.RunEnded
		e.Text = verb + "; the workflow goes on as run " + next
		if o == trace.OutcomeError || o == trace.OutcomeTimeout {
			e.Text = verb + "; retried as run " + next
		}
		e.Attrs = attrs("temporal.new_run_id", next)
	} else {
		e.Kind = trace.ExecutionEnded
		e.Text = verb
	}
	t.emit(e)
}

// Local activity markers, as the Go and Java SDKs ("LocalActivity") and
// the Core-based SDKs ("core_local_activity": TypeScript, Python, .NET,
// Ruby) write them. The Go SDK and Core describe the call in
// details["data"] (Go: ActivityID, ActivityType, Attempt, Backoff; Core:
// activity_id, activity_type, attempt, backoff); the Java SDK in details of
// their own: "activityId", "type", "input", and "meta" holding the attempt
// ("atpt") and "backoff" (older versions: "attempt" and "backoff" beside
// the others). details["result"] or the marker's failure is the outcome of
// the attempt recorded; the attempts before it were not kept.
const (
	markerLocalActivityGo   = "LocalActivity"
	markerLocalActivityCore = "core_local_activity"
)

// localActivityData is the call a local activity marker describes, in any
// SDK's spelling (encoding/json matches the Go SDK's ActivityID to
// activityId).
type localActivityData struct {
	ActivityID       string `json:"activityId"`
	ActivityType     string `json:"activityType"`
	Attempt          int    `json:"attempt"`
	ActivityIDCore   string `json:"activity_id"`
	ActivityTypeCore string `json:"activity_type"`
}

// localActivity reads the marker's description of its call; args are the
// call's input when the SDK records it (Java).
func localActivity(a *historypb.MarkerRecordedEventAttributes) (id, typ string, attempt int, args json.RawMessage) {
	details := a.GetDetails()
	var d localActivityData
	if p := details["data"].GetPayloads(); len(p) > 0 {
		_ = json.Unmarshal(p[0].GetData(), &d)
	}
	id, typ, attempt = firstNonEmpty(d.ActivityID, d.ActivityIDCore), firstNonEmpty(d.ActivityType, d.ActivityTypeCore), d.Attempt
	// The Java SDK's details.
	var javaID, javaType string
	_ = json.Unmarshal(payloadsJSON(details["activityId"]), &javaID)
	_ = json.Unmarshal(payloadsJSON(details["type"]), &javaType)
	var meta struct {
		Attempt int `json:"atpt"`
	}
	_ = json.Unmarshal(payloadsJSON(details["meta"]), &meta)
	var javaAttempt int
	_ = json.Unmarshal(payloadsJSON(details["attempt"]), &javaAttempt)
	id, typ = firstNonEmpty(id, javaID), firstNonEmpty(typ, javaType)
	if attempt == 0 {
		attempt = max(meta.Attempt, javaAttempt)
	}
	// A failure names the activity too.
	for f := a.GetFailure(); f != nil; f = f.GetCause() {
		if ai := f.GetActivityFailureInfo(); ai != nil {
			id, typ = firstNonEmpty(id, ai.GetActivityId()), firstNonEmpty(typ, ai.GetActivityType().GetName())
			break
		}
	}
	return id, firstNonEmpty(typ, "local activity"), attempt, payloadsJSON(details["input"])
}

func (t *translator) marker(s *runState, base trace.Event, a *historypb.MarkerRecordedEventAttributes) {
	name := a.GetMarkerName()
	if name != markerLocalActivityGo && name != markerLocalActivityCore {
		text := "marker " + name
		var parts []string
		for k, p := range a.GetDetails() {
			if v := payloadsJSON(p); len(v) > 0 && len(v) <= 80 {
				parts = append(parts, k+"="+string(v))
			}
		}
		if len(parts) > 0 {
			sortStrings(parts)
			text += " " + strings.Join(parts, " ")
		}
		e := base
		e.Kind, e.Text = trace.Noted, text
		t.emit(e)
		return
	}
	id, typ, attempt, args := localActivity(a)
	act := &activity{call: t.callID("local:", id, s.n, eventID(base)), tool: typ, scheduled: base.Time}
	e := base
	e.Kind, e.Call, e.Tool, e.Args, e.Turn = trace.CallScheduled, act.call, act.tool, args, s.turn
	e.Attrs = attrs("temporal.kind", "local activity", "temporal.activity_id", id)
	t.emit(e)
	// The marker's failure is the recorded attempt's: what the attempts
	// before it (not kept) answered is not known.
	t.attemptStarted(s, base, act, attempt, nil, base.Time, attrs("temporal.kind", "local activity"))
	if f := a.GetFailure(); f != nil {
		e := base
		e.Kind, e.Call, e.Tool, e.Attempt, e.Outcome, e.Error = trace.AttemptFinished, act.call, act.tool, act.attempt, failureOutcome(f), failureText(f)
		if f.GetActivityFailureInfo() != nil && f.GetCause() != nil {
			// The activity failure wraps what the attempt answered.
			e.Outcome = failureOutcome(f.GetCause())
		}
		if w := retryStateWords(f); w != "" {
			e.Error += " (" + w + ")"
		}
		t.emit(e)
		return
	}
	e = base
	e.Kind, e.Call, e.Tool, e.Attempt, e.Outcome = trace.AttemptFinished, act.call, act.tool, act.attempt, trace.OutcomeOK
	if r := payloadsJSON(a.GetDetails()["result"]); len(r) > 0 {
		e.Result, e.Response = r, &trace.Exchange{Body: r}
	}
	t.emit(e)
}

// retryStateWords says why retries of an activity stopped, as the
// activity failure wrapping its last error says (the Java SDK's local
// activity markers carry one); "" when the failure does not say.
func retryStateWords(f *failurepb.Failure) string {
	switch f.GetActivityFailureInfo().GetRetryState() {
	case enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED:
		return "retries stopped: maximum attempts reached"
	case enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE:
		return "retries stopped: a non-retryable failure"
	case enumspb.RETRY_STATE_TIMEOUT:
		return "retries stopped: out of time"
	case enumspb.RETRY_STATE_RETRY_POLICY_NOT_SET:
		return "no retry policy"
	case enumspb.RETRY_STATE_CANCEL_REQUESTED:
		return "retries stopped: cancellation requested"
	}
	return ""
}

// ref names an event as evidence: "event 12" in the first run of a
// chain, "run 2 event 12" in later ones (each run numbers its events from 1).
func ref(run int, id int64) string {
	if run == 1 {
		return "event " + strconv.FormatInt(id, 10)
	}
	return "run " + strconv.Itoa(run) + " event " + strconv.FormatInt(id, 10)
}

// recordedBefore is the recorded attempts of an activity when they hold
// every attempt 1..n-1 (and maybe n), numbered without a hole; nil if not.
func recordedBefore(rs []Recorded, n int) []Recorded {
	if len(rs) < n-1 || n < 2 {
		return nil
	}
	for i := 0; i < n-1; i++ {
		if rs[i].Attempt != i+1 {
			return nil
		}
	}
	if len(rs) >= n && rs[n-1].Attempt != n {
		return rs[:n-1]
	}
	return rs
}

func withAttrs(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for k, v := range attrs(kv...) {
		out[k] = v
	}
	return out
}

func eventID(e trace.Event) int64 {
	i := strings.LastIndexByte(e.Ref, ' ')
	n, _ := strconv.ParseInt(e.Ref[i+1:], 10, 64)
	return n
}

// failureText is a failure in one line: its type (for application
// failures) or timeout kind, its message, and its causes'.
func failureText(f *failurepb.Failure) string {
	var parts []string
	for depth := 0; f != nil && depth < 5; depth, f = depth+1, f.GetCause() {
		msg := f.GetMessage()
		if ti := f.GetTimeoutFailureInfo(); ti != nil {
			msg = timeoutWords(ti.GetTimeoutType())
		} else if ai := f.GetApplicationFailureInfo(); ai != nil && ai.GetType() != "" {
			msg = ai.GetType() + ": " + msg
		}
		if msg = strings.TrimSpace(strings.ReplaceAll(msg, "\n", " ")); msg != "" {
			parts = append(parts, msg)
		}
	}
	return strings.Join(parts, ": ")
}

// failureOutcome is the outcome a failure stands for: a timeout or a
// cancellation (the caller never learnt what the attempt did), else an
// error; "" when there is no failure to go by.
func failureOutcome(f *failurepb.Failure) trace.Outcome {
	switch {
	case f == nil:
		return ""
	case f.GetTimeoutFailureInfo() != nil:
		return trace.OutcomeTimeout
	case f.GetCanceledFailureInfo() != nil:
		return trace.OutcomeCancelled
	}
	// An application failure typed with one of retrylab's outcomes (as the
	// demo agents' activities on Temporal type theirs) keeps it.
	switch o := trace.Outcome(f.GetApplicationFailureInfo().GetType()); o {
	case trace.OutcomeTimeout, trace.OutcomeConflict, trace.OutcomeMismatch, trace.OutcomeRejected:
		return o
	}
	return trace.OutcomeError
}

func timeoutWords(tt enumspb.TimeoutType) string {
	switch tt {
	case enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
		return "start-to-close timeout"
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		return "schedule-to-start timeout"
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
		return "schedule-to-close timeout"
	case enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return "heartbeat timeout"
	}
	return "timeout"
}

func retryWords(rp *commonpb.RetryPolicy) string {
	if rp == nil {
		return ""
	}
	max := "unlimited attempts"
	if n := rp.GetMaximumAttempts(); n > 0 {
		max = fmt.Sprintf("at most %d attempts", n)
	}
	return fmt.Sprintf("%s, backoff %s x%g up to %s", max, dur(rp.GetInitialInterval()), rp.GetBackoffCoefficient(), dur(rp.GetMaximumInterval()))
}

func dur(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	return durtext.Text(d.AsDuration())
}

// attrs builds an attribute map from key, value pairs, leaving out empty
// values and zero durations.
func attrs(kv ...string) map[string]string {
	var m map[string]string
	for i := 0; i+1 < len(kv); i += 2 {
		if v := kv[i+1]; v != "" && v != "0s" {
			if m == nil {
				m = make(map[string]string, len(kv)/2)
			}
			m[kv[i]] = v
		}
	}
	return m
}

// payloadsJSON shows payloads as JSON: one payload as its value, several as
// an array. JSON payloads are themselves; null is null; anything else
// (binary, protobuf, encrypted) is described, not decoded.
func payloadsJSON(p *commonpb.Payloads) json.RawMessage {
	ps := p.GetPayloads()
	switch len(ps) {
	case 0:
		return nil
	case 1:
		return payloadJSON(ps[0])
	}
	var b []byte
	b = append(b, '[')
	for i, x := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, payloadJSON(x)...)
	}
	return append(b, ']')
}

func payloadJSON(p *commonpb.Payload) json.RawMessage {
	enc := string(p.GetMetadata()["encoding"])
	data := p.GetData()
	switch enc {
	case "json/plain", "json/protobuf":
		if json.Valid(data) {
			return json.RawMessage(data)
		}
	case "binary/null":
		return json.RawMessage("null")
	case "binary/plain":
		if len(data) <= 256 {
			b, _ := json.Marshal(map[string]string{"encoding": enc, "base64": base64.StdEncoding.EncodeToString(data)})
			return b
		}
	}
	b, _ := json.Marshal(map[string]any{"encoding": enc, "bytes": len(data)})
	return b
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func sortStrings(ss []string) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j] < ss[j-1]; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}
