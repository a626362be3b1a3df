package history

import (
	"strconv"

	"github.com/retrylab/retrylab/engine/trace"
)

// This file adapts retrylab's own history to the fold. The dependency goes
// one way: history imports engine/trace, which imports nothing of
// retrylab, so the fold knows no source and every source (this history,
// OTLP, Temporal) is an adapter to trace.Event.

var kindOf = map[Type]trace.Kind{
	ExecutionStarted:   trace.ExecutionStarted,
	WorkerStarted:      trace.RunStarted,
	TurnStarted:        trace.TurnStarted,
	ToolCallScheduled:  trace.CallScheduled,
	AttemptStarted:     trace.AttemptStarted,
	AttemptFinished:    trace.AttemptFinished,
	RetryScheduled:     trace.RetryScheduled,
	StepRecorded:       trace.StepRecorded,
	StepReplayed:       trace.StepReplayed,
	FaultInjected:      trace.FaultInjected,
	WorkerCrashed:      trace.RunCrashed,
	Escalated:          trace.Escalated,
	JournalDeleted:     trace.JournalDeleted,
	ExecutionCompleted: trace.ExecutionEnded,
	ExecutionFailed:    trace.ExecutionEnded,
	EffectObserved:     trace.EffectObserved,
	ClockMoved:         trace.ClockMoved,
	KeyExpired:         trace.KeyExpired,
	Paced:              trace.Paced,
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

// TraceEvent translates one event of retrylab's history into the fold's
// input. ok is false for an event the fold has no use for (StepCompleted,
// unknown types).
func TraceEvent(ev Event) (trace.Event, bool) {
	k, ok := kindOf[ev.Type]
	if !ok {
		return trace.Event{}, false
	}
	e := trace.Event{Seq: ev.Seq, Kind: k, Time: ev.Time, Ref: seqRef(ev.Seq), Run: ev.Run, Turn: ev.Turn,
		Text: ev.Text, Scenario: ev.Scenario, Call: ev.Step, Tool: ev.Tool, Args: ev.Args, Key: ev.Key, Attempt: ev.Attempt,
		MaxAttempts: ev.MaxAttempts, Outcome: trace.Outcome(ev.Outcome), Deduplicated: ev.Deduplicated, Duration: ev.Duration,
		Delay: ev.Delay, Request: exchange(ev.Request), Response: exchange(ev.Response), Result: ev.Result,
		ResultRun: ev.ResultRun, Fault: ev.Fault, PlanIndex: ev.Plan, ExitCode: ev.ExitCode, PID: ev.PID, Error: ev.Error, Offset: ev.Offset}
	switch ev.Type {
	case ExecutionCompleted:
		e.Outcome = trace.OutcomeOK
	case ExecutionFailed:
		e.Outcome = trace.OutcomeError
	case EffectObserved:
		if ev.Effect != nil {
			e.Effect = &trace.Effect{Service: ev.Effect.Service, ID: ev.Effect.ID, Target: ev.Effect.Target,
				Summary: ev.Effect.Summary, Version: ev.Effect.Version}
		}
	}
	return e, true
}

func exchange(x *Exchange) *trace.Exchange {
	if x == nil {
		return nil
	}
	return &trace.Exchange{Method: x.Method, URL: x.URL, Status: x.Status, Headers: x.Headers, Body: x.Body}
}

// Apply folds one event of retrylab's history into t; events the fold has
// no use for still advance its LastSeq (trace.Trace.Skip), so a gap check
// stays exact.
func Apply(t *trace.Trace, ev Event) {
	e, ok := TraceEvent(ev)
	if !ok {
		t.Skip(ev.Seq, ev.Step)
		return
	}
	t.Apply(e)
}

// Fold folds a whole history of retrylab's.
func Fold(execution string, events []Event) *trace.Trace {
	t := trace.New(execution)
	for _, ev := range events {
		Apply(t, ev)
	}
	return t
}
