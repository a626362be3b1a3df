// Package history defines the events of an execution's history and the
// execution record, and how both are encoded in the store.
//
// A history is append-only, in the spirit of Temporal's event history: every
// attempt of every tool call is an event, each with the wall time it was
// recorded, so a reader can see retries, replays and the gaps where no worker
// ran.
package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/retrylab/retrylab/store"
)

// Type names an event.
type Type string

// The event types.
const (
	ExecutionStarted   Type = "ExecutionStarted"
	WorkerStarted      Type = "WorkerStarted"
	TurnStarted        Type = "TurnStarted"
	ToolCallScheduled  Type = "ToolCallScheduled"
	AttemptStarted     Type = "AttemptStarted"
	AttemptFinished    Type = "AttemptFinished"
	RetryScheduled     Type = "RetryScheduled"
	StepRecorded       Type = "StepRecorded"
	StepReplayed       Type = "StepReplayed"
	StepCompleted      Type = "StepCompleted"
	FaultInjected      Type = "FaultInjected"
	WorkerCrashed      Type = "WorkerCrashed"
	Escalated          Type = "Escalated"
	JournalDeleted     Type = "JournalDeleted"
	ExecutionCompleted Type = "ExecutionCompleted"
	ExecutionFailed    Type = "ExecutionFailed"
	// EffectObserved is recorded by the host, in the provider's own
	// transaction, when the world acts on behalf of an attempt (Step,
	// Attempt, Run, Key): a message delivered, a CRM row written. The
	// history keeps what the attempt caused whatever the world is later
	// (reset, expired keys).
	EffectObserved Type = "EffectObserved"
	// ClockMoved is recorded by the host when the world clock is moved
	// forward (the explorer's A, 'retrylab clock advance', a scenario's
	// 'advance'): Duration is the move, Offset how far the world clock runs
	// ahead of real time after it. It is recorded in the history of every
	// execution the move concerns: each one whose idempotency keys it
	// expires, and each one not finished (a resume runs on the moved
	// clock), in the transaction that moves the clock.
	ClockMoved Type = "ClockMoved"
	// KeyExpired follows ClockMoved once for each of the execution's keys
	// the move expired (Key; Step, Run and Attempt of the request that
	// stored it; Duration: the key's retention): the provider has
	// forgotten it, and a retry with it executes again.
	KeyExpired Type = "KeyExpired"
	// Paced is slow motion's wait (Delay) before attempt Attempt of Step,
	// which the worker makes so a room can follow the run: time spent on
	// purpose, not by the tool or the policy.
	Paced Type = "Paced"
)

// Effect is what a provider did, as an EffectObserved event records it.
type Effect struct {
	Service string `json:"service"`          // "mail" or "crm"
	ID      string `json:"id"`               // the message id or record id
	Target  string `json:"target,omitempty"` // the recipient, for mail
	// Summary is the mail's subject, or the CRM write's detail.
	Summary string `json:"summary,omitempty"`
	// Version is the CRM row's version after the write.
	Version int `json:"version,omitempty"`
}

// ReplayDecision marks a StepReplayed event (in Text) that reused the
// agent's recorded decision — the call's arguments — rather than a result.
const ReplayDecision = "decision"

// Outcome classifies a finished attempt.
type Outcome string

// Attempt outcomes.
const (
	OutcomeOK       Outcome = "ok"
	OutcomeTimeout  Outcome = "timeout"
	OutcomeError    Outcome = "error"    // 5xx, connection refused, ...
	OutcomeConflict Outcome = "conflict" // 409: same key still in flight
	OutcomeMismatch Outcome = "mismatch" // 422: same key, other payload
	OutcomeRejected Outcome = "rejected" // other 4xx
)

// Exchange is one HTTP request or response as the trace shows it.
type Exchange struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// Event is one entry of a history. Fields are filled according to Type.
type Event struct {
	Seq     uint64          `json:"seq"`
	Type    Type            `json:"type"`
	Time    time.Time       `json:"time"`
	Run     int             `json:"run,omitempty"`
	Turn    int             `json:"turn,omitempty"`
	Text    string          `json:"text,omitempty"`
	Step    string          `json:"step,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Key     string          `json:"key,omitempty"`
	Attempt int             `json:"attempt,omitempty"`
	// MaxAttempts is the policy's limit (0 = unlimited) on AttemptStarted.
	MaxAttempts  int           `json:"max_attempts,omitempty"`
	Outcome      Outcome       `json:"outcome,omitempty"`
	Deduplicated bool          `json:"deduplicated,omitempty"`
	Duration     time.Duration `json:"duration,omitempty"`
	Delay        time.Duration `json:"delay,omitempty"`
	Request      *Exchange     `json:"request,omitempty"`
	Response     *Exchange     `json:"response,omitempty"`
	// Result is the step's result: what the journal holds or replayed.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRun is the run whose journal record a replay came from.
	ResultRun int `json:"result_run,omitempty"`
	// Plan is 1 + the index of the scenario fault an injection came from; 0 for an armed fault.
	Plan     int    `json:"plan,omitempty"`
	Fault    string `json:"fault,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Error    string `json:"error,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	// Effect is set on EffectObserved.
	Effect *Effect `json:"effect,omitempty"`
	// Offset is, on ClockMoved, how far the world clock runs ahead of
	// real time after the move.
	Offset time.Duration `json:"offset,omitempty"`
}

// Encode is the stored form of an event: the compact encoding (compact.go).
func Encode(e Event) ([]byte, error) {
	return encodeCompact(e)
}

// EncodeJSON is the form events were stored in before the compact encoding
// (schema v1 of the store), which Decode still reads.
func EncodeJSON(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	return b, nil
}

// Prepared is an event encoded before its sequence number is known, so the
// encoding happens outside the write transaction (where every writer of a
// group commit would otherwise wait on it) and the number is spliced in.
type Prepared struct {
	rest []byte // the encoding after the magic byte and Seq
}

// Prepare encodes an event for WithSeq.
func Prepare(e Event) (Prepared, error) {
	e.Seq = 0
	b, err := Encode(e)
	if err != nil {
		return Prepared{}, err
	}
	// Seq 0 is the one byte after the magic byte.
	if len(b) < 2 || b[0] != compactMagic || b[1] != 0 {
		return Prepared{}, fmt.Errorf("encode %s event: unexpected form %.20q", e.Type, b)
	}
	return Prepared{rest: b[2:]}, nil
}

// WithSeq is the stored form of the prepared event numbered seq: the same
// bytes Encode gives for the event with that Seq.
func (p Prepared) WithSeq(seq uint64) []byte {
	out := make([]byte, 0, len(p.rest)+1+binary.MaxVarintLen64)
	out = append(out, compactMagic)
	out = binary.AppendUvarint(out, seq)
	return append(out, p.rest...)
}

// Append writes an event at the end of an execution's history in tx and
// sets its Seq. It and Prepared.Append are the one path by which every
// event reaches the store.
func Append(tx *store.Tx, exec string, ev *Event) error {
	p, err := Prepare(*ev)
	if err != nil {
		return err
	}
	_, err = p.Append(tx, exec, ev)
	return err
}

// Append writes the prepared event (ev, encoded before the transaction) at
// the end of an execution's history in tx, sets ev.Seq and returns the
// stored size.
func (p Prepared) Append(tx *store.Tx, exec string, ev *Event) (int, error) {
	var size int
	seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
		data := p.WithSeq(seq)
		size = len(data)
		return data, nil
	})
	if err != nil {
		return 0, err
	}
	ev.Seq = seq
	return size, nil
}

// Decode reads a stored event in either encoding, refusing bytes that are not
// one.
func Decode(data []byte) (Event, error) {
	if len(data) > 0 && data[0] == compactMagic {
		return decodeCompact(data)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	if e.Type == "" {
		return Event{}, fmt.Errorf("decode event: no type")
	}
	return e, nil
}

// Status is where an execution stands.
type Status string

// Execution statuses.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusKilled    Status = "killed"    // the worker was killed; resume continues it
	StatusFailed    Status = "failed"    // retries exhausted or a non-retryable answer
	StatusEscalated Status = "escalated" // an unsafe tool's outcome is unknown: a human must look
)

// The statuses only an imported Temporal workflow has: how its last run
// imported closed, in Temporal's words.
const (
	StatusCancelled      Status = "cancelled"        // cancelled on request
	StatusTerminated     Status = "terminated"       // terminated from outside, without its code's say
	StatusTimedOut       Status = "timed-out"        // the workflow's own run or execution timeout
	StatusContinuedAsNew Status = "continued-as-new" // goes on in a run that was not imported
)

// Finished reports whether resume has nothing to continue.
func (s Status) Finished() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusEscalated,
		StatusCancelled, StatusTerminated, StatusTimedOut, StatusContinuedAsNew:
		return true
	}
	return false
}

// Policy is the safety policy an execution ran with.
type Policy struct {
	Keys    bool `json:"keys"`
	Journal bool `json:"journal"`
}

// String is the compact form shown in lists: "keys+journal", "keys", "journal", "none".
func (p Policy) String() string {
	switch {
	case p.Keys && p.Journal:
		return "keys+journal"
	case p.Keys:
		return "keys"
	case p.Journal:
		return "journal"
	}
	return "none"
}

// Execution is the record kept beside an execution's history.
type Execution struct {
	ID       string `json:"id"`
	Scenario string `json:"scenario"`
	// Source is the scenario file's path when it was not from the catalogue;
	// for an imported execution, the file or receiver it came from.
	Source string `json:"source,omitempty"`
	// Imported names the format of an execution that retrylab did not run
	// but imported ("otlp"); empty for retrylab's own executions.
	Imported string    `json:"imported,omitempty"`
	Policy   Policy    `json:"policy"`
	Status   Status    `json:"status"`
	Runs     int       `json:"runs"`
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	// Ended is set when the execution finished.
	Ended time.Time `json:"ended,omitzero"`
	// StartKey is the run-level idempotency key it was started with, if any.
	StartKey string `json:"start_key,omitempty"`
	Error    string `json:"error,omitempty"`
	// Sends counts the mail delivered on its behalf per intent (SendIntent:
	// recipient and subject), as its EffectObserved events record them;
	// Duplicates is set once one intent was delivered twice. Both are what
	// happened, whatever the world holds now.
	Sends      map[string]int `json:"sends,omitempty"`
	Duplicates bool           `json:"duplicates,omitempty"`
	// Possible is set, for an imported execution, when the audit (the
	// default effects, the execution alone) grades a repeated side effect
	// POSSIBLE and none DUPLICATE: a call whose outcome was unknown was
	// repeated. The list marks it ◇ and its filter finds it.
	Possible bool `json:"possible,omitempty"`
}

// PolicyWords is what the explorer's list says of the policy, and what
// its filter matches: the policy retrylab ran the execution with, or, for
// an execution it imported (run with no policy it knows), "imported · "
// and the format ("imported · otlp").
func (x Execution) PolicyWords() string {
	if x.Imported != "" {
		return "imported · " + x.Imported
	}
	return x.Policy.String()
}

// SendIntent is the key of Execution.Sends: one intended message.
func SendIntent(to, subject string) string { return to + "\n" + subject }

// Put stores an execution record and keeps the index of unfinished
// executions (store.Active: id -> status) in step with it, in the same
// transaction. A finished execution's history is sealed (store.Tx.SealHistory):
// its last chunk, compressed fast while the execution ran, is compressed
// better.
func Put(tx *store.Tx, x Execution) error {
	enc, err := EncodeExecution(x)
	if err != nil {
		return err
	}
	if err := tx.PutExecution(x.ID, enc); err != nil {
		return err
	}
	if x.Status.Finished() {
		if err := tx.SealHistory(x.ID); err != nil {
			return err
		}
		return tx.Delete(store.Active, []byte(x.ID))
	}
	return tx.Put(store.Active, []byte(x.ID), []byte(x.Status))
}

// MaybeImported reports, without decoding it, whether a stored execution
// record may be an imported execution's: a cheap test for walks over every
// record. False is certain: the record is of an execution retrylab ran.
func MaybeImported(record []byte) bool {
	if len(record) > 0 && record[0] == recordMagic {
		bits, n := binary.Uvarint(record[1:])
		return n > 0 && bits&rImported != 0
	}
	return bytes.Contains(record, []byte(`"imported":`))
}

// JournalRecord is a step's durably recorded result.
type JournalRecord struct {
	Step     string          `json:"step"`
	Tool     string          `json:"tool"`
	Key      string          `json:"key,omitempty"`
	Attempt  int             `json:"attempt"`
	Run      int             `json:"run"`
	Result   json.RawMessage `json:"result"`
	Recorded time.Time       `json:"recorded"`
}
