// Package check holds retrylab to exactly-once effects the way Jepsen holds
// databases to their promises: it reads what the engine recorded (each
// execution's history) and what the simulated providers did (the outbox and
// the CRM's write log, where every effect carries the execution, step,
// attempt and key of the request that caused it), and classes every logical
// operation.
//
// An operation is one intended effect of an execution: a tool call, grouped
// by step id and also by tool and canonical arguments, so that an
// agent-level retry that picked a fresh step id is still the same intent.
// Each operation is
//
//   - ok: one effect, and the history says it is done;
//   - recovered: an attempt's outcome was unknown to the caller (a timeout,
//     or a crash with the request in flight), and there is exactly one effect;
//   - failed: no effect, and the history does not claim one;
//   - lost: the history says done (AttemptFinished ok, StepRecorded or
//     StepReplayed) but the ledger has no effect;
//   - duplicated: more than one effect for one intent;
//   - unexpected: an effect nobody asked for: attributed to an execution,
//     step or attempt that never scheduled it, to an attempt whose request
//     never took effect, or to no execution at all.
//
// Reads have no effect. An idempotent upsert counts the row versions it
// produced, not the writes: repeating it is not a duplicate.
//
// Independently, every operation is held to a model of the engine: an
// exact one (see [Predict]) when the execution ran undisturbed by anything
// but its planned faults, and a range read from the history otherwise (a
// kill from outside, a host death, an unplanned timeout: an attempt whose
// outcome is unknown may or may not have taken effect). Under the unsafe
// policies the duplicates are expected, and the count must be the one the
// model predicts, no fewer and no more.
package check

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
)

// Class is how an operation turned out.
type Class string

// The classes, in table order.
const (
	OK         Class = "ok"
	Recovered  Class = "recovered"
	Failed     Class = "failed"
	Lost       Class = "lost"
	Duplicated Class = "duplicated"
	Unexpected Class = "unexpected"
)

// Classes lists every class in table order.
var Classes = []Class{OK, Recovered, Failed, Lost, Duplicated, Unexpected}

// Effect is one side effect in a provider's ledger.
type Effect struct {
	Service string // world.ServiceMail or world.ServiceCRM
	Seq     uint64 // position in the outbox or the CRM write log
	Ref     string // message id, or record id
	Version int    // the CRM row's version after the write
	Op      string // "send", or the CRM write's op
	Time    time.Time
	Attr    world.Attribution
}

// MessageEffect is the effect of one outbox message.
func MessageEffect(m world.Message) Effect {
	return Effect{Service: world.ServiceMail, Seq: m.Seq, Ref: m.ID, Op: "send", Time: m.Time, Attr: m.Attribution}
}

// WriteEffect is the effect of one entry of the CRM's write log.
func WriteEffect(w world.CRMWrite) Effect {
	return Effect{Service: world.ServiceCRM, Seq: w.Seq, Ref: w.RecordID, Version: w.Version, Op: w.Op, Time: w.Time,
		Attr: w.Attribution}
}

// identity says which effects are one: each message is its own; CRM writes
// that leave a row at the same version are one (an unchanged upsert, or a
// create that found its row).
func (e Effect) identity() effectID {
	if e.Service == world.ServiceCRM {
		return effectID{service: world.ServiceCRM, ref: e.Ref, version: e.Version}
	}
	return effectID{service: e.Service, ref: e.Ref}
}

// effectID tells a ledger's distinct effects apart: a message, or one
// version of a CRM record.
type effectID struct {
	service, ref string
	version      int
}

func (e Effect) String() string {
	if e.Service == world.ServiceCRM {
		return fmt.Sprintf("%s@v%d", e.Ref, e.Version)
	}
	return e.Ref
}

// Range is a prediction: at least Lo and at most Hi effects.
type Range struct{ Lo, Hi int }

func (r Range) String() string {
	if r.Lo == r.Hi {
		return fmt.Sprint(r.Lo)
	}
	return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
}

// Model names how an operation's count was predicted.
type Model string

// Models.
const (
	ModelExact Model = "exact" // the execution ran undisturbed: Predict
	ModelRange Model = "range" // read from the history: unknown outcomes may or may not have taken effect
)

// Operation is one logical operation and its verdict.
type Operation struct {
	Execution string
	Scenario  string
	Policy    history.Policy
	// Steps are the step ids the intent was called under (more than one
	// after an agent-level retry with a fresh step id).
	Steps []string
	Tool  string
	Kind  scenario.Kind
	// Attempts is the number of attempts made, over all runs.
	Attempts int
	// Done is set when the history says the operation finished.
	Done bool
	// Unknown is set when an attempt's outcome was unknown to the caller.
	Unknown bool
	// Effects is the number of distinct effects in the ledger.
	Effects int
	Refs    []string
	// Faults counts the faults injected into its attempts by point (nil
	// when none was): counts, not a list, so an operation of any number of
	// attempts holds at most one entry per point.
	Faults map[fault.Point]int
	// KeyExpired is set when the key was forgotten between two attempts.
	KeyExpired bool
	Class      Class
	Model      Model
	Predicted  Range
	// Departure explains how the count departs from the model; empty when it
	// does not.
	Departure string
}

// Violation is something that makes the check fail.
type Violation struct {
	Execution string
	Step      string
	Policy    string
	// Kind is "lost", "duplicated", "unexpected", "model" (a count departs
	// from the model), "status" (the execution ended otherwise than the
	// model says), "invariant" (the history breaks a rule of the engine),
	// "durability" (something recorded is missing or unreadable) or
	// "runner" (the chaos runner could not carry a run out).
	Kind   string
	Detail string
}

func (v Violation) String() string {
	where := v.Execution
	if v.Step != "" {
		where += " " + v.Step
	}
	if where == "" {
		where = "-"
	}
	pol := v.Policy
	if pol == "" {
		pol = "-"
	}
	return fmt.Sprintf("%-11s %-28s %-13s %s", v.Kind, where, pol, v.Detail)
}

// Options tune a check.
type Options struct {
	// Resolve finds the plan of a scenario by name, for the exact model. A
	// nil Resolve, or a false answer, leaves the execution to the range.
	Resolve func(name string) (Plan, bool)
	// ExternalOK accepts effects without attribution, as external clients of
	// `retrylab serve` make them, instead of counting them unexpected.
	ExternalOK bool
}

// Checker classes executions one at a time. Feed it the ledger with
// AddEffects, then each execution with Execution, then call Report.
type Checker struct {
	opts    Options
	effects map[string][]Effect // by execution, not yet checked
	loose   []Effect            // unattributed
	report  *Report
	// keep is keepAttempts; tests lower it to check the second pass.
	keep int
}

// New returns an empty checker.
func New(opts Options) *Checker {
	if opts.Resolve != nil {
		opts.Resolve = cachedResolve(opts.Resolve)
	}
	return &Checker{opts: opts, effects: map[string][]Effect{}, report: newReport(), keep: keepAttempts}
}

// resolveCacheSize bounds the scenarios whose plans a checker keeps.
const resolveCacheSize = 1024

// cachedResolve answers resolve's plans, keeping the first
// resolveCacheSize names' answers: a database's executions share a few
// scenarios, and the check asks several times per execution, from the
// workers of CheckDB at once. Calls to resolve are one at a time.
func cachedResolve(resolve func(string) (Plan, bool)) func(string) (Plan, bool) {
	type answer struct {
		plan Plan
		ok   bool
	}
	var (
		mu    sync.Mutex
		known = map[string]answer{}
	)
	return func(name string) (Plan, bool) {
		mu.Lock()
		defer mu.Unlock()
		if a, ok := known[name]; ok {
			return a.plan, a.ok
		}
		plan, ok := resolve(name)
		if len(known) < resolveCacheSize {
			known[name] = answer{plan, ok}
		}
		return plan, ok
	}
}

// AddEffects adds ledger entries.
func (c *Checker) AddEffects(effects ...Effect) {
	for _, e := range effects {
		c.count(e)
		c.hold(e)
	}
}

// count counts a ledger entry in the report.
func (c *Checker) count(e Effect) {
	if e.Service == world.ServiceMail {
		c.report.MailEffects++
	} else {
		c.report.CRMWrites++
	}
}

// hold keeps a counted ledger entry until its execution is checked (or
// the report, when it is unattributed or its execution never is).
func (c *Checker) hold(e Effect) {
	if e.Attr.Execution == "" {
		c.loose = append(c.loose, e)
		return
	}
	c.effects[e.Attr.Execution] = append(c.effects[e.Attr.Execution], e)
}

// ExecResult is the verdict on one execution.
type ExecResult struct {
	Operations []Operation
	Violations []Violation
	// LastSeq is the sequence number of the history's last event.
	LastSeq uint64
	// Kills counts the execution's worker deaths.
	Kills int
}

// Classes counts the execution's operations per class.
func (r ExecResult) Classes() map[Class]int {
	out := map[Class]int{}
	for _, op := range r.Operations {
		out[op.Class]++
	}
	return out
}

// Execution checks one execution against the effects attributed to it so
// far, and adds the verdict to the report.
func (c *Checker) Execution(x history.Execution, events []history.Event) ExecResult {
	r := c.Stream(x, func(fn func(history.Event)) error {
		for _, ev := range events {
			fn(ev)
		}
		return nil
	})
	for _, ev := range events {
		r.Apply(ev)
	}
	return r.Done()
}

// ExecStream checks one execution whose history is read an event at a
// time (Apply), so a history of any length is checked without holding it.
type ExecStream struct {
	c *Checker
	w *walk
}

// keepAttempts is how many attempts of one execution the check keeps in
// memory; an execution with more has its history read a second time
// instead (Stream's reread), so the check's memory stays flat however long
// a history is.
const keepAttempts = 20_000

// Stream starts the check of one execution; feed it the history in order
// and call Done. The ledger's effects of the execution must be added
// before. reread reads the whole history again, in order: an execution of
// more than keepAttempts attempts is checked in two passes.
func (c *Checker) Stream(x history.Execution, reread func(fn func(history.Event)) error) *ExecStream {
	w := newWalk(x, c.opts, c.keep, c.effects[x.ID])
	w.reread = reread
	return &ExecStream{c: c, w: w}
}

// Apply reads the next event of the history.
func (s *ExecStream) Apply(ev history.Event) { s.w.apply(ev) }

// Done checks the execution against the effects attributed to it so far
// and adds the verdict to the report.
func (s *ExecStream) Done() ExecResult {
	c, x := s.c, s.w.x
	effects := c.effects[x.ID]
	delete(c.effects, x.ID)
	s.w.done()
	res := s.w.finish(effects)
	c.report.add(x, s.w.totals(), res)
	return res
}

// Report finishes the check: effects attributed to executions that were
// never checked, and unattributed ones, become unexpected operations.
func (c *Checker) Report() *Report {
	r := c.report
	ids := make([]string, 0, len(c.effects))
	for id := range c.effects {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, e := range c.effects[id] {
			r.addLoose(Operation{Execution: id, Steps: []string{e.Attr.Step}, Effects: 1, Refs: []string{e.String()},
				Class: Unexpected}, fmt.Sprintf("%s effect %s attributed to an execution the database does not hold", e.Service, e))
		}
	}
	c.effects = map[string][]Effect{}
	r.Unattributed = len(c.loose)
	if !c.opts.ExternalOK {
		for _, e := range c.loose {
			r.addLoose(Operation{Effects: 1, Refs: []string{e.String()}, Class: Unexpected},
				fmt.Sprintf("%s effect %s has no attribution: no retrylab execution asked for it", e.Service, e))
		}
	}
	c.loose = nil
	return r
}
