// Package tracetest holds histories for the tests of the fold's streaming
// readers (engine/trace's Walk, the OTLP export, the Markdown handout),
// which check that what they write while a history is read is what they
// write from the whole fold.
package tracetest

import (
	"time"

	"github.com/retrylab/retrylab/engine/history"
)

// Interleaved is a history whose events interleave as a streaming reader
// must sort out: concurrent copies of a call whose answers and retries
// come after the other copy's next attempt began, two calls in flight, an
// effect, a journal record, a crash with attempts open, a second run with
// a replay, a record that comes before the retry of a concurrent copy, a
// timeout, a record deleted by hand, and the end. It starts at start and
// ends at end, in run 1 then 2.
func Interleaved() (evs []history.Event, start, end time.Time) {
	t0 := time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)
	seq := uint64(0)
	at := t0
	ev := func(e history.Event) history.Event {
		seq++
		at = at.Add(100 * time.Millisecond)
		e.Seq, e.Time = seq, at
		if e.Run == 0 {
			e.Run = 1
		}
		return e
	}
	req := &history.Exchange{Method: "POST", URL: "/v1/send"}
	evs = []history.Event{
		ev(history.Event{Type: history.ExecutionStarted, Scenario: "mix", Text: "keys"}),
		ev(history.Event{Type: history.WorkerStarted, PID: 7}),
		ev(history.Event{Type: history.TurnStarted, Turn: 1, Text: "go"}),
		ev(history.Event{Type: history.ToolCallScheduled, Step: "s1", Tool: "send", Turn: 1}),
		ev(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: 1, Request: req, Key: "k"}),
		ev(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: 2, Request: req, Key: "k"}),
		ev(history.Event{Type: history.FaultInjected, Step: "s1", Attempt: 1, Fault: "server-error", Text: "plan"}),
		ev(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: 2, Outcome: history.OutcomeConflict}),
		ev(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: 3, Request: req, Key: "k"}),
		ev(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: 1, Outcome: history.OutcomeError}),
		ev(history.Event{Type: history.ToolCallScheduled, Step: "s2", Tool: "upsert", Turn: 1}),
		ev(history.Event{Type: history.RetryScheduled, Step: "s1", Attempt: 1, Delay: time.Second}),
		ev(history.Event{Type: history.AttemptStarted, Step: "s2", Attempt: 1, Request: req}),
		ev(history.Event{Type: history.AttemptFinished, Step: "s1", Attempt: 3, Outcome: history.OutcomeOK}),
		ev(history.Event{Type: history.AttemptStarted, Step: "s1", Attempt: 4, Request: req, Key: "k"}),
		ev(history.Event{Type: history.EffectObserved, Step: "s2", Attempt: 1, Effect: &history.Effect{Service: "crm", ID: "r1"}}),
		ev(history.Event{Type: history.StepRecorded, Step: "s1", Tool: "send", Attempt: 3, Result: []byte(`{"id":"m1"}`)}),
		ev(history.Event{Type: history.WorkerCrashed, ExitCode: 137, Error: "killed from outside"}),
		ev(history.Event{Type: history.WorkerStarted, Run: 2, PID: 8}),
		ev(history.Event{Type: history.TurnStarted, Run: 2, Turn: 1, Text: "again"}),
		ev(history.Event{Type: history.StepReplayed, Run: 2, Step: "s1", Tool: "send", ResultRun: 1}),
		ev(history.Event{Type: history.ToolCallScheduled, Run: 2, Step: "s2", Tool: "upsert", Turn: 1}),
		ev(history.Event{Type: history.AttemptStarted, Run: 2, Step: "s2", Attempt: 2, Request: req}),
		ev(history.Event{Type: history.AttemptFinished, Run: 2, Step: "s2", Attempt: 2, Outcome: history.OutcomeOK}),
		ev(history.Event{Type: history.StepRecorded, Run: 2, Step: "s2", Tool: "upsert", Attempt: 2}),
		ev(history.Event{Type: history.TurnStarted, Run: 2, Turn: 2, Text: "and then"}),
		// Concurrent copies of s4: the record comes between the 409 of
		// one copy and its retry, which is the call's last attempt.
		ev(history.Event{Type: history.ToolCallScheduled, Run: 2, Step: "s4", Tool: "send", Turn: 2}),
		ev(history.Event{Type: history.AttemptStarted, Run: 2, Step: "s4", Attempt: 1, Request: req, Key: "k4"}),
		ev(history.Event{Type: history.AttemptStarted, Run: 2, Step: "s4", Attempt: 2, Request: req, Key: "k4"}),
		ev(history.Event{Type: history.AttemptFinished, Run: 2, Step: "s4", Attempt: 2, Outcome: history.OutcomeConflict}),
		ev(history.Event{Type: history.RetryScheduled, Run: 2, Step: "s4", Attempt: 2, Delay: 100 * time.Millisecond}),
		ev(history.Event{Type: history.AttemptFinished, Run: 2, Step: "s4", Attempt: 1, Outcome: history.OutcomeOK}),
		ev(history.Event{Type: history.StepRecorded, Run: 2, Step: "s4", Tool: "send", Attempt: 1, Result: []byte(`{"id":"m4"}`)}),
		ev(history.Event{Type: history.AttemptStarted, Run: 2, Step: "s4", Attempt: 3, Request: req, Key: "k4"}),
		ev(history.Event{Type: history.AttemptFinished, Run: 2, Step: "s4", Attempt: 3, Outcome: history.OutcomeOK, Deduplicated: true}),
		ev(history.Event{Type: history.ToolCallScheduled, Run: 2, Step: "s3", Tool: "send", Turn: 2}),
		ev(history.Event{Type: history.AttemptStarted, Run: 2, Step: "s3", Attempt: 1, Request: req, Key: "k3"}),
		ev(history.Event{Type: history.AttemptFinished, Run: 2, Step: "s3", Attempt: 1, Outcome: history.OutcomeTimeout}),
		ev(history.Event{Type: history.JournalDeleted, Run: 2, Step: "s1"}),
		ev(history.Event{Type: history.ExecutionFailed, Run: 2, Error: "gave up"}),
	}
	return evs, t0, at
}
