package trace

import (
	"strconv"

	"github.com/retrylab/retrylab/engine/history"
)

// This file adapts retrylab's own history to the fold. The dependency goes
// one way: trace imports engine/history (which imports only the store), so
// history never knows the fold, and an importer of other sources (OTLP,
// Temporal) depends on trace alone.

var kindOf = map[history.Type]Kind{
	history.ExecutionStarted:   ExecutionStarted,
	history.WorkerStarted:      RunStarted,
	history.TurnStarted:        TurnStarted,
	history.ToolCallScheduled:  CallScheduled,
	history.AttemptStarted:     AttemptStarted,
	history.AttemptFinished:    AttemptFinished,
	history.RetryScheduled:     RetryScheduled,
	history.StepRecorded:       StepRecorded,
	history.StepReplayed:       StepReplayed,
	history.FaultInjected:      FaultInjected,
	history.WorkerCrashed:      RunCrashed,
	history.Escalated:          Escalated,
	history.JournalDeleted:     JournalDeleted,
	history.ExecutionCompleted: ExecutionEnded,
	history.ExecutionFailed:    ExecutionEnded,
	history.EffectObserved:     EffectObserved,
}

// seqRefs are the Refs of the first events of every history, made once:
// a history's events are numbered from 1, and a check folds a million
// short histories. Never written after the package loads.
var seqRefs = func() (refs [256]string) {
	for i := range refs {
		refs[i] = "seq " + strconv.Itoa(i)
	}
	return refs
}()

// seqRef is an event's Ref: "seq " and its sequence number.
func seqRef(seq uint64) string {
	if seq < uint64(len(seqRefs)) {
		return seqRefs[seq]
	}
	return "seq " + strconv.FormatUint(seq, 10)
}

// FromHistory translates one event of retrylab's history. ok is false for
// an event the fold has no use for (StepCompleted, unknown types).
func FromHistory(ev history.Event) (Event, bool) {
	k, ok := kindOf[ev.Type]
	if !ok {
		return Event{}, false
	}
	e := Event{Seq: ev.Seq, Kind: k, Time: ev.Time, Ref: seqRef(ev.Seq), Run: ev.Run, Turn: ev.Turn,
		Text: ev.Text, Scenario: ev.Scenario, Call: ev.Step, Tool: ev.Tool, Args: ev.Args, Key: ev.Key, Attempt: ev.Attempt,
		MaxAttempts: ev.MaxAttempts, Outcome: Outcome(ev.Outcome), Deduplicated: ev.Deduplicated, Duration: ev.Duration,
		Delay: ev.Delay, Request: exchange(ev.Request), Response: exchange(ev.Response), Result: ev.Result,
		ResultRun: ev.ResultRun, Fault: ev.Fault, PlanIndex: ev.Plan, ExitCode: ev.ExitCode, PID: ev.PID, Error: ev.Error}
	switch ev.Type {
	case history.ExecutionCompleted:
		e.Outcome = OutcomeOK
	case history.ExecutionFailed:
		e.Outcome = OutcomeError
	case history.EffectObserved:
		if ev.Effect != nil {
			e.Effect = &Effect{Service: ev.Effect.Service, ID: ev.Effect.ID, Target: ev.Effect.Target,
				Summary: ev.Effect.Summary, Version: ev.Effect.Version}
		}
	}
	return e, true
}

func exchange(x *history.Exchange) *Exchange {
	if x == nil {
		return nil
	}
	return &Exchange{Method: x.Method, URL: x.URL, Status: x.Status, Headers: x.Headers, Body: x.Body}
}

// ApplyHistory folds one event of retrylab's history; events the fold has
// no use for still advance LastSeq, so a gap check stays exact.
func (t *Trace) ApplyHistory(ev history.Event) {
	e, ok := FromHistory(ev)
	if !ok {
		if t.LastSeq != 0 && ev.Seq != t.LastSeq+1 {
			t.jump(ev.Seq, ev.Step)
		}
		if ev.Seq > t.LastSeq {
			t.LastSeq = ev.Seq
		}
		return
	}
	t.Apply(e)
}

// FoldHistory folds a whole history of retrylab's.
func FoldHistory(execution string, events []history.Event) *Trace {
	t := New(execution)
	for _, ev := range events {
		t.ApplyHistory(ev)
	}
	return t
}
