package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/otlp"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/agentflow"
)

// liveNarrator tells what happens in a demo agent's workflow as it
// happens, in the tagged lines of 'retrylab run': from the history as the
// cluster commits it ([agent] a tool call scheduled, [temporal] an activity
// closed, the workflow's end), from each attempt's spans as the worker
// interceptor sends them ([tool] started, ended; [fault] what retrylab
// injected), and from the world ([mail-api], [crm]). Its methods are called
// from the history follower, the OTLP receiver's requests and the world's
// notices, concurrently; each line is written whole, in the order the
// narrator learnt of it.
type liveNarrator struct {
	mu  sync.Mutex
	out io.Writer
	// exec and runID name the workflow run once it started; world
	// notices that come before are held in pending.
	exec, runID string
	world       *narrate.Narrator
	pending     []notice.Notice
	notices     <-chan notice.Notice
	// observe, when set, sees what the world does (tests), as it is told.
	observe func(world.Activity)
	// steps names the scenario step of each activity id, from the history.
	steps map[string]string
	// told is what was said of each attempt.
	told map[attemptRef]*toldAttempt
	// told is the last history event told (events are told once, in
	// order, from the follower's batches or from fetch).
	toldEvent int64
	// fetch, when set, reads the run's history as committed so far: an
	// attempt of an activity whose scheduling the follower has not brought
	// yet is told after it (the scheduling is committed before any attempt
	// can start).
	fetch func() (*historypb.History, error)
}

type attemptRef struct {
	activity string
	n        int
}

type toldAttempt struct {
	started, ended bool
	faults         int
}

func newLiveNarrator(out io.Writer) *liveNarrator {
	return &liveNarrator{out: out, steps: map[string]string{}, told: map[attemptRef]*toldAttempt{}}
}

func (n *liveNarrator) line(tag, text string) {
	fmt.Fprintf(n.out, "%-11s %s\n", "["+tag+"]", text)
}

// started names the workflow run, and how to read its history; world
// notices of it held so far are told.
func (n *liveNarrator) started(runID string, fetch func() (*historypb.History, error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runID, n.exec, n.fetch = runID, agentflow.AttributedExecution(runID), fetch
	n.world = narrate.New(n.exec)
	for _, no := range n.pending {
		n.tell(no)
	}
	n.pending = nil
}

// spansExecution is the OTLP execution the run's attempt spans are stored
// under ("" before the run started).
func (n *liveNarrator) spansExecution() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runID == "" {
		return ""
	}
	return otlp.ExecutionID("", rltemporal.SpanConversation(n.runID))
}

// execution is the execution the run's history is stored under ("" before
// the run started).
func (n *liveNarrator) execution() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exec
}

// worldNotice tells what the world did for the run.
func (n *liveNarrator) worldNotice(no notice.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notice(no)
	n.drain()
}

// follow tells the world's notices as they come, until ch closes. The
// other narration points drain ch first too, so what the world did is told
// before the attempt that made it ends.
func (n *liveNarrator) follow(ch <-chan notice.Notice) {
	n.mu.Lock()
	n.notices = ch
	n.mu.Unlock()
	for no := range ch {
		n.worldNotice(no)
	}
}

// Write writes p whole among the narration's lines, after the world's
// notices already waiting (what a worker did before it died is told before
// its death).
func (n *liveNarrator) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drain()
	return n.out.Write(p)
}

// drain tells the world's notices already waiting.
func (n *liveNarrator) drain() {
	for {
		select {
		case no, ok := <-n.notices:
			if !ok {
				return
			}
			n.notice(no)
		default:
			return
		}
	}
}

func (n *liveNarrator) notice(no notice.Notice) {
	if no.Activity == nil {
		return
	}
	if n.observe != nil {
		n.observe(*no.Activity)
	}
	if n.world == nil {
		n.pending = append(n.pending, no)
		return
	}
	n.tell(no)
}

func (n *liveNarrator) tell(no notice.Notice) {
	for _, l := range n.world.Lines(no) {
		fmt.Fprintln(n.out, l)
	}
}

// history tells the events of h the narrator has not told yet.
func (n *liveNarrator) history(h *historypb.History) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drain()
	n.tellHistory(h.GetEvents())
}

func (n *liveNarrator) tellHistory(evs []*historypb.HistoryEvent) {
	for _, ev := range evs {
		if ev.GetEventId() <= n.toldEvent {
			continue
		}
		n.toldEvent = ev.GetEventId()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			var in []agentflow.Call
			var args map[string]any
			step := ""
			if p := a.GetInput().GetPayloads(); len(p) == 1 && json.Unmarshal(p[0].GetData(), &in) == nil && len(in) == 1 {
				step = in[0].Step
				_ = json.Unmarshal(in[0].Args, &args)
			} else if len(p) == 1 {
				var one agentflow.Call
				if json.Unmarshal(p[0].GetData(), &one) == nil {
					step = one.Step
					_ = json.Unmarshal(one.Args, &args)
				}
			}
			n.steps[a.GetActivityId()] = step
			n.line("agent", fmt.Sprintf("%s: %s(%s), activity %s", orNone(step), a.GetActivityType().GetName(), narrate.Args(args), a.GetActivityId()))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			n.line("temporal", "activity "+n.activityOf(evs, ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())+" completed")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := ev.GetActivityTaskFailedEventAttributes()
			n.line("temporal", fmt.Sprintf("activity %s failed, no more retries: %s", n.activityOf(evs, a.GetScheduledEventId()), a.GetFailure().GetMessage()))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			a := ev.GetActivityTaskTimedOutEventAttributes()
			n.line("temporal", fmt.Sprintf("activity %s timed out, no more retries: %s", n.activityOf(evs, a.GetScheduledEventId()), a.GetFailure().GetMessage()))
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			n.line("temporal", "workflow completed")
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			n.line("temporal", "✖ workflow failed: "+ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			n.line("temporal", "✖ workflow "+strings.ToLower(strings.TrimPrefix(ev.GetEventType().String(), "WorkflowExecution")))
		}
	}
}

// activityOf names the activity scheduled by event id.
func (n *liveNarrator) activityOf(evs []*historypb.HistoryEvent, scheduled int64) string {
	if i := int(scheduled) - 1; i >= 0 && i < len(evs) {
		if a := evs[i].GetActivityTaskScheduledEventAttributes(); a != nil {
			return a.GetActivityId() + " (" + a.GetActivityType().GetName() + ")"
		}
	}
	return fmt.Sprintf("of event %d", scheduled)
}

// spans tells what the run's attempt spans stored so far add: attempts
// started, faults taken, attempts ended.
func (n *liveNarrator) spans(db *store.DB) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runID == "" {
		return nil
	}
	n.drain()
	var rec map[string][]rltemporal.Recorded
	if err := db.View(func(tx *store.Tx) error {
		var err error
		rec, err = rltemporal.RecordedAttempts(tx, n.runID)
		return err
	}); err != nil {
		return err
	}
	ids := make([]string, 0, len(rec))
	unknown := false
	for id := range rec {
		ids = append(ids, id)
		_, known := n.steps[id]
		unknown = unknown || !known
	}
	if unknown && n.fetch != nil {
		if h, err := n.fetch(); err == nil {
			n.tellHistory(h.GetEvents())
		}
	}
	sort.Slice(ids, func(i, j int) bool { return activityLess(ids[i], ids[j]) })
	for _, id := range ids {
		for _, r := range rec[id] {
			ref := attemptRef{id, r.Attempt}
			t := n.told[ref]
			if t == nil {
				t = &toldAttempt{}
				n.told[ref] = t
			}
			of := n.attemptName(id, r)
			if !t.started {
				// A later attempt started: one before it that never ended
				// died with its worker.
				for _, prev := range rec[id] {
					if p := n.told[attemptRef{id, prev.Attempt}]; prev.Attempt < r.Attempt && p != nil && p.started && !p.ended && !prev.Ended() {
						p.ended = true
						n.line("tool", fmt.Sprintf("%s attempt %d of %s: started, no end recorded (its worker died?)",
							trace.MarkKilled.Glyph(), prev.Attempt, n.attemptName(id, prev)))
					}
				}
				t.started = true
				line := fmt.Sprintf("attempt %d of %s", r.Attempt, of)
				if r.Worker != "" {
					line += " on worker " + r.Worker
				}
				n.line("tool", line)
			}
			for _, f := range r.Faults[t.faults:] {
				n.line("fault", fmt.Sprintf("%s %s on %s attempt %d (%s)", trace.MarkFault.Glyph(), fault.Point(f.Point).Describe(),
					n.stepOr(id), r.Attempt, orNone(f.Source)))
			}
			t.faults = len(r.Faults)
			if r.Ended() && !t.ended {
				t.ended = true
				mark := trace.MarkOK
				switch r.Outcome {
				case trace.OutcomeTimeout:
					mark = trace.MarkTimeout
				case trace.OutcomeOK:
				default:
					mark = trace.MarkFailed
				}
				line := fmt.Sprintf("%s attempt %d of %s: %s after %s", mark.Glyph(), r.Attempt, of, r.Outcome, r.End.Sub(r.Start).Round(time.Millisecond))
				if r.Error != "" {
					line += " — " + r.Error
				}
				if r.Key != "" {
					line += "  Idempotency-Key: " + r.Key
				}
				n.line("tool", line)
			}
		}
	}
	return nil
}

// attemptName is "send_invoice_email (activity 5, step-4)", with what is
// known of it.
func (n *liveNarrator) attemptName(id string, r rltemporal.Recorded) string {
	name := "activity " + id
	if step := n.steps[id]; step != "" {
		name += ", " + step
	}
	if r.Tool == "" {
		return name
	}
	return r.Tool + " (" + name + ")"
}

func (n *liveNarrator) stepOr(id string) string {
	if step := n.steps[id]; step != "" {
		return step
	}
	return "activity " + id
}

// activityLess orders activity ids numerically where they are numbers
// (Temporal's default ids), else as text.
func activityLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}
