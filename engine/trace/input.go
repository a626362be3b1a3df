// Package trace is retrylab's one model of an execution's trace: the fold
// that every reader (the explorer, show, check, the handout, the audit, diff,
// the runtime's rebuild) uses to turn events from somewhere into what a
// person sees: execution -> runs -> turns -> tool calls -> attempts, each
// attempt with its faults, outcome, retry, dedup, replay, crash, ambiguity
// and the effects it caused.
//
// The fold is fed one Event at a time (Apply). Events are deliberately
// small and source-neutral: retrylab's own history is adapted into them,
// and so are OpenTelemetry spans and Temporal workflow histories. An
// adapter translates; it never decides markers or outcomes: the fold does.
package trace

import (
	"encoding/json"
	"time"
)

// Kind says what an Event reports.
type Kind string

// The kinds of input event. Each lists the fields it uses besides Kind,
// Time and Ref; Seq is the event's position in its source, ascending.
const (
	// ExecutionStarted opens the trace. Text: the policy in words;
	// Scenario: what ran (a scenario, a service, a workflow type).
	ExecutionStarted Kind = "execution.started"
	// RunStarted: a worker lifetime began (Run, PID). Runs separate the
	// gaps where nothing ran.
	RunStarted Kind = "run.started"
	// RunCrashed: the worker died (Run, ExitCode, Fault, Error). Attempts
	// of this run without an answer end as crashed.
	RunCrashed Kind = "run.crashed"
	// TurnStarted: the agent began a turn (Run, Turn, Text).
	TurnStarted Kind = "turn.started"
	// CallScheduled: a tool call (Call, Tool, Args, Key, Text: the tool's
	// safety kind when known).
	CallScheduled Kind = "call.scheduled"
	// AttemptStarted: one try of a call (Call, Attempt, MaxAttempts, Key,
	// Request).
	AttemptStarted Kind = "attempt.started"
	// AttemptFinished: its answer (Call, Attempt, Outcome, Status,
	// Deduplicated, Duration, Response, Error).
	AttemptFinished Kind = "attempt.finished"
	// AttemptsNotKept: the source kept only attempt Attempt of Call; the
	// attempts before it happened but left no record (Temporal). Error is
	// the last failure, which belongs to attempt Attempt-1; Outcome is its
	// kind when the source says (a timeout), else an error.
	AttemptsNotKept Kind = "attempts.not-kept"
	// FaultInjected: retrylab injected Fault into (Call, Attempt); Planned
	// when the scenario's fault plan asked for it (PlanIndex >= 1).
	FaultInjected Kind = "fault.injected"
	// RetryScheduled: the policy will try (Call, Attempt+1) after Delay.
	RetryScheduled Kind = "retry.scheduled"
	// StepRecorded: the call's result is durably recorded (Call, Result).
	StepRecorded Kind = "step.recorded"
	// StepReplayed: the call was answered from the journal, no request
	// sent (Call, Tool, Result, ResultRun, Text: "decision" when the
	// recorded arguments, not a result, were reused).
	StepReplayed Kind = "step.replayed"
	// Escalated: an unsafe call's outcome is unknown (Call, Error).
	Escalated Kind = "escalated"
	// JournalDeleted: a person deleted the call's journal record (Call).
	JournalDeleted Kind = "journal.deleted"
	// ExecutionEnded: the execution finished (Outcome: OutcomeOK for
	// completed, else failed; Error).
	ExecutionEnded Kind = "execution.ended"
	// EffectObserved: a provider did something attributed to (Call,
	// Attempt): Effect says what.
	EffectObserved Kind = "effect.observed"
	// Noted: something on the timeline that is neither a call nor an
	// attempt (Text; Call when it concerns one): a timer, a signal, a
	// marker, a workflow task that failed (Temporal).
	Noted Kind = "noted"
	// RunEnded: the run ended and the execution goes on in another
	// (Temporal's continue-as-new, a workflow retry): Outcome, Text, Error.
	RunEnded Kind = "run.ended"
	// ClockMoved: the clock the providers keep (retrylab's world clock)
	// was moved forward by Duration; Offset is how far it runs ahead of
	// real time after the move. Keys expire on that clock.
	ClockMoved Kind = "clock.moved"
	// KeyExpired: the provider forgot idempotency key Key, stored by
	// (Call, Attempt) of Run, when the clock moved past its retention
	// (Duration): a retry with it executes again.
	KeyExpired Kind = "key.expired"
	// Paced: the worker waited Delay on purpose before attempt (Call,
	// Attempt), in slow motion, so a room can follow the run.
	Paced Kind = "paced"
)

// Outcome is how an attempt (or an execution) ended.
type Outcome string

// Outcomes.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeTimeout   Outcome = "timeout"
	OutcomeError     Outcome = "error"
	OutcomeConflict  Outcome = "conflict"  // 409: the same key still in flight
	OutcomeMismatch  Outcome = "mismatch"  // 422: the same key, another payload
	OutcomeRejected  Outcome = "rejected"  // another 4xx
	OutcomeCancelled Outcome = "cancelled" // cancelled without a result: ambiguous
)

// Exchange is one request or response as the trace shows it.
type Exchange struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// Effect is something a provider did: a message delivered, a record
// written. Target is who or what it reached (a recipient, a record id).
type Effect struct {
	Service string `json:"service"` // "mail", "crm", or the tool for inferred effects
	ID      string `json:"id"`
	Target  string `json:"target,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Version is a written row's version after the write, when known.
	Version int `json:"version,omitempty"`
	// At is when the effect was observed: the time of its EffectObserved
	// event, set by the fold (zero when the source gave none).
	At time.Time `json:"-"`
}

// Event is one input of the fold. Fields are filled according to Kind.
type Event struct {
	Seq  uint64    `json:"seq"`
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time"`
	// Ref names the event in its source, as evidence: "seq 12", a span
	// id, a Temporal event id.
	Ref string `json:"ref,omitempty"`

	Run      int    `json:"run,omitempty"`
	Turn     int    `json:"turn,omitempty"`
	Text     string `json:"text,omitempty"`
	Scenario string `json:"scenario,omitempty"`

	// Call identifies a tool call within the execution (a step id, a
	// tool-call id, an activity id).
	Call        string          `json:"call,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	Key         string          `json:"key,omitempty"`
	Attempt     int             `json:"attempt,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`

	Outcome      Outcome         `json:"outcome,omitempty"`
	Deduplicated bool            `json:"deduplicated,omitempty"`
	Duration     time.Duration   `json:"duration,omitempty"`
	Delay        time.Duration   `json:"delay,omitempty"`
	Request      *Exchange       `json:"request,omitempty"`
	Response     *Exchange       `json:"response,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultRun    int             `json:"result_run,omitempty"`

	Fault     string `json:"fault,omitempty"`
	PlanIndex int    `json:"plan,omitempty"`
	ExitCode  int    `json:"exit_code,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Error     string `json:"error,omitempty"`

	Effect *Effect `json:"effect,omitempty"`
	// Offset is ClockMoved's: the clock's lead on real time after the move.
	Offset time.Duration `json:"offset,omitempty"`
	// Attrs carries what a source knows that the model has no field for
	// (span attributes, Temporal task queue): shown in the detail pane.
	Attrs map[string]string `json:"attrs,omitempty"`
}
