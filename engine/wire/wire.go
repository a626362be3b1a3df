// Package wire holds what crosses the runtime API between the host and its
// workers: the plan a worker fetches, the attempt permission it asks for
// (with the events it reported since its last durable round trip), a
// journal write, a kept worker's request for its next run, the header and
// environment that identify it. It is a leaf: the host (package
// engine) and the worker (package agent) both import it, and neither imports
// the other for it.
package wire

import (
	"encoding/json"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
)

// Environment variables that turn the binary into a worker.
const (
	EnvWorker = "RETRYLAB_WORKER" // the runtime API's URL
	// EnvSocket is the Unix socket of the runtime channel; a worker given
	// one sends a run's runtime requests through it, as frames
	// (engine/internal/rtchan), instead of HTTP to EnvWorker.
	EnvSocket    = "RETRYLAB_WORKER_SOCKET"
	EnvExecution = "RETRYLAB_EXECUTION" // the execution to run
	EnvRun       = "RETRYLAB_RUN"       // the run number
	EnvToken     = "RETRYLAB_TOKEN"     // the runtime API's bearer token
	// EnvKeep ("1") tells a worker to ask for another run when it finished
	// one cleanly (POST /v1/workers/next) instead of exiting.
	EnvKeep = "RETRYLAB_KEEP"
)

// RunEnded is what a kept worker sends to POST /v1/workers/next: the run
// it finished cleanly, its last event recorded.
type RunEnded struct {
	PID       int    `json:"pid"`
	Execution string `json:"execution"`
	Run       int    `json:"run"`
}

// Assignment is the host's answer to RunEnded: the next run to play. No
// content (204) means exit.
type Assignment struct {
	Execution string `json:"execution"`
	Run       int    `json:"run"`
}

// Plan is what a worker needs to run an execution.
type Plan struct {
	Execution string             `json:"execution"`
	Run       int                `json:"run"`
	Scenario  *scenario.Scenario `json:"scenario"`
	Policy    history.Policy     `json:"policy"`
	MailURL   string             `json:"mail_url"`
	CRMURL    string             `json:"crm_url"`
	// Args holds each call's arguments as canonical JSON, keyed by step, so
	// numbers keep their exact form across the wire.
	Args map[string]json.RawMessage `json:"args"`
	// Attempts is the last attempt number per step so far.
	Attempts map[string]int `json:"attempts"`
	// Unfinished lists steps whose last attempt started in an earlier run
	// and never finished, or finished with a timeout or a server error, with
	// no record or escalation since: their outcome is unknown.
	Unfinished []string `json:"unfinished,omitempty"`
	// NoJournal says the execution had no journal record when the plan
	// was made. Only this run can write one while it is live (the host
	// takes journal writes from the live run alone, and a deletion only
	// removes), so a step this run has not written has no record: the
	// worker need not ask.
	NoJournal bool `json:"no_journal,omitempty"`
	// Pace is slow motion: the worker waits this long before each attempt
	// and records the wait (history.Paced); 0 for none.
	Pace time.Duration `json:"pace,omitempty"`
}

// AttemptRequest asks for permission to make an attempt.
type AttemptRequest struct {
	Step        string            `json:"step"`
	Tool        string            `json:"tool"`
	Attempt     int               `json:"attempt"`
	MaxAttempts int               `json:"max_attempts"`
	Key         string            `json:"key,omitempty"`
	Request     *history.Exchange `json:"request,omitempty"`
	// Events are what the worker reported since its last round trip, in
	// order: the host records them before AttemptStarted, in the same
	// commit, so they are on disk before the attempt may take effect.
	Events []history.Event `json:"events,omitempty"`
}

// JournalPut is the body of a journal write: the step's record and, as in
// AttemptRequest, the events reported since the last round trip, recorded
// before StepRecorded in the same commit.
type JournalPut struct {
	history.JournalRecord
	Events []history.Event `json:"events,omitempty"`
	// Then are events recorded after StepRecorded in the same commit: the
	// run's end (ExecutionCompleted) when this step was the run's last
	// action, so the worker waits for one commit instead of two.
	Then []history.Event `json:"then,omitempty"`
}

// AttemptGrant answers an AttemptRequest: the crash the worker must carry
// out at its point, if any.
type AttemptGrant struct {
	Seq   uint64      `json:"seq"`
	Crash fault.Point `json:"crash,omitempty"`
}

// HeaderRun carries the worker's run number on every runtime request, so a
// request from the worker of an earlier run is refused.
const HeaderRun = "Retrylab-Run"
