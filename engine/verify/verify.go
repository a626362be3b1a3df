// Package verify runs a scenario's script on a host and holds the outcome to
// the scenario's expectations: messages per recipient in the provider's
// outbox, CRM rows and writes, the execution's final status, and the other
// counts a scenario may promise. Every fixture is a claim about the engine's
// semantics; this package checks it.
//
// A script is a list of actions (see scenario.Expect.Script): run, resume,
// delete-journal STEP, advance DURATION, reset-world, submit and
// submit-twice. Each action that starts a worker waits for it to end
// (completed, killed, failed or escalated) before the next action.
package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
)

// StartKey is the run-level idempotency key that submit and submit-twice
// start with.
const StartKey = "verify-submit"

// DefaultTimeout bounds one scenario's script when Options.Timeout is zero.
const DefaultTimeout = time.Minute

// ErrScript means an action of the script could not be carried out, for
// example a resume of an execution that already finished.
var ErrScript = errors.New("script action failed")

// Options adjust how a scenario is run.
type Options struct {
	// Keys and Journal override the scenario's policy when set: an
	// instructor breaks a defence and watches the scenario fail.
	Keys, Journal *bool
	// StartKeys, when set to false, makes submit and submit-twice start
	// without a run-level idempotency key.
	StartKeys *bool
	// Timeout bounds the whole script; zero means DefaultTimeout.
	Timeout time.Duration
}

// Overrides describes the options that change the scenario, e.g. "keys off",
// or "" when none do.
func (o Options) Overrides() string {
	var parts []string
	onOff := func(name string, v *bool) {
		if v == nil {
			return
		}
		if *v {
			parts = append(parts, name+" on")
		} else {
			parts = append(parts, name+" off")
		}
	}
	onOff("keys", o.Keys)
	onOff("journal", o.Journal)
	onOff("start-keys", o.StartKeys)
	return strings.Join(parts, ", ")
}

// Policy is the policy a scenario runs under with these options.
func (o Options) Policy(scn *scenario.Scenario) history.Policy {
	p := history.Policy{Keys: scn.Policy.Keys, Journal: scn.Policy.Journal}
	if o.Keys != nil {
		p.Keys = *o.Keys
	}
	if o.Journal != nil {
		p.Journal = *o.Journal
	}
	return p
}

// Outcome is what a script left behind.
type Outcome struct {
	// Execution is the last execution the script touched.
	Execution string `json:"execution"`
	// Executions lists the distinct executions the script touched, in order.
	Executions []string `json:"executions"`
	// Status and Runs are the last execution's.
	Status history.Status `json:"status"`
	Runs   int            `json:"runs"`
	// Outbox is the number of messages per recipient in the whole outbox.
	Outbox map[string]int `json:"outbox"`
	// Messages is the outbox itself.
	Messages []world.Message `json:"messages"`
	// CRMRows and CRMWrites count the CRM's rows and applied write requests.
	CRMRows   int `json:"crm_rows"`
	CRMWrites int `json:"crm_writes"`
	// MailRequests is the number of requests the mail API answered for the
	// touched executions.
	MailRequests int `json:"mail_requests"`
	// Attempts counts attempts per step id of the last execution.
	Attempts map[string]int `json:"attempts"`
}

// OutboxTotal is the number of messages in the outbox.
func (o Outcome) OutboxTotal() int { return len(o.Messages) }

// Check is one expectation held to the outcome.
type Check struct {
	// Field names what was checked: "outbox jordan@acme.dev", "status", ...
	Field string
	Got   string
	Want  string
	OK    bool
}

// String is the passing form "outbox jordan@acme.dev=2 (expected 2)".
func (c Check) String() string {
	sep := "="
	if c.Field == "status" {
		sep = " "
	}
	return fmt.Sprintf("%s%s%s (expected %s)", c.Field, sep, c.Got, c.Want)
}

// Problem is the failing form "outbox jordan@acme.dev: got 2, expected 1".
func (c Check) Problem() string {
	return fmt.Sprintf("%s: got %s, expected %s", c.Field, c.Got, c.Want)
}

// Report is the verdict on one scenario.
type Report struct {
	Scenario  string
	Policy    history.Policy
	Overrides string
	Outcome   Outcome
	Checks    []Check
	// Err is set when the script could not be carried out.
	Err error
}

// Passed reports whether the script ran and every check held.
func (r Report) Passed() bool {
	if r.Err != nil {
		return false
	}
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Failures lists the checks that did not hold.
func (r Report) Failures() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Line is the one-line verdict verify prints:
//
//	ok   naive  outbox jordan@acme.dev=2 (expected 2)  status completed (expected completed)
//	FAIL safe [keys off]: outbox jordan@acme.dev: got 2, expected 1
func (r Report) Line() string {
	name := r.Scenario
	if r.Overrides != "" {
		name += " [" + r.Overrides + "]"
	}
	if r.Passed() {
		parts := make([]string, len(r.Checks))
		for i, c := range r.Checks {
			parts[i] = c.String()
		}
		return strings.TrimRight("ok   "+name+"  "+strings.Join(parts, "  "), " ")
	}
	var probs []string
	if r.Err != nil {
		probs = append(probs, r.Err.Error())
	}
	for _, c := range r.Failures() {
		probs = append(probs, c.Problem())
	}
	return "FAIL " + name + ": " + strings.Join(probs, "; ")
}

// Opener opens a host on a scratch database and returns it with a function
// that closes it and removes what it created.
type Opener func() (h *engine.Host, closeFn func() error, err error)

// Scratch opens hosts with base's settings on a new database in a new
// temporary directory each time; base.DBPath is ignored. Scratch databases
// are thrown away, so callers may set base.NoSync: the workers that verify
// kills are child processes, and what the host wrote survives them either way.
func Scratch(base engine.Config) Opener {
	return func() (*engine.Host, func() error, error) {
		dir, err := os.MkdirTemp("", "retrylab-verify-*")
		if err != nil {
			return nil, nil, fmt.Errorf("scratch database: %w", err)
		}
		cfg := base
		cfg.DBPath = filepath.Join(dir, "verify.db")
		h, err := engine.Open(cfg)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("scratch database: %w", err)
		}
		return h, func() error { return errors.Join(h.Close(), os.RemoveAll(dir)) }, nil
	}
}

// Verify opens a scratch host, runs the scenario's script on it, and holds
// the outcome to the scenario's expectations. A script that cannot be
// carried out is a failed report, not an error; the error is for a host
// that cannot be opened or closed.
func Verify(ctx context.Context, open Opener, scn *scenario.Scenario, opts Options) (Report, error) {
	rep := Report{Scenario: scn.Name, Policy: opts.Policy(scn), Overrides: opts.Overrides()}
	h, closeFn, err := open()
	if err != nil {
		return rep, fmt.Errorf("verify %s: %w", scn.Name, err)
	}
	out, runErr := Run(ctx, h, scn, opts)
	rep.Outcome = out
	if runErr != nil {
		rep.Err = runErr
	} else {
		rep.Checks = Compare(scn.Expect, out)
	}
	if err := closeFn(); err != nil {
		return rep, fmt.Errorf("verify %s: close scratch host: %w", scn.Name, err)
	}
	return rep, nil
}

// Run carries out the scenario's script on h and collects the outcome.
// It does not reset h first.
func Run(ctx context.Context, h *engine.Host, scn *scenario.Scenario, opts Options) (Outcome, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := &script{h: h, scn: scn, opts: opts, seen: map[string]bool{}}
	for i, action := range scn.Expect.Script {
		if err := s.do(ctx, action); err != nil {
			return s.outcome(), fmt.Errorf("%w: expect.script[%d] %q: %w", ErrScript, i, action, err)
		}
	}
	out := s.outcome()
	return out, s.err
}

// Script carries out a scenario's script one action at a time, for a
// learner who presses a key per action and looks at the state in between
// (the explorer's lesson mode). Run is Script for the whole script at once.
type Script struct{ s *script }

// NewScript prepares scn's script on h. It does not reset h.
func NewScript(h *engine.Host, scn *scenario.Scenario, opts Options) *Script {
	return &Script{s: &script{h: h, scn: scn, opts: opts, seen: map[string]bool{}}}
}

// Do carries out one action (an entry of scn.Expect.Script), waiting for a
// worker it starts to end, within Options.Timeout (DefaultTimeout if zero).
func (p *Script) Do(ctx context.Context, action string) error {
	timeout := p.s.opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.s.do(ctx, action); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrScript, action, err)
	}
	return nil
}

// Current is the execution the last action ran, "" before any.
func (p *Script) Current() string { return p.s.cur }

// Outcome reads what the actions so far left behind.
func (p *Script) Outcome() (Outcome, error) {
	p.s.err = nil
	out := p.s.outcome()
	return out, p.s.err
}

// script carries out actions and remembers the executions it touched.
type script struct {
	h     *engine.Host
	scn   *scenario.Scenario
	opts  Options
	cur   string
	order []string
	seen  map[string]bool
	err   error // from collecting the outcome
}

func (s *script) touch(id string) {
	s.cur = id
	if !s.seen[id] {
		s.seen[id] = true
		s.order = append(s.order, id)
	}
}

func (s *script) runOptions() engine.RunOptions {
	// A script's run is its scenario's execution again (safe's second
	// run replays the first's journal), never a new one.
	return engine.RunOptions{Keys: s.opts.Keys, Journal: s.opts.Journal, Restart: true}
}

func (s *script) startKey() string {
	if s.opts.StartKeys != nil && !*s.opts.StartKeys {
		return ""
	}
	return StartKey
}

func (s *script) do(ctx context.Context, action string) error {
	verb, arg, _ := strings.Cut(strings.TrimSpace(action), " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case "run":
		return s.start(ctx, s.runOptions())
	case "submit":
		o := s.runOptions()
		o.StartKey = s.startKey()
		return s.start(ctx, o)
	case "submit-twice":
		o := s.runOptions()
		o.StartKey = s.startKey()
		first, err := s.h.StartScenario(s.scn, o)
		if err != nil {
			return err
		}
		s.touch(first.Execution)
		second, err := s.h.StartScenario(s.scn, o)
		if err != nil {
			_, _ = first.Wait(ctx)
			return fmt.Errorf("second start: %w", err)
		}
		s.touch(second.Execution)
		if _, err := first.Wait(ctx); err != nil {
			return err
		}
		_, err = second.Wait(ctx)
		s.cur = first.Execution
		return err
	case "resume":
		return s.resume(ctx)
	case "delete-journal":
		return s.deleteJournal(arg)
	case "advance":
		var d scenario.Duration
		if err := d.UnmarshalText([]byte(arg)); err != nil {
			return err
		}
		return s.h.Providers().AdvanceClock(d.D())
	case "reset-world":
		return s.h.Providers().ResetWorld()
	}
	return scenario.ValidateAction(action)
}

// deleteJournal deletes a step's journal record of the current execution.
// A record that is not there (the policy was overridden to journal nothing)
// leaves nothing to delete, and the script goes on.
func (s *script) deleteJournal(step string) error {
	if s.cur == "" {
		return errors.New("no execution to delete a journal record of")
	}
	entries, err := s.h.Journal(s.cur)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Step == step {
			return s.h.DeleteJournal(s.cur, step)
		}
	}
	return nil
}

// start starts a run and waits for it to end.
func (s *script) start(ctx context.Context, o engine.RunOptions) error {
	r, err := s.h.StartScenario(s.scn, o)
	if err != nil {
		return err
	}
	s.touch(r.Execution)
	_, err = r.Wait(ctx)
	return err
}

// resume continues the current execution with a new run under the policy it
// started with, like `retrylab resume`, with the scenario as verify holds it
// (overrides included) rather than as the catalogue has it.
func (s *script) resume(ctx context.Context) error {
	if s.cur == "" {
		return errors.New("no execution to resume")
	}
	x, err := s.h.Execution(s.cur)
	if err != nil {
		return err
	}
	if x.Status.Finished() {
		return fmt.Errorf("execution %s has %s; nothing to resume", x.ID, x.Status)
	}
	keys, journal := x.Policy.Keys, x.Policy.Journal
	return s.start(ctx, engine.RunOptions{Keys: &keys, Journal: &journal, Execution: x.ID})
}

// outcome reads what the script left behind.
func (s *script) outcome() Outcome {
	out := Outcome{Execution: s.cur, Executions: append([]string(nil), s.order...),
		Outbox: map[string]int{}, Attempts: map[string]int{}}
	var errs []error
	msgs, err := s.h.Providers().Outbox()
	errs = append(errs, err)
	out.Messages = msgs
	for _, m := range msgs {
		out.Outbox[m.To]++
	}
	recs, err := s.h.Providers().Records()
	errs = append(errs, err)
	out.CRMRows = len(recs)
	writes, err := s.h.Providers().CRMWrites(0, 0)
	errs = append(errs, err)
	out.CRMWrites = len(writes)
	for _, id := range s.order {
		out.MailRequests += s.h.Providers().MailRequests(id)
	}
	if s.cur != "" {
		x, err := s.h.Execution(s.cur)
		errs = append(errs, err)
		out.Status, out.Runs = x.Status, x.Runs
		events, err := s.h.Events(s.cur, 0, 0)
		errs = append(errs, err)
		for step, n := range history.Fold(s.cur, events).AttemptCounts() {
			out.Attempts[step] += n
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.err = fmt.Errorf("read outcome: %w", err)
	}
	return out
}

// Compare holds an outcome to a scenario's expectations, in a fixed order:
// outbox per recipient, CRM rows and writes, mail requests, executions, runs,
// attempts per step, status. Only what the scenario expects is checked, but
// a recipient it does not list must have no messages.
func Compare(e scenario.Expect, o Outcome) []Check {
	var checks []Check
	recipients := map[string]bool{}
	if len(e.Outbox) > 0 {
		for to := range e.Outbox {
			recipients[to] = true
		}
		for to := range o.Outbox {
			recipients[to] = true
		}
	}
	for _, to := range sortedKeys(recipients) {
		checks = append(checks, intCheck("outbox "+to, o.Outbox[to], e.Outbox[to]))
	}
	for _, c := range []struct {
		name string
		want *int
		got  int
	}{
		{"crm_rows", e.CRMRows, o.CRMRows},
		{"crm_writes", e.CRMWrites, o.CRMWrites},
		{"mail_requests", e.MailRequests, o.MailRequests},
		{"executions", e.Executions, len(o.Executions)},
		{"runs", e.Runs, o.Runs},
	} {
		if c.want != nil {
			checks = append(checks, intCheck(c.name, c.got, *c.want))
		}
	}
	steps := map[string]bool{}
	for step := range e.Attempts {
		steps[step] = true
	}
	for _, step := range sortedKeys(steps) {
		checks = append(checks, intCheck("attempts "+step, o.Attempts[step], e.Attempts[step]))
	}
	if e.Status != "" {
		got := string(o.Status)
		if got == "" {
			got = "none"
		}
		checks = append(checks, Check{Field: "status", Got: got, Want: e.Status, OK: got == e.Status})
	}
	return checks
}

func intCheck(field string, got, want int) Check {
	return Check{Field: field, Got: strconv.Itoa(got), Want: strconv.Itoa(want), OK: got == want}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
