// Package agent is the worker side of retrylab: a scripted agent (no LLM)
// that plays a scenario's turns and tool calls against the simulated world,
// with the scenario's retry policy and real per-attempt deadlines, reporting
// every step to the host's runtime API.
//
// A worker keeps nothing of its own: everything it knows comes from its plan,
// its journal reads and the answers of the tools. That is what makes a crash
// (a real SIGKILL) honest: after it, only what the host recorded survives.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine/attrib"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/wire"
)

// MainIfWorker turns the process into a worker when the host started it as
// one, and exits when the run ends (or, when the host keeps its workers, when
// the host has no further run for it). Call it first thing in main (and in
// TestMain of packages whose tests start workers).
func MainIfWorker() {
	url := os.Getenv(wire.EnvWorker)
	if url == "" {
		return
	}
	run, _ := strconv.Atoi(os.Getenv(wire.EnvRun))
	execution, token := os.Getenv(wire.EnvExecution), os.Getenv(wire.EnvToken)
	keep := os.Getenv(wire.EnvKeep) == "1"
	clients := NewClients(os.Getenv(wire.EnvSocket))
	for {
		// A kept worker may be started ahead of any run: it asks for one.
		if execution != "" || !keep {
			if err := clients.Run(context.Background(), url, execution, run, token); err != nil {
				fmt.Fprintln(os.Stderr, "retrylab worker:", err)
				os.Exit(1)
			}
		}
		if !keep {
			os.Exit(0)
		}
		next, ok, err := clients.next(url, token, wire.RunEnded{PID: os.Getpid(), Execution: execution, Run: run})
		if err != nil {
			fmt.Fprintln(os.Stderr, "retrylab worker:", err)
			os.Exit(1)
		}
		if !ok {
			os.Exit(0)
		}
		execution, run = next.Execution, next.Run
	}
}

// Clients are a worker process's clients, kept across the runs it plays:
// connections, not anything about an execution.
type Clients struct {
	channel *rtchan.Client // a run's runtime requests, when the host has a socket
	runtime *http.Client   // a run's runtime requests over HTTP, when it has none
	idle    *http.Client   // the wait for the next run (HTTP), which the host bounds
	tools   *http.Client   // the world's services; each attempt has its own deadline
}

// runtimeTimeout bounds every request of a run to the runtime API.
const runtimeTimeout = 30 * time.Second

// NewClients makes a worker's clients. With socket set (the host's
// RuntimeSocket), a run's requests to the runtime API go through the
// runtime channel on that socket, as the workers the host starts send
// them; else over HTTP to the runtime URL. A kept worker's wait for its
// next run is always HTTP: the host must see the worker leave while it
// waits, which the channel does not tell it.
func NewClients(socket string) *Clients {
	// Connections of their own, as a worker process has: programs that
	// play several workers in one process (benchmarks) then keep one
	// connection per worker to each service, as the processes would, not
	// the two per service of the default transport shared by all.
	t := http.DefaultTransport.(*http.Transport).Clone()
	c := &Clients{runtime: &http.Client{Timeout: runtimeTimeout, Transport: t}, idle: &http.Client{Transport: t},
		tools: &http.Client{Transport: t}}
	if socket != "" {
		c.channel = rtchan.NewClient(socket, runtimeTimeout)
	}
	return c
}

// Close closes the kept connections.
func (c *Clients) Close() {
	if c.channel != nil {
		c.channel.Close()
	}
	c.tools.CloseIdleConnections() // the transport they share
}

// runtimeVia is the caller of a run's runtime requests to runtimeURL.
func (c *Clients) runtimeVia(runtimeURL string) caller {
	if c.channel != nil {
		return channelCaller{c.channel}
	}
	return httpCaller{base: strings.TrimRight(runtimeURL, "/"), hc: c.runtime}
}

// Reporter is the worker's client of one run's runtime API, for programs
// that report events as the worker does (benchmarks).
type Reporter struct{ rt *runtimeClient }

// Reporter makes the runtime client of run of execution, as Run makes it.
func (c *Clients) Reporter(runtimeURL, execution string, run int, token string) *Reporter {
	return &Reporter{c.runtimeClient(runtimeURL, execution, run, token)}
}

// Event reports ev and returns once the host has recorded it durably.
func (r *Reporter) Event(ctx context.Context, ev history.Event) error { return r.rt.event(ctx, ev) }

func (c *Clients) runtimeClient(runtimeURL, execution string, run int, token string) *runtimeClient {
	return &runtimeClient{path: "/v1/executions/" + execution, token: token, run: strconv.Itoa(run), via: c.runtimeVia(runtimeURL)}
}

// next reports a run finished cleanly and waits for the host's next one;
// ok is false when the host has none for this worker (it should exit).
func (c *Clients) next(runtimeURL, token string, ended wire.RunEnded) (wire.Assignment, bool, error) {
	var a wire.Assignment
	body, err := json.Marshal(ended)
	if err != nil {
		return a, false, err
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(runtimeURL, "/")+"/v1/workers/next", bytes.NewReader(body))
	if err != nil {
		return a, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.idle.Do(req)
	if err != nil {
		return a, false, fmt.Errorf("ask for the next run: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return a, false, fmt.Errorf("ask for the next run: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return a, false, nil
	case resp.StatusCode != http.StatusOK:
		return a, false, fmt.Errorf("ask for the next run: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, &a); err != nil || a.Execution == "" || a.Run < 1 {
		return a, false, fmt.Errorf("ask for the next run: bad answer %.80q", data)
	}
	return a, true, nil
}

// MainForTests is MainIfWorker for test binaries whose tests start hosts:
// the hosts start the test binary itself as their workers. It also turns
// off the race detector's one-second pause at exit (GORACE
// atexit_sleep_ms=0) for those workers, which would otherwise slow every
// run under -race; a race in a worker still fails its run (exit 66).
// Call it first thing in TestMain.
func MainForTests() {
	MainIfWorker()
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// errStopped means the execution ended early (failed or escalated) and the
// end is already recorded.
var errStopped = errors.New("execution stopped")

// Run plays one run of an execution to its end, reaching the runtime API
// over HTTP at runtimeURL.
func Run(ctx context.Context, runtimeURL, execution string, run int, token string) error {
	c := NewClients("")
	defer c.Close()
	return c.Run(ctx, runtimeURL, execution, run, token)
}

// Run plays one run of an execution to its end; everything it knows of the
// execution comes from the host, not from an earlier run of the process.
func (c *Clients) Run(ctx context.Context, runtimeURL, execution string, run int, token string) error {
	rt := c.runtimeClient(runtimeURL, execution, run, token)
	var plan wire.Plan
	if err := rt.do(ctx, http.MethodGet, "/plan", nil, &plan); err != nil {
		return fmt.Errorf("fetch plan: %w", err)
	}
	if plan.Run != run {
		return fmt.Errorf("plan is for run %d, worker was started for run %d", plan.Run, run)
	}
	rt.noJournal = plan.NoJournal
	w := &worker{rt: rt, plan: plan, scn: plan.Scenario, tools: c.tools, results: map[string]any{}}
	err := w.play(ctx)
	if errors.Is(err, errStopped) {
		return nil
	}
	if err != nil {
		// Report what went wrong; if even that fails the host records the exit.
		_ = rt.event(ctx, history.Event{Type: history.ExecutionFailed, Error: err.Error()})
		return err
	}
	if w.completed {
		return nil // recorded with the last step's journal write
	}
	return rt.event(ctx, history.Event{Type: history.ExecutionCompleted})
}

type worker struct {
	rt    *runtimeClient
	plan  wire.Plan
	scn   *scenario.Scenario
	tools *http.Client
	turn  int
	// mu guards results and plan.Attempts, which the concurrent copies of a
	// call share, and keeps their attempt grants in order.
	mu      sync.Mutex
	results map[string]any // step id -> decoded result, for ${step.field}
	// activities numbers the tool calls of this run, 1, 2, ..., as
	// Temporal numbers a workflow's activities (key_from: temporal).
	activities int
	// last is set while the run plays its last call (of one copy): once
	// that call's result is journaled nothing is left to do, so the run's
	// end travels with that journal write, and completed says it did.
	last, completed bool
}

func (w *worker) play(ctx context.Context) error {
	for ti, turn := range w.scn.Turns {
		if err := w.startTurn(ctx, turn.Text); err != nil {
			return err
		}
		for ci, call := range turn.Calls {
			w.last = ti == len(w.scn.Turns)-1 && ci == len(turn.Calls)-1 && call.Copies() <= 1
			if err := w.call(ctx, call); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *worker) startTurn(ctx context.Context, text string) error {
	w.turn++
	w.rt.later(history.Event{Type: history.TurnStarted, Turn: w.turn, Text: text})
	return nil
}

// call runs one tool call to its end: replayed from the journal, done, or
// (after the retry policy and any agent-level retries) failed or escalated.
func (w *worker) call(ctx context.Context, c scenario.Call) error {
	tool := w.scn.Tools[c.Tool]
	args, err := w.args(c.Step)
	if err != nil {
		return err
	}
	if c.Copies() > 1 {
		return w.copies(ctx, c, tool, args)
	}
	step, order := c.Step, c.ArgOrder
	retries := 0
	for {
		done, err := w.step(ctx, c, tool, step, args, order)
		if err != nil || done {
			return err
		}
		if c.AgentRetry == nil || retries >= c.AgentRetry.Max {
			return w.stop(ctx, history.ExecutionFailed, step, fmt.Sprintf("%s: the retry policy gave up", step))
		}
		retries++
		if err := w.startTurn(ctx, c.AgentRetry.Text); err != nil {
			return err
		}
		if c.AgentRetry.FreshStep {
			step = scenario.FreshStepID(c.Step, retries)
		}
		if c.AgentRetry.Reorder {
			order = reversed(order)
		}
		if len(c.AgentRetry.Args) > 0 {
			if args, order, err = rewrite(args, order, c.AgentRetry.Args); err != nil {
				return fmt.Errorf("%s: agent retry arguments: %w", step, err)
			}
		}
	}
}

// copies runs the identical copies of a call at once, as a model that emits
// the same parallel tool call twice would: same step id, same key. The call
// is done when every copy is.
func (w *worker) copies(ctx context.Context, c scenario.Call, tool scenario.Tool, args map[string]any) error {
	type outcome struct {
		done bool
		err  error
	}
	out := make([]outcome, c.Copies())
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := w.step(ctx, c, tool, c.Step, args, c.ArgOrder)
			out[i] = outcome{done, err}
		}()
	}
	wg.Wait()
	for _, o := range out {
		if o.err != nil {
			return o.err
		}
	}
	for _, o := range out {
		if !o.done {
			return w.stop(ctx, history.ExecutionFailed, c.Step, fmt.Sprintf("%s: the retry policy gave up", c.Step))
		}
	}
	return nil
}

// rewrite applies an agent-level retry's rewritten arguments: a copy of args
// with some values replaced; new names are written last.
func rewrite(args map[string]any, order []string, changes map[string]any) (map[string]any, []string, error) {
	// Round-trip through JSON so numbers are json.Number, as in the plan.
	raw, err := json.Marshal(changes)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var norm map[string]any
	if err := dec.Decode(&norm); err != nil {
		return nil, nil, err
	}
	out := make(map[string]any, len(args)+len(norm))
	for k, v := range args {
		out[k] = v
	}
	order = append([]string(nil), order...)
	names := make([]string, 0, len(norm))
	for k := range norm {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := out[k]; !ok {
			order = append(order, k)
		}
		out[k] = norm[k]
	}
	return out, order, nil
}

// step runs one step id under the retry policy. done is false when the
// policy gave up and an agent-level retry may follow.
func (w *worker) step(ctx context.Context, c scenario.Call, tool scenario.Tool, step string, args map[string]any, order []string) (done bool, err error) {
	policy := w.plan.Policy
	if policy.Journal {
		rec, ok, err := w.rt.journal(ctx, url.PathEscape(step))
		if err != nil {
			return false, err
		}
		if ok {
			w.setResult(c.Step, rec.Result)
			w.rt.later(history.Event{Type: history.StepReplayed, Step: step, Tool: c.Tool,
				Key: rec.Key, Attempt: rec.Attempt, Result: rec.Result, ResultRun: rec.Run})
			return true, nil
		}
	}
	if tool.Kind == scenario.KindUnsafe && contains(w.plan.Unfinished, step) {
		return false, w.stop(ctx, history.Escalated, step, fmt.Sprintf(
			"%s: an earlier attempt's outcome is unknown and %s is unsafe to repeat; a human must check", step, c.Tool))
	}
	rendered, err := w.decide(ctx, c, step, args)
	if err != nil {
		return false, err
	}
	argsJSON, err := idemkey.Canonical(rendered)
	if err != nil {
		return false, fmt.Errorf("%s: arguments: %w", step, err)
	}
	w.rt.later(history.Event{Type: history.ToolCallScheduled, Turn: w.turn, Step: step,
		Tool: c.Tool, Args: argsJSON, Text: string(tool.Kind)})
	w.mu.Lock()
	w.activities++
	activity := strconv.Itoa(w.activities)
	w.mu.Unlock()
	retry := w.scn.Policy.Retry
	for n := 1; ; n++ {
		if err := w.pace(ctx, step); err != nil {
			return false, err
		}
		attempt, key, req, grant, err := w.begin(ctx, c, tool, step, activity, rendered, order)
		if err != nil {
			return false, err
		}
		if grant.Crash == fault.CrashBeforeCall {
			die()
		}
		res := w.send(ctx, req, retry.Timeout.D())
		if grant.Crash == fault.CrashAfterEffect {
			die() // the effect may have happened; nothing about it is recorded
		}
		// The answer travels with the next durable request: the journal
		// write, the retry, the escalation or the next attempt.
		w.rt.later(history.Event{Type: history.AttemptFinished, Step: step, Tool: c.Tool, Attempt: attempt, Key: key,
			Outcome: res.outcome, Deduplicated: res.deduplicated, Duration: res.duration, Response: res.response, Error: res.err})
		if res.outcome == history.OutcomeOK {
			w.setResult(c.Step, res.body)
			if policy.Journal {
				// The run's last call: its end is recorded with this
				// record, unless a crash is planned after the record.
				var then []history.Event
				if w.last && grant.Crash != fault.CrashAfterRecord {
					then = []history.Event{{Type: history.ExecutionCompleted}}
				}
				if err := w.rt.putJournal(ctx, url.PathEscape(step), history.JournalRecord{Tool: c.Tool,
					Key: key, Attempt: attempt, Result: res.body}, then...); err != nil {
					return false, err
				}
				if then != nil {
					w.completed = true // only the run's last call, never a copy, gets here
				}
			}
			if grant.Crash == fault.CrashAfterRecord {
				w.dieRecorded(ctx)
			}
			return true, nil
		}
		if grant.Crash == fault.CrashAfterRecord {
			w.dieRecorded(ctx)
		}
		if tool.Kind == scenario.KindUnsafe && (res.outcome == history.OutcomeTimeout || res.outcome == history.OutcomeError) {
			return false, w.stop(ctx, history.Escalated, step, fmt.Sprintf(
				"%s: %s outcome unknown (%s) and the tool is unsafe to repeat; stopping for a human", step, c.Tool, res.outcome))
		}
		if !retryable(res.outcome, retry.NonRetryable) {
			return false, w.stop(ctx, history.ExecutionFailed, step, fmt.Sprintf("%s: %s is an answer, not a reason to retry (HTTP %d)", step, res.outcome, res.status))
		}
		if retry.MaxAttempts > 0 && n >= retry.MaxAttempts {
			return false, nil
		}
		delay := retry.Delay(n)
		if err := w.rt.event(ctx, history.Event{Type: history.RetryScheduled, Step: step, Attempt: attempt, Delay: delay,
			MaxAttempts: retry.MaxAttempts}); err != nil {
			return false, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// pace is slow motion's wait before a step's next attempt: recorded first
// (so a live view says why nothing happens), then waited. The attempt's
// own deadline starts after it.
func (w *worker) pace(ctx context.Context, step string) error {
	if w.plan.Pace <= 0 {
		return nil
	}
	w.mu.Lock()
	next := w.plan.Attempts[step] + 1
	w.mu.Unlock()
	if err := w.rt.event(ctx, history.Event{Type: history.Paced, Step: step, Attempt: next, Delay: w.plan.Pace}); err != nil {
		return err
	}
	select {
	case <-time.After(w.plan.Pace):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// begin numbers the next attempt of a step, builds its request and asks the
// host for it (learning the crash fault it meets, if any). Copies of a call
// take their turns here, so attempt numbers reach the host in order.
func (w *worker) begin(ctx context.Context, c scenario.Call, tool scenario.Tool, step, activity string, args map[string]any,
	order []string) (attempt int, key string, req *http.Request, grant wire.AttemptGrant, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	attempt = w.plan.Attempts[step] + 1
	w.plan.Attempts[step] = attempt
	if w.plan.Policy.Keys && tool.Kind == scenario.KindKeyed {
		if key, err = w.key(step, activity, args, order, attempt); err != nil {
			return
		}
	}
	req, exch, err := w.request(tool, step, args, attempt, key)
	if err != nil {
		return
	}
	grant, err = w.rt.attempt(ctx, wire.AttemptRequest{Step: step, Tool: c.Tool,
		Attempt: attempt, MaxAttempts: w.scn.Policy.Retry.MaxAttempts, Key: key, Request: exch})
	return
}

// setResult keeps a step's result for ${step.field} references.
func (w *worker) setResult(step string, raw json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.results[step] = decodeResult(raw)
}

// decide renders a call's arguments (${run}, ${step.field}). When the policy
// journals decisions, the rendered arguments are recorded under
// "<step>#args" before the first attempt, and a later run reuses that record
// instead of rendering again: arguments that would come out differently
// after a restart then keep their key.
func (w *worker) decide(ctx context.Context, c scenario.Call, step string, args map[string]any) (map[string]any, error) {
	w.mu.Lock()
	rendered := render(args, w.results, w.plan.Run).(map[string]any)
	w.mu.Unlock()
	if !w.plan.Policy.Journal || !w.scn.Policy.JournalDecisions {
		return rendered, nil
	}
	name := step + scenario.DecisionSuffix
	rec, ok, err := w.rt.journal(ctx, url.PathEscape(name))
	if err != nil {
		return nil, err
	}
	// A decision of this very run is not reused: an agent-level retry in a
	// new turn may have rewritten the arguments on purpose.
	if ok && rec.Run != w.plan.Run {
		dec := json.NewDecoder(bytes.NewReader(rec.Result))
		dec.UseNumber()
		var prior map[string]any
		if err := dec.Decode(&prior); err != nil {
			return nil, fmt.Errorf("%s: recorded decision: %w", step, err)
		}
		if prior == nil {
			return nil, fmt.Errorf("%s: recorded decision is not an argument object", step)
		}
		w.rt.later(history.Event{Type: history.StepReplayed, Step: name, Tool: c.Tool,
			Result: rec.Result, ResultRun: rec.Run, Text: history.ReplayDecision})
		return prior, nil
	}
	canon, err := idemkey.Canonical(rendered)
	if err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", step, err)
	}
	if err := w.rt.putJournal(ctx, url.PathEscape(name), history.JournalRecord{Tool: c.Tool, Result: canon}); err != nil {
		return nil, fmt.Errorf("%s: journal decision: %w", step, err)
	}
	return rendered, nil
}

// stop records how the execution ended early.
func (w *worker) stop(ctx context.Context, typ history.Type, step, msg string) error {
	if err := w.rt.event(ctx, history.Event{Type: typ, Step: step, Error: msg}); err != nil {
		return err
	}
	return errStopped
}

func retryable(o history.Outcome, nonRetryable []string) bool {
	if o == history.OutcomeMismatch || o == history.OutcomeRejected {
		return false
	}
	return !contains(nonRetryable, string(o))
}

// key derives the attempt's idempotency key the way the scenario's agent
// does (see Key).
func (w *worker) key(step, activity string, args map[string]any, order []string, attempt int) (string, error) {
	p := w.scn.Policy
	return Key(KeyInput{From: p.KeyFrom, Digits: p.KeyDigits, Canonical: p.CanonicalArgs(), Execution: w.plan.Execution,
		Step: step, Activity: activity, Args: args, Order: order, Attempt: attempt})
}

// KeyInput is what an attempt's idempotency key is derived from.
type KeyInput struct {
	// From, Digits and Canonical are the scenario's key policy.
	From      scenario.KeyFrom
	Digits    int
	Canonical bool
	// Execution, Step and Activity name the call; Activity is the
	// activity id Temporal's key takes (the call's number in a run).
	Execution, Step, Activity string
	Args                      map[string]any
	// Order is the order the agent wrote the arguments in, hashed as
	// written when the policy is not canonical.
	Order   []string
	Attempt int
}

// Key derives an attempt's idempotency key by the scenario's key_from: from
// the intent (right), or with the attempt or the time mixed in, or over
// arguments in the order the agent wrote them (wrong, to show why), or as
// Temporal recommends. retrylab's worker and its Temporal activities
// (temporal/agentflow) both derive keys here.
func Key(in KeyInput) (string, error) {
	scope := in.Step
	switch in.From {
	case scenario.KeyFromAttempt:
		scope = fmt.Sprintf("%s#%d", in.Step, in.Attempt)
	case scenario.KeyFromTimestamp:
		scope = in.Step + "@" + time.Now().UTC().Format(time.RFC3339Nano)
	case scenario.KeyFromStep:
		return idemkey.FromCanonical(in.Execution, in.Step, nil, in.Digits)
	case scenario.KeyFromTemporal:
		return TemporalKey(in.Execution, in.Activity, in.Digits)
	}
	if in.Canonical {
		return idemkey.Derive(in.Execution, scope, in.Args, in.Digits)
	}
	written, err := idemkey.Ordered(in.Args, in.Order)
	if err != nil {
		return "", err
	}
	return idemkey.FromCanonical(in.Execution, scope, written, in.Digits)
}

// TemporalKey is Temporal's recommended idempotency key, from the workflow
// id and the activity id, in retrylab's key form (key_from: temporal).
func TemporalKey(workflowID, activityID string, digits int) (string, error) {
	return idemkey.FromCanonical(workflowID, activityID, nil, digits)
}

func (w *worker) args(step string) (map[string]any, error) {
	raw, ok := w.plan.Args[step]
	if !ok {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", step, err)
	}
	return args, nil
}

// request builds the HTTP request for a tool call and its trace form.
func (w *worker) request(tool scenario.Tool, step string, args map[string]any, attempt int, key string) (*http.Request, *history.Exchange, error) {
	req, body, err := ToolRequest(context.Background(), tool.Service, tool.Op, w.plan.MailURL, w.plan.CRMURL, args,
		attrib.Attribution{Execution: w.plan.Execution, Step: step, Key: key, Attempt: attempt, Run: w.plan.Run})
	if err != nil {
		return nil, nil, err
	}
	headers := map[string]string{}
	if key != "" {
		headers[attrib.HeaderIdempotencyKey] = key
	}
	return req, &history.Exchange{Method: req.Method, URL: req.URL.Path, Headers: headers, Body: body}, nil
}

// ToolRequest builds the HTTP request of one attempt of a tool call on the
// simulated world: the operation's method and path, its JSON body (also
// returned, nil for a read), the Idempotency-Key when at has one, and
// retrylab's attribution headers. retrylab's worker and its Temporal
// activities (temporal/agentflow) both build requests here.
func ToolRequest(ctx context.Context, service, op, mailURL, crmURL string, args map[string]any, at attrib.Attribution) (*http.Request, []byte, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, nil, err
	}
	var method, url string
	id, _ := args["id"].(string)
	switch service + "/" + op {
	case "mail/send":
		method, url = http.MethodPost, mailURL+"/v1/send"
	case "crm/upsert":
		method, url = http.MethodPut, crmURL+"/v1/records/"+id
	case "crm/create":
		method, url = http.MethodPost, crmURL+"/v1/records"
	case "crm/get":
		method, url, body = http.MethodGet, crmURL+"/v1/records/"+id, nil
	default:
		return nil, nil, fmt.Errorf("%s: no such operation %s/%s", at.Step, service, op)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	at.SetHeader(req.Header)
	return req, body, nil
}

type result struct {
	outcome      history.Outcome
	status       int
	deduplicated bool
	duration     time.Duration
	body         json.RawMessage
	response     *history.Exchange
	err          string
}

// send makes one attempt with a real deadline and classifies its outcome.
func (w *worker) send(ctx context.Context, req *http.Request, timeout time.Duration) result {
	// The deadline is counted from the attempt's start, so a timeout's
	// recorded duration is never under its deadline: taken after the
	// context, start could lag it by a preemption on a loaded machine, and
	// the explorer said 'timeout 999ms' of a 1s deadline.
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	resp, err := w.tools.Do(req.WithContext(ctx))
	var r result
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err == nil {
			r.status = resp.StatusCode
			r.body = validJSON(body)
			headers := map[string]string{}
			for _, h := range []string{"Idempotent-Replayed", "Retry-After", "Content-Type"} {
				if v := resp.Header.Get(h); v != "" {
					headers[h] = v
				}
			}
			r.response = &history.Exchange{Status: resp.StatusCode, Headers: headers, Body: r.body}
			r.deduplicated = resp.Header.Get("Idempotent-Replayed") == "true"
		}
	}
	r.duration = time.Since(start)
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)):
		r.outcome, r.err = history.OutcomeTimeout, fmt.Sprintf("no response within %s", timeout)
	case err != nil:
		r.outcome, r.err = history.OutcomeError, err.Error()
	case r.status >= 200 && r.status < 300:
		r.outcome = history.OutcomeOK
	case r.status == http.StatusConflict:
		r.outcome = history.OutcomeConflict
	case r.status == http.StatusUnprocessableEntity:
		r.outcome = history.OutcomeMismatch
	case r.status >= 500:
		r.outcome = history.OutcomeError
	default:
		r.outcome = history.OutcomeRejected
	}
	return r
}

func validJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(string(b))
	return q
}

func decodeResult(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v
}

// dieRecorded is the crash after the record (fault 5): what the worker
// reported is on disk first, then it dies.
func (w *worker) dieRecorded(ctx context.Context) {
	if err := w.rt.flush(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "retrylab worker: before the planned crash:", err)
	}
	die()
}

// die is a crash: SIGKILL of this very process, exit code 137.
func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func reversed(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[len(in)-1-i] = s
	}
	return out
}
