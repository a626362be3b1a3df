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
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
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
func (e Effect) identity() string {
	if e.Service == world.ServiceCRM {
		return fmt.Sprintf("crm/%s@%d", e.Ref, e.Version)
	}
	return e.Service + "/" + e.Ref
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
	// Faults are the faults injected into its attempts.
	Faults []fault.Point
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
	checked map[string]bool
	report  *Report
}

// New returns an empty checker.
func New(opts Options) *Checker {
	return &Checker{opts: opts, effects: map[string][]Effect{}, checked: map[string]bool{}, report: newReport()}
}

// AddEffects adds ledger entries.
func (c *Checker) AddEffects(effects ...Effect) {
	for _, e := range effects {
		if e.Service == world.ServiceMail {
			c.report.MailEffects++
		} else {
			c.report.CRMWrites++
		}
		if e.Attr.Execution == "" {
			c.loose = append(c.loose, e)
			continue
		}
		c.effects[e.Attr.Execution] = append(c.effects[e.Attr.Execution], e)
	}
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
	effects := c.effects[x.ID]
	delete(c.effects, x.ID)
	c.checked[x.ID] = true
	w := newWalk(x, c.opts)
	w.read(events)
	res := w.finish(effects)
	c.report.add(x, w, res)
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

// --- one execution ------------------------------------------------------

type reach int

const (
	reachNo reach = iota
	reachMaybe
	reachYes
)

type attempt struct {
	step    string
	n       int
	run     int
	key     string
	args    string
	points  []fault.Point
	outcome history.Outcome // "" until AttemptFinished
	// crash is set when the worker died with this attempt open.
	crashed    bool
	crashPoint fault.Point
	external   bool
	effects    []Effect
}

func (a *attempt) point() fault.Point {
	if len(a.points) == 0 {
		return ""
	}
	return a.points[0]
}

func (a *attempt) has(p fault.Point) bool {
	for _, x := range a.points {
		if x == p {
			return true
		}
	}
	return false
}

// noRequest reports whether the attempt's request never took effect: the
// worker died before sending it, or the service dropped it or failed before
// acting.
func (a *attempt) noRequest() bool {
	return a.has(fault.CrashBeforeCall) || a.has(fault.TimeoutBeforeEffect) || a.has(fault.ServerError)
}

// reach says whether the attempt's request took effect at the provider.
func (a *attempt) reach() reach {
	switch {
	case a.noRequest():
		return reachNo
	case a.outcome == history.OutcomeOK:
		return reachYes
	case a.outcome == history.OutcomeTimeout && a.has(fault.TimeoutAfterEffect):
		return reachYes
	case a.outcome == history.OutcomeRejected || a.outcome == history.OutcomeMismatch || a.outcome == history.OutcomeConflict:
		return reachNo
	case a.outcome == "" && a.crashed && !a.external && a.crashPoint == fault.CrashAfterEffect && a.has(fault.CrashAfterEffect):
		return reachYes
	}
	return reachMaybe // an unplanned timeout or error, or a kill with the request in flight
}

// explained reports whether the attempt ended the way its planned fault
// (or the lack of one) says it must: then the exact model applies.
func (a *attempt) explained() bool {
	if len(a.points) > 1 {
		return false
	}
	switch a.point() {
	case "", fault.SlowResponse, fault.CrashAfterRecord:
		return a.outcome == history.OutcomeOK
	case fault.TimeoutBeforeEffect, fault.TimeoutAfterEffect:
		return a.outcome == history.OutcomeTimeout
	case fault.ServerError:
		return a.outcome == history.OutcomeError
	case fault.CrashBeforeCall, fault.CrashAfterEffect:
		return a.outcome == "" && a.crashed && !a.external && a.crashPoint == a.point()
	}
	return false
}

type intent struct {
	steps    []string
	tool     string
	kind     scenario.Kind
	op       string // send, upsert, create, get ("" if never attempted)
	attempts []*attempt
	done     bool
	unknown  bool
	effects  []Effect
}

func (i *intent) read() bool { return i.kind == scenario.KindRead || i.op == "get" }

type walk struct {
	x         history.Execution
	opts      Options
	policy    history.Policy
	intents   []*intent
	byStep    map[string]*intent
	byCall    map[string]*intent // tool + canonical args
	attempts  map[attemptID]*attempt
	order     []*attempt
	faults    []Injection
	lastSeq   uint64
	finished  bool // an end event was seen
	rerun     bool // a run started after the execution had finished
	external  bool // a kill from outside or a host death
	tampered  bool // a journal record was deleted by hand
	disturbed []string
	kills     killCounts
	vio       []Violation
}

type killCounts struct{ planned, external, host int }

func newWalk(x history.Execution, opts Options) *walk {
	return &walk{x: x, opts: opts, policy: x.Policy, byStep: map[string]*intent{}, byCall: map[string]*intent{},
		attempts: map[attemptID]*attempt{}}
}

func (w *walk) violate(kind, step, detail string) {
	w.vio = append(w.vio, Violation{Execution: w.x.ID, Step: step, Policy: w.policy.String(), Kind: kind, Detail: detail})
}

// intentFor finds or creates the intent of a scheduled call, merging the
// intents of its step id and of its tool and arguments when they differ.
func (w *walk) intentFor(step, tool, args string) *intent {
	call := tool + "\x00" + args
	a, b := w.byStep[step], w.byCall[call]
	if tool == "" {
		b = nil
	}
	var in *intent
	switch {
	case a == nil && b == nil:
		in = &intent{}
		w.intents = append(w.intents, in)
	case a == nil:
		in = b
	case b == nil || a == b:
		in = a
	default: // merge b into a
		in = a
		for _, s := range b.steps {
			w.byStep[s] = a
			a.steps = append(a.steps, s)
		}
		a.attempts = append(a.attempts, b.attempts...)
		a.done = a.done || b.done
		a.unknown = a.unknown || b.unknown
		for k, v := range w.byCall {
			if v == b {
				w.byCall[k] = a
			}
		}
		for i, x := range w.intents {
			if x == b {
				w.intents = append(w.intents[:i], w.intents[i+1:]...)
				break
			}
		}
	}
	if w.byStep[step] == nil {
		in.steps = append(in.steps, step)
	}
	w.byStep[step] = in
	if tool != "" {
		w.byCall[call] = in
		in.tool = tool
	}
	return in
}

// read folds the history (engine/trace) and takes from the model what the
// check needs: the intents and their attempts, the faults, the kills, and
// the events that break a rule of the engine.
func (w *walk) read(events []history.Event) {
	if len(events) > 0 && events[0].Seq != 1 {
		w.violate("durability", events[0].Step, fmt.Sprintf("history jumps from event 0 to %d", events[0].Seq))
	}
	t := trace.FoldHistory(w.x.ID, events)
	w.lastSeq = t.LastSeq
	for _, an := range t.Anomalies {
		kind := "invariant"
		if an.Jump {
			kind = "durability"
		}
		w.violate(kind, an.Call, an.Text)
	}
	var deleted uint64 // the first journal record deleted by hand
	for _, n := range t.Nodes {
		if n, ok := n.(*trace.Note); ok && n.Kind == trace.JournalDeleted {
			w.tampered = true
			w.disturb("a journal record was deleted by hand")
			if deleted == 0 {
				deleted = n.Seq
			}
		}
	}
	type record struct {
		seq uint64
		run int
	}
	recorded := map[string]record{} // each call's first journal record
	var replayed []string
	var attempts []*trace.Attempt
	crashes := map[int]*trace.Note{}
	ended := false
	for _, r := range t.Runs {
		if ended {
			w.rerun = true
			w.disturb("run again after it finished")
		}
		eachNode(r.Nodes, func(n trace.Node) {
			switch n := n.(type) {
			case *trace.Call:
				if n.Unscheduled {
					w.intentFor(n.Call, "", "")
					break
				}
				in := w.intentFor(n.Call, n.Tool, string(n.Args))
				if n.Kind != "" {
					in.kind = scenario.Kind(n.Kind)
				}
			case *trace.Attempt:
				if n.NotKept == 0 {
					attempts = append(attempts, n)
				}
			case *trace.Replay:
				replayed = append(replayed, n.Call)
			case *trace.Note:
				switch n.Kind {
				case trace.StepRecorded:
					if _, ok := recorded[n.Call]; !ok {
						recorded[n.Call] = record{n.Seq, n.Run}
					}
				case trace.RunCrashed:
					crashes[r.Number] = n
					w.kill(n)
				case trace.ExecutionEnded, trace.Escalated:
					ended = true
				}
			}
		})
	}
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].Seq < attempts[j].Seq })
	for _, ta := range attempts {
		in := w.byStep[ta.Call]
		if rec, ok := recorded[ta.Call]; ok && w.policy.Journal && rec.seq < ta.Seq && ta.Run > rec.run && (deleted == 0 || ta.Seq < deleted) {
			w.violate("invariant", ta.Call, fmt.Sprintf("attempt %d re-executes a step whose result is recorded in the journal", ta.N))
		}
		a := &attempt{step: ta.Call, n: ta.N, run: ta.Run, key: ta.Key}
		if ta.Request != nil {
			in.op = opOf(ta.Request)
			a.args = canonicalBody(ta.Request.Body)
		}
		for _, f := range ta.Faults {
			a.points = append(a.points, fault.Point(f))
			w.faults = append(w.faults, Injection{Step: ta.Call, Attempt: ta.N, Point: fault.Point(f)})
		}
		switch {
		case ta.Finished:
			a.outcome = history.Outcome(ta.Outcome)
			switch a.outcome {
			case history.OutcomeOK:
				in.done = true
			case history.OutcomeTimeout, history.OutcomeError:
				in.unknown = true
			}
		case ta.Crashed:
			c := crashes[ta.Run]
			a.crashed, a.crashPoint, a.external = true, fault.Point(ta.CrashFault), c == nil || externalKill(c)
			in.unknown = true
		default:
			in.unknown = true
			w.disturb(fmt.Sprintf("%s attempt %d never finished", ta.Call, ta.N))
		}
		w.attempts[attemptID{ta.Call, ta.N}] = a
		w.order = append(w.order, a)
		in.attempts = append(in.attempts, a)
	}
	for id := range recorded {
		if in := w.byStep[id]; in != nil {
			in.done = true
		}
	}
	// A replay of a step this history never scheduled is a recorded
	// decision ("<step>#args"), not an operation.
	for _, id := range replayed {
		if in := w.byStep[id]; in != nil {
			in.done = true
		}
	}
	if ended {
		w.finished = true
	}
}

// eachNode calls fn for every node under ns, depth first, in order.
func eachNode(ns []trace.Node, fn func(trace.Node)) {
	for _, n := range ns {
		fn(n)
		eachNode(n.Children(), fn)
	}
}

// externalKill reports whether a worker's death was not its planned fault:
// a kill from outside, or the host's death.
func externalKill(n *trace.Note) bool {
	return n.Fault == "" || strings.Contains(n.Error, "from outside")
}

// kill counts a worker's death by who caused it.
func (w *walk) kill(n *trace.Note) {
	external := externalKill(n)
	switch {
	case strings.Contains(n.Error, "host process died"):
		w.kills.host++
	case external:
		w.kills.external++
	default:
		w.kills.planned++
	}
	if external {
		w.external = true
		w.disturb("killed from outside")
	}
}

func (w *walk) disturb(why string) { w.disturbed = append(w.disturbed, why) }

// opOf names a request's operation from its method and path.
func opOf(r *trace.Exchange) string {
	switch {
	case strings.HasPrefix(r.URL, "/v1/send"):
		return "send"
	case r.Method == "PUT":
		return "upsert"
	case r.Method == "POST":
		return "create"
	case r.Method == "GET":
		return "get"
	}
	return ""
}

func canonicalBody(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// finish attaches the ledger's effects, classes every intent, and holds it
// to the model.
func (w *walk) finish(effects []Effect) ExecResult {
	var res ExecResult
	sort.Slice(effects, func(i, j int) bool {
		if effects[i].Service != effects[j].Service {
			return effects[i].Service < effects[j].Service
		}
		return effects[i].Seq < effects[j].Seq
	})
	for _, e := range effects {
		in := w.byStep[e.Attr.Step]
		a := w.attempts[attemptID{e.Attr.Step, e.Attr.Attempt}]
		var why string
		switch {
		case in == nil:
			why = fmt.Sprintf("%s effect %s attributed to step %q, which this execution never scheduled", e.Service, e, e.Attr.Step)
		case a == nil:
			why = fmt.Sprintf("%s effect %s attributed to attempt %d of %s, which never started", e.Service, e, e.Attr.Attempt, e.Attr.Step)
		case a.noRequest():
			why = fmt.Sprintf("%s effect %s from attempt %d of %s, whose request never took effect (%s)", e.Service, e, a.n, a.step, a.point())
		case in.read():
			why = fmt.Sprintf("%s effect %s from a read", e.Service, e)
		}
		if why != "" {
			res.Operations = append(res.Operations, Operation{Execution: w.x.ID, Scenario: w.x.Scenario, Policy: w.policy,
				Steps: []string{e.Attr.Step}, Effects: 1, Refs: []string{e.String()}, Class: Unexpected})
			w.violate("unexpected", e.Attr.Step, why)
			continue
		}
		a.effects = append(a.effects, e)
		in.effects = append(in.effects, e)
	}

	pred, exact := w.predict()
	predicted := map[*intent]int{}
	if exact {
		seen := map[string]bool{}
		for _, in := range w.intents {
			for _, s := range in.steps {
				predicted[in] += pred.Effects[s]
				seen[s] = true
			}
		}
		for _, s := range sortedSteps(pred.Effects) {
			if !seen[s] && pred.Effects[s] > 0 {
				w.violate("model", s, fmt.Sprintf("the model expects %d effects of %s, which the history never scheduled", pred.Effects[s], s))
			}
		}
		if pred.Status != w.x.Status {
			w.violate("status", "", fmt.Sprintf("ended %s; the model expects %s", w.x.Status, pred.Status))
		}
	}
	for _, in := range w.intents {
		op := w.classify(in)
		if exact {
			op.Model, op.Predicted = ModelExact, Range{predicted[in], predicted[in]}
		} else {
			op.Model, op.Predicted = ModelRange, w.rangeOf(in)
		}
		if op.Effects < op.Predicted.Lo || op.Effects > op.Predicted.Hi {
			op.Departure = fmt.Sprintf("%d effects; the %s model expects %s", op.Effects, op.Model, op.Predicted)
			w.violate("model", strings.Join(op.Steps, ","), op.Departure+effectList(op.Refs))
		}
		step := strings.Join(op.Steps, ",")
		if w.policy.Keys && w.policy.Journal {
			switch op.Class {
			case Lost:
				w.violate("lost", step, "recorded as done, but the ledger holds no effect")
			case Duplicated:
				if !(op.KeyExpired && op.Departure == "") {
					w.violate("duplicated", step, fmt.Sprintf("%d effects for one intent%s", op.Effects, effectList(op.Refs)))
				}
			}
		}
		res.Operations = append(res.Operations, op)
	}
	res.Violations = w.vio
	res.LastSeq = w.lastSeq
	res.Kills = w.kills.planned + w.kills.external + w.kills.host
	return res
}

func effectList(refs []string) string {
	if len(refs) == 0 {
		return ""
	}
	return " (" + strings.Join(refs, ", ") + ")"
}

// classify counts an intent's distinct effects and classes it.
func (w *walk) classify(in *intent) Operation {
	op := Operation{Execution: w.x.ID, Scenario: w.x.Scenario, Policy: w.policy, Steps: in.steps, Tool: in.tool,
		Kind: in.kind, Attempts: len(in.attempts), Done: in.done, Unknown: in.unknown}
	ids := map[string]bool{}
	for _, e := range in.effects {
		if !ids[e.identity()] {
			ids[e.identity()] = true
			op.Refs = append(op.Refs, e.String())
		}
	}
	op.Effects = len(ids)
	for _, a := range in.attempts {
		op.Faults = append(op.Faults, a.points...)
	}
	op.KeyExpired = w.keyExpired(in)
	switch {
	case in.read():
		if in.done {
			op.Class = OK
		} else {
			op.Class = Failed
		}
	case op.Effects > 1:
		op.Class = Duplicated
	case op.Effects == 1 && (in.unknown || !in.done):
		op.Class = Recovered
	case op.Effects == 1:
		op.Class = OK
	case in.done:
		op.Class = Lost
	default:
		op.Class = Failed
	}
	return op
}

// retention is the key retention of the execution's scenario.
func (w *walk) retention() time.Duration {
	if w.opts.Resolve != nil {
		if p, ok := w.opts.Resolve(w.x.Scenario); ok && p.Scenario != nil && p.Scenario.Policy.Retention > 0 {
			return p.Scenario.Policy.Retention.D()
		}
	}
	return world.DefaultRetention
}

// keyExpired reports whether the ledger shows the intent's key forgotten:
// two effects under one key, further apart by the world clock than the
// retention.
func (w *walk) keyExpired(in *intent) bool {
	first := map[string]time.Time{}
	ret := w.retention()
	for _, a := range in.attempts {
		if a.key == "" {
			continue
		}
		for _, e := range a.effects {
			t, ok := first[a.key]
			if !ok {
				first[a.key] = e.Time
				continue
			}
			if e.Time.Sub(t) > ret {
				return true
			}
		}
	}
	return false
}

// predict runs the exact model when it applies: the scenario is known and
// modelled, the execution finished, and nothing but its planned faults
// disturbed it.
func (w *walk) predict() (Prediction, bool) {
	if w.opts.Resolve == nil || len(w.disturbed) > 0 || !w.x.Status.Finished() {
		return Prediction{}, false
	}
	for _, a := range w.order {
		if !a.explained() {
			return Prediction{}, false
		}
	}
	plan, ok := w.opts.Resolve(w.x.Scenario)
	if !ok {
		return Prediction{}, false
	}
	pred, err := Predict(plan, w.policy, w.faults)
	if err != nil {
		return Prediction{}, false
	}
	return pred, true
}

// rangeOf bounds an intent's effects from its history: each attempt that
// certainly took effect adds one unless an earlier one with the same key
// (still remembered) or, for an upsert, the same fields already did; each
// attempt whose outcome is unknown may add one.
func (w *walk) rangeOf(in *intent) Range {
	if in.read() {
		return Range{}
	}
	dedupe := true
	if w.opts.Resolve != nil {
		if p, ok := w.opts.Resolve(w.x.Scenario); ok && p.Scenario != nil {
			for _, t := range p.Scenario.Tools {
				if t.Service == "mail" && !t.Deduplicates() {
					dedupe = false
				}
			}
		}
	}
	ret := w.retention()
	type slot struct{ yes bool }
	slots := map[string]*slot{}
	var order []string
	epoch := map[string]int{}
	keyTime := map[string]time.Time{}
	for _, a := range in.attempts {
		r := a.reach()
		if r == reachNo {
			continue
		}
		var id string
		switch {
		case a.key != "" && dedupe:
			for _, e := range a.effects {
				if t, ok := keyTime[a.key]; ok && e.Time.Sub(t) > ret {
					epoch[a.key]++
				}
				keyTime[a.key] = e.Time
			}
			id = fmt.Sprintf("key:%s#%d", a.key, epoch[a.key])
		case in.op == "upsert":
			id = "fields:" + a.args
		default:
			id = fmt.Sprintf("attempt:%s#%d", a.step, a.n)
		}
		s := slots[id]
		if s == nil {
			s = &slot{}
			slots[id] = s
			order = append(order, id)
		}
		if r == reachYes {
			s.yes = true
		}
	}
	var rg Range
	for _, id := range order {
		rg.Hi++
		if slots[id].yes {
			rg.Lo++
		}
	}
	return rg
}
