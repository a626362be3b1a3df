// Package agentflow runs retrylab's scripted demo agents on Temporal: a
// scenario's agent is a workflow (AgentWorkflow), each of its tool calls an
// activity (Tool) with the scenario's retry policy as Temporal's retry
// policy, calling the same simulated world (engine/world) over loopback
// HTTP as the local engine's workers do. Any number of worker processes can
// serve the task queue; everything a worker needs comes in the workflow's
// input, so a worker keeps nothing of its own.
package agentflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/scenario"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/temporal/interceptor"
)

// Names under which the workflow and the activity are registered.
const (
	WorkflowName = "retrylab.Agent"
	// TaskQueue is the default task queue of the demo agents.
	TaskQueue = "retrylab-agents"
)

// Error types of the activity's failures: an attempt's outcome, as the
// local engine classifies it (history.Outcome), and escalate.
const (
	ErrEscalate = "escalate" // an unsafe tool's outcome is unknown: a human must check
)

// Statuses a workflow ends with (Result.Status).
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusEscalated = "escalated"
)

// Input is what a workflow needs: the scenario itself (its YAML, so workers
// need no catalogue), the execution id the agent's keys are derived from,
// and where the world listens.
type Input struct {
	Source  string `json:"source"` // the scenario's file name, for errors
	YAML    []byte `json:"yaml"`
	MailURL string `json:"mail_url"`
	CRMURL  string `json:"crm_url"`
	// Keys overrides the scenario's policy.keys when set.
	Keys *bool `json:"keys,omitempty"`
}

// Result is how the agent ended.
type Result struct {
	Status string `json:"status"`
	Step   string `json:"step,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Call is one activity's input: one tool call, every attempt of it. The
// history shows it as the call's arguments, so it carries the tool's
// arguments first and only what an attempt needs besides.
type Call struct {
	Args    json.RawMessage `json:"args"` // rendered, canonical
	Step    string          `json:"step"`
	Service string          `json:"service"`
	Op      string          `json:"op"`
	Kind    scenario.Kind   `json:"kind"`
	// Key is how the attempt keys its request; nil: no key.
	Key     *KeyPolicy        `json:"key,omitempty"`
	Timeout scenario.Duration `json:"timeout"` // the attempt's deadline
	MailURL string            `json:"mail_url"`
	CRMURL  string            `json:"crm_url"`
	// Crashes are the scenario's crash faults of this step: the worker
	// kills itself (SIGKILL) at the point, on the attempt named (0: the
	// first), when it runs as a process of its own (Options.MayDie).
	Crashes []scenario.Fault `json:"crashes,omitempty"`
}

// KeyPolicy is the part of a scenario's policy that derives keys.
type KeyPolicy struct {
	From   scenario.KeyFrom `json:"from"`
	Digits int              `json:"digits"`
	// Written, when set, hashes arguments in this order instead of
	// canonically (canonical: false).
	Written []string `json:"written,omitempty"`
}

// Options configure a worker's registration.
type Options struct {
	// MayDie lets crash faults kill this process; a worker that shares its
	// process with something else (a test, 'run' without workers) leaves
	// them out and says so in the attempt's error.
	MayDie bool
	// HTTP is the client tool calls use; nil means a fresh one.
	HTTP *http.Client
	// FaultsURL, when set, is where each attempt takes the faults armed
	// from outside ('retrylab-temporal run' serves it: an explorer or CLI
	// attached to its database arms them), before it sends its request.
	FaultsURL string
}

// AttemptFaults is what an attempt asks FaultsURL: it names itself, and is
// told the armed faults it takes. Server-side ones are carried out by the
// world for this very attempt; a crash one by the activity.
type AttemptFaults struct {
	Execution string        `json:"execution"` // the attributed execution (temporal-RUNID)
	Step      string        `json:"step"`
	Attempt   int           `json:"attempt"`
	Armed     []fault.Point `json:"armed,omitempty"` // the answer
	// Planned are the scenario's server-side faults the world carries out
	// on this attempt's request (the answer too), so the attempt records
	// them.
	Planned []fault.Point `json:"planned,omitempty"`
}

// Where a fault an attempt records came from, in the words of retrylab's
// own traces.
const (
	FaultArmed   = "armed from the explorer"
	FaultPlanned = "from the scenario's fault plan"
)

// Register adds the agent workflow and the tool activity to a worker.
func Register(w worker.Registry, opts Options) {
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	w.RegisterWorkflowWithOptions(AgentWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	a := &tools{opts: opts}
	// One activity for every tool: its type is the scenario's tool name,
	// so the history (and retrylab's effect audit) names the tool.
	w.RegisterDynamicActivity(a.dynamic, activity.DynamicRegisterOptions{})
}

// RetryPolicy is Temporal's form of a scenario's retry policy. Mismatch
// and rejected answers are never retried (an answer, not a reason to
// retry), nor escalations.
func RetryPolicy(r scenario.Retry) *temporal.RetryPolicy {
	p := &temporal.RetryPolicy{
		InitialInterval:        r.Initial.D(),
		BackoffCoefficient:     r.Backoff,
		MaximumInterval:        r.MaxInterval.D(),
		MaximumAttempts:        int32(r.MaxAttempts),
		NonRetryableErrorTypes: append([]string{"mismatch", "rejected", ErrEscalate}, r.NonRetryable...),
	}
	if p.InitialInterval <= 0 {
		p.InitialInterval = time.Millisecond
	}
	if p.BackoffCoefficient < 1 {
		p.BackoffCoefficient = 1
	}
	return p
}

// startToClose is an attempt's deadline: the scenario's timeout, and a
// little more, so the activity's own HTTP deadline names the timeout
// first; Temporal's start-to-close timeout then only catches a worker that
// died.
func startToClose(r scenario.Retry) time.Duration {
	if r.Timeout <= 0 {
		return 30 * time.Second
	}
	return r.Timeout.D() + 500*time.Millisecond
}

// AgentWorkflow plays a scenario's turns; each tool call is an activity
// under the scenario's retry policy, with Temporal's own activity ids (1,
// 2, ...). An agent-level retry is a new activity for the same step. The
// workflow completes with the agent's status; Temporal itself never
// retries the workflow.
func AgentWorkflow(ctx workflow.Context, in Input) (Result, error) {
	scn, err := scenario.Parse(in.Source, in.YAML)
	if err != nil {
		return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "scenario", nil)
	}
	keys := scn.Policy.Keys
	if in.Keys != nil {
		keys = *in.Keys
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: startToClose(scn.Policy.Retry),
		RetryPolicy:         RetryPolicy(scn.Policy.Retry),
	})
	results := map[string]any{}
	for _, turn := range scn.Turns {
		for _, c := range turn.Calls {
			tool := scn.Tools[c.Tool]
			args, err := canonicalArgs(c.Args)
			if err != nil {
				return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "scenario", nil)
			}
			step, order := c.Step, c.ArgOrder
			for retries := 0; ; retries++ {
				rendered := agent.Render(args, results, 1).(map[string]any)
				raw, err := idemkey.Canonical(rendered)
				if err != nil {
					return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "scenario", nil)
				}
				call := Call{Args: raw, Step: step, Service: tool.Service, Op: tool.Op, Kind: tool.Kind,
					Timeout: scn.Policy.Retry.Timeout, MailURL: in.MailURL, CRMURL: in.CRMURL}
				if keys && tool.Kind == scenario.KindKeyed {
					call.Key = &KeyPolicy{From: scn.Policy.KeyFrom, Digits: scn.Policy.KeyDigits}
					if !scn.Policy.CanonicalArgs() {
						call.Key.Written = order
					}
				}
				for _, f := range scn.Faults {
					if f.Point.Crash() && (f.Step == "" || f.Step == step) {
						call.Crashes = append(call.Crashes, f)
					}
				}
				futures := make([]workflow.Future, c.Copies())
				for i := range futures {
					futures[i] = workflow.ExecuteActivity(ctx, c.Tool, call)
				}
				var out json.RawMessage
				var failure error
				for _, f := range futures {
					var o json.RawMessage
					if err := f.Get(ctx, &o); err != nil && failure == nil {
						failure = err
					} else if err == nil {
						out = o
					}
				}
				if failure == nil {
					results[c.Step] = decode(out)
					break
				}
				var app *temporal.ApplicationError
				if errors.As(failure, &app) && app.Type() == ErrEscalate {
					return Result{Status: StatusEscalated, Step: step, Error: app.Message()}, nil
				}
				if c.AgentRetry == nil || retries >= c.AgentRetry.Max {
					return Result{Status: StatusFailed, Step: step, Error: fmt.Sprintf("%s: the retry policy gave up: %s", step, message(failure))}, nil
				}
				if c.AgentRetry.FreshStep {
					step = scenario.FreshStepID(c.Step, retries+1)
				}
				if c.AgentRetry.Reorder {
					order = reversed(order)
				}
				for k, v := range c.AgentRetry.Args {
					args[k] = v
				}
				if args, err = canonicalArgs(args); err != nil {
					return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "scenario", nil)
				}
			}
		}
	}
	return Result{Status: StatusCompleted}, nil
}

// message is the innermost message of an activity's failure.
func message(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return "timeout (" + te.TimeoutType().String() + ")"
	}
	return err.Error()
}

// canonicalArgs turns arguments read from YAML into the agent's form
// (numbers as json.Number), as the local engine's plan carries them.
func canonicalArgs(args map[string]any) (map[string]any, error) {
	raw, err := idemkey.Canonical(args)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out := map[string]any{}
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func decode(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func reversed(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[len(in)-1-i] = s
	}
	return out
}

type tools struct{ opts Options }

func (t *tools) dynamic(ctx context.Context, args converter.EncodedValues) (json.RawMessage, error) {
	var c Call
	if err := args.Get(&c); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("tool call input: "+err.Error(), "rejected", err)
	}
	return t.Tool(ctx, c)
}

// Tool makes one attempt of a tool call (the activity of every tool type): it derives the key by the
// scenario's policy (key_from: temporal uses the workflow id and this
// activity's id), sends the request to the world with the attempt's
// attribution, and turns the answer into a result or a typed failure whose
// type is the outcome (timeout, error, conflict, mismatch, rejected), so the
// retry policy's non-retryable outcomes are Temporal's non-retryable types.
func (t *tools) Tool(ctx context.Context, c Call) (json.RawMessage, error) {
	info := activity.GetInfo(ctx)
	attempt := int(info.Attempt)
	execution := info.WorkflowExecution.ID
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.UseNumber()
	args := map[string]any{}
	if err := dec.Decode(&args); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("arguments: "+err.Error(), "rejected", err)
	}
	key := ""
	if c.Key != nil {
		var err error
		if key, err = deriveKey(c, execution, info.ActivityID, args, attempt); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("key: "+err.Error(), "rejected", err)
		}
		interceptor.SetIdempotencyKey(ctx, key)
	}
	crash := t.crash(c, attempt)
	if crash != "" {
		interceptor.RecordFault(ctx, string(crash), FaultPlanned)
	}
	if t.opts.FaultsURL != "" {
		ans, err := t.takeArmed(ctx, AttemptFaults{Execution: AttributedExecution(info.WorkflowExecution.RunID), Step: c.Step, Attempt: attempt})
		if err != nil {
			return nil, temporal.NewApplicationError("armed faults: "+err.Error(), "error")
		}
		// Each fault this attempt meets is recorded on it (the trace marks
		// it ⚡); a crash only where it kills this worker.
		for _, p := range ans.Planned {
			interceptor.RecordFault(ctx, string(p), FaultPlanned)
		}
		for _, p := range ans.Armed {
			if !p.Crash() {
				interceptor.RecordFault(ctx, string(p), FaultArmed)
			} else if crash == "" && t.opts.MayDie {
				crash = p
				interceptor.RecordFault(ctx, string(p), FaultArmed)
			}
		}
	}
	if crash == fault.CrashBeforeCall {
		die()
	}
	// The world attributes the attempt's effects to the execution retrylab
	// stores the workflow's history under (temporal-RUNID), so the
	// explorer's outbox beside the trace shows them.
	req, err := request(ctx, c, args, AttributedExecution(info.WorkflowExecution.RunID), attempt, key)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "rejected", err)
	}
	timeout := c.Timeout.D()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := t.opts.HTTP.Do(req.WithContext(rctx))
	if crash == fault.CrashAfterEffect {
		die() // the effect may have happened; the attempt ends with its worker
	}
	outcome, status, body := "", 0, []byte(nil)
	switch {
	case err != nil && rctx.Err() == context.DeadlineExceeded:
		outcome, err = "timeout", fmt.Errorf("no response within %s", timeout)
	case err != nil:
		outcome = "error"
	default:
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		status = resp.StatusCode
		switch {
		case err != nil:
			outcome = "error"
		case status >= 200 && status < 300:
			if !json.Valid(body) {
				body, _ = json.Marshal(string(body))
			}
			return body, nil
		case status == http.StatusConflict:
			outcome = "conflict"
		case status == http.StatusUnprocessableEntity:
			outcome = "mismatch"
		case status >= 500:
			outcome = "error"
		default:
			outcome = "rejected"
		}
		if err == nil {
			err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(body))
		}
	}
	if c.Kind == scenario.KindUnsafe && (outcome == "timeout" || outcome == "error") {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s: %s outcome unknown (%s) and the tool is unsafe to repeat; stopping for a human", c.Step, info.ActivityType.Name, outcome), ErrEscalate, err)
	}
	return nil, temporal.NewApplicationError(err.Error(), outcome)
}

// takeArmed asks FaultsURL for the faults armed from outside that this
// attempt takes, and the scenario's server-side ones it meets.
func (t *tools) takeArmed(ctx context.Context, a AttemptFaults) (AttemptFaults, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return AttemptFaults{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.opts.FaultsURL, bytes.NewReader(body))
	if err != nil {
		return AttemptFaults{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.opts.HTTP.Do(req)
	if err != nil {
		return AttemptFaults{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return AttemptFaults{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	var out AttemptFaults
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out, err
}

// crash is the crash fault this attempt meets, if this worker may die.
func (t *tools) crash(c Call, attempt int) fault.Point {
	if !t.opts.MayDie {
		return ""
	}
	for _, f := range c.Crashes {
		if f.Attempt == attempt || f.Attempt == 0 && attempt == 1 {
			return f.Point
		}
	}
	return ""
}

// deriveKey is the attempt's idempotency key by the scenario's key_from,
// derived as retrylab's own worker derives it (agent.Key).
func deriveKey(c Call, execution, activityID string, args map[string]any, attempt int) (string, error) {
	p := c.Key
	digits := p.Digits
	if digits == 0 {
		digits = idemkey.DefaultDigits
	}
	return agent.Key(agent.KeyInput{From: p.From, Digits: digits, Canonical: p.Written == nil, Execution: execution,
		Step: c.Step, Activity: activityID, Args: args, Order: p.Written, Attempt: attempt})
}

// request builds the HTTP request of an attempt, attributed to the
// workflow (its id is the execution) so the world's outbox names it, as
// retrylab's own worker builds it (agent.ToolRequest).
func request(ctx context.Context, c Call, args map[string]any, execution string, attempt int, key string) (*http.Request, error) {
	req, _, err := agent.ToolRequest(ctx, c.Service, c.Op, c.MailURL, c.CRMURL, args,
		world.Attribution{Execution: execution, Step: c.Step, Key: key, Attempt: attempt, Run: 1})
	return req, err
}

// AttributedExecution is the execution retrylab stores a workflow run's
// history under (engine/temporal's naming for a run that starts a chain).
func AttributedExecution(runID string) string { return rltemporal.ExecutionName(runID) }

// die is a crash fault: SIGKILL of this very worker process.
func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
