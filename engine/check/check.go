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
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/plural"
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
	// op is the operation its request names, when it had a request (req).
	op       string
	req      bool
	finished bool
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
	steps   []string
	tool    string
	kind    scenario.Kind
	op      string // send, upsert, create, get ("" if never attempted)
	opAt    int    // 1 + the index of the attempt op is from
	done    bool
	unknown bool
	effects []Effect
	agg     intentAgg
}

// intentAgg is what the check keeps of an intent's attempts, gathered in
// their order (aggregate): their number and faults, whether its key was
// forgotten, and the slots of the range model.
type intentAgg struct {
	attempts int
	faults   map[fault.Point]int
	// first is each key's first effect, by the world clock; expired is set
	// once a later effect under it came after the retention.
	first   map[string]time.Time
	expired bool
	// slots are the range model's distinct effects that may have happened
	// (true: certainly happened); attempts that are their own slot (no
	// key, not an upsert) are only counted, in unique.
	slots          map[slot]bool
	uniqueHi       int
	uniqueLo       int
	keyTime        map[string]time.Time
	epoch          map[string]int
	dedupe, ranged bool
}

// callKey is a call's tool and canonical arguments: calls that agree on
// both are one intent.
type callKey struct{ tool, args string }

// slot is one of the range model's distinct effects: a key in one of its
// epochs (the times the provider forgot it), an upsert's fields, or an
// attempt started more than once.
type slot struct {
	kind slotKind
	s    string // the key, the fields, or the step
	n    int    // the key's epoch, or the attempt's number
}

type slotKind uint8

const (
	slotKey slotKind = iota
	slotFields
	slotAttempt
)

// stepAgg is what the check keeps of a step's attempts before the
// intents are final: the flags and operation they give their intent.
type stepAgg struct {
	done, unknown bool
	op            string
	opAt          int
}

func (i *intent) read() bool { return i.kind == scenario.KindRead || i.op == "get" }

type walk struct {
	x       history.Execution
	opts    Options
	policy  history.Policy
	intents []*intent
	byStep  map[string]*intent
	byCall  map[callKey]*intent   // tool and canonical args
	effects map[*attempt][]Effect // each attempt's, attached by finish
	// order lists the attempts in Seq order while there are at most keep
	// of them; past that (capped) it is dropped, and aggregate reads the
	// history again (reread) instead, so memory does not grow with the
	// attempts.
	order  []*attempt
	keep   int
	capped bool
	reread func(fn func(history.Event)) error
	// What is kept of every attempt as it is taken, whatever their number.
	nAttempts    int
	steps        map[string]stepAgg
	wanted       map[attemptID]bool     // attempts the ledger's effects name
	kept         map[attemptID]*attempt // their records (the last of each)
	occurs       map[attemptID]int      // how often an attempt started twice or more started
	faultCount   map[fault.Point]int
	firstFaults  []Injection // the first two
	nFaults      int
	explainedAll bool
	injections   []Injection // every fault, while explainedAll and the exact model may apply
	noExact      bool        // the scenario does not resolve: no exact model, no injections kept
	unfinished   []*attempt  // taken at the end without an answer or a crash
	lastSeq      uint64
	finished     bool // an end event was seen
	rerun        bool // a run started after the execution had finished
	external     bool // a kill from outside or a host death
	tampered     bool // a journal record was deleted by hand
	disturbed    []string
	kills        killCounts
	vio          []Violation

	// The reading of the history, an event at a time (Apply).
	t        *trace.Trace
	events   int
	runs     int
	ended    bool
	deleted  uint64   // the first journal record deleted by hand
	tamper   []string // disturbances from deleted records, which come first
	recorded map[string]journalRecord
	replayed []string
	crashes  map[int]*trace.Note
	// queue holds the attempts started and not yet taken, in start (Seq)
	// order: one is taken once it and all before it have settled.
	queue []*trace.Attempt
	// strs interns the strings every attempt repeats (step, key, request
	// body, fault, outcome), so a long history's attempts share them.
	strs map[string]string
	// jumped is set when the history does not begin at event 1.
	jumped bool
	// space is where the walk's maps and lists came from and go back to
	// (nil: its own).
	space *walkSpace
}

// walkTotals is what the report adds of a walk beside its verdict: a job
// keeps it until its batch joins the report, and lets go of the walk.
type walkTotals struct {
	opts        Options
	kills       killCounts
	faultCount  map[fault.Point]int
	firstFaults []Injection
	nFaults     int
}

// totals is what the report adds of w.
func (w *walk) totals() walkTotals {
	return walkTotals{opts: w.opts, kills: w.kills, faultCount: w.faultCount, firstFaults: w.firstFaults, nFaults: w.nFaults}
}

// walkSpace is the space of a worker's walks, reused from one short
// history to the next: the fold's trace and the walk's maps and lists are
// cleared instead of made again for each of a million executions. Only
// what no verdict keeps is reused: the intents, attempts and violations a
// walk makes are its own.
type walkSpace struct {
	w       walk
	t       *trace.Trace
	byStep  map[string]*intent
	byCall  map[callKey]*intent
	strs    map[string]string
	steps   map[string]stepAgg
	intents []*intent
	order   []*attempt
	queue   []*trace.Attempt
	// The maps of the ledger's effects, made for the first history that
	// has some and kept from then on (empty).
	wanted  map[attemptID]bool
	kept    map[attemptID]*attempt
	effects map[*attempt][]Effect
	// The maps aggregate gives intents (intentAgg), which nothing keeps
	// past finish (an intent's faults, which its operation keeps, are
	// its own).
	times  mapPool[string, time.Time]
	epochs mapPool[string, int]
	slots  mapPool[slot, bool]
	// finish's and aggregate's maps of one call.
	seen      map[attemptID]int
	predicted map[*intent]int
	scheduled map[string]bool
	ids       map[effectID]bool
}

// spaceEvents bounds the histories whose walks give their space back: a
// map keeps the size its longest history grew it to, and clearing a large
// one for each short history after it would cost more than making small
// ones.
const spaceEvents = 64

// walk starts the walk of a short history in the space.
func (s *walkSpace) walk(x history.Execution, opts Options, keep int, effects []Effect) *walk {
	if s.t == nil {
		*s = walkSpace{t: trace.New(x.ID), byStep: map[string]*intent{}, byCall: map[callKey]*intent{},
			strs: map[string]string{}, steps: map[string]stepAgg{}, seen: map[attemptID]int{},
			predicted: map[*intent]int{}, scheduled: map[string]bool{}, ids: map[effectID]bool{}}
		s.t.Stream()
	} else {
		s.t.Reset(x.ID)
	}
	w := &s.w
	*w = walk{x: x, opts: opts, policy: x.Policy, byStep: s.byStep, byCall: s.byCall, t: s.t, strs: s.strs,
		keep: keep, steps: s.steps, explainedAll: true, intents: s.intents, order: s.order, queue: s.queue, space: s}
	w.want(effects)
	return w
}

// release gives w's space back for the next walk, emptied, or drops it
// after a long history. w is not used after.
func (s *walkSpace) release(w *walk) {
	if w.events > spaceEvents || len(w.order) > spaceEvents {
		*s = walkSpace{}
		return
	}
	clear(s.byStep)
	clear(s.byCall)
	clear(s.strs)
	clear(s.steps)
	clear(s.seen)
	clear(s.predicted)
	clear(s.scheduled)
	clear(s.ids)
	clear(s.wanted)
	s.times.reset()
	s.epochs.reset()
	s.slots.reset()
	if w.kept != nil {
		clear(w.kept)
		s.kept = w.kept
	}
	if w.effects != nil {
		clear(w.effects)
		s.effects = w.effects
	}
	clear(w.intents)
	clear(w.order)
	s.intents, s.order = w.intents[:0], w.order[:0]
	*w = walk{} // nothing of the history stays reachable
}

// mapPool hands out maps of one walk and empties them for the next.
type mapPool[K comparable, V any] struct {
	maps []map[K]V
	used int
}

func (p *mapPool[K, V]) get() map[K]V {
	if p.used == len(p.maps) {
		p.maps = append(p.maps, map[K]V{})
	}
	p.used++
	return p.maps[p.used-1]
}

func (p *mapPool[K, V]) reset() {
	for _, m := range p.maps[:p.used] {
		clear(m)
	}
	p.used = 0
}

// fromPool is a map from the pool of w's space, or a new one for a walk
// of its own.
func fromPool[K comparable, V any](w *walk, pool func(*walkSpace) *mapPool[K, V]) map[K]V {
	if w.space == nil {
		return map[K]V{}
	}
	return pool(w.space).get()
}

// orMade is m, or a new map when m is nil.
func orMade[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// scratch returns m emptied when it is the space's, else a new map: a map
// of one call of finish or aggregate.
func scratch[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}

// journalRecord is a call's first journal record.
type journalRecord struct {
	seq uint64
	run int
}

type killCounts struct{ planned, external, host int }

func newWalk(x history.Execution, opts Options, keep int, effects []Effect) *walk {
	// The maps most histories never write to (effects, recorded, crashes,
	// wanted, kept, occurs, faultCount) are made on their first write: a
	// wide database checks a million executions, most of one attempt.
	w := &walk{x: x, opts: opts, policy: x.Policy, byStep: map[string]*intent{}, byCall: map[callKey]*intent{},
		t: trace.New(x.ID), strs: map[string]string{}, keep: keep, steps: map[string]stepAgg{}, explainedAll: true}
	w.t.Stream()
	w.want(effects)
	return w
}

// want notes the attempts the ledger's effects name.
func (w *walk) want(effects []Effect) {
	if len(effects) > 0 {
		if s := w.space; s != nil {
			if s.wanted == nil {
				s.wanted = map[attemptID]bool{}
			}
			w.wanted = s.wanted
		} else {
			w.wanted = make(map[attemptID]bool, len(effects))
		}
	}
	for _, e := range effects {
		w.wanted[attemptID{e.Attr.Step, e.Attr.Attempt}] = true
	}
}

func (w *walk) violate(kind, step, detail string) {
	w.vio = append(w.vio, Violation{Execution: w.x.ID, Step: step, Policy: w.policy.String(), Kind: kind, Detail: detail})
}

// intentFor finds or creates the intent of a scheduled call, merging the
// intents of its step id and of its tool and arguments when they differ.
func (w *walk) intentFor(step, tool, args string) *intent {
	call := callKey{tool, args}
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

// apply folds one event of the history (engine/trace) and takes from the
// model what the check needs as it becomes known: the intents, the
// faults, the kills, and each attempt once it has settled, which the fold
// then forgets. Memory holds the check's small record of each attempt,
// never the history.
func (w *walk) apply(ev history.Event) {
	if w.events == 0 && ev.Seq != 1 {
		w.violate("durability", ev.Step, fmt.Sprintf("history jumps from event 0 to %d", ev.Seq))
		w.jumped = true
	}
	w.events++
	prevCall := w.t.LastCall(ev.Step)
	prevAttempt := w.t.Attempt(ev.Step, ev.Attempt)
	seen := ev.Type == history.AttemptStarted && w.t.Seen(ev.Step, ev.Attempt)
	history.Apply(w.t, ev)
	for ; w.runs < len(w.t.Runs); w.runs++ {
		if w.ended {
			w.rerun = true
			w.disturb("run again after it finished")
		}
	}
	if c := w.t.LastCall(ev.Step); c != nil && c != prevCall {
		if c.Unscheduled {
			w.intentFor(c.Call, "", "")
		} else {
			in := w.intentFor(c.Call, c.Tool, string(c.Args))
			if c.Kind != "" {
				in.kind = scenario.Kind(c.Kind)
			}
		}
	}
	switch ev.Type {
	case history.AttemptStarted:
		if a := w.t.Attempt(ev.Step, ev.Attempt); a != nil && a != prevAttempt {
			w.queue = append(w.queue, a)
			if seen {
				id := attemptID{ev.Step, ev.Attempt}
				if w.occurs == nil {
					w.occurs = map[attemptID]int{}
				}
				w.occurs[id] = max(w.occurs[id], 1) + 1
			}
		}
	case history.StepRecorded:
		if _, ok := w.recorded[ev.Step]; !ok {
			if w.recorded == nil {
				w.recorded = map[string]journalRecord{}
			}
			w.recorded[ev.Step] = journalRecord{ev.Seq, ev.Run}
		}
	case history.StepReplayed:
		w.replayed = append(w.replayed, ev.Step)
	case history.WorkerCrashed:
		for _, r := range w.t.Runs {
			if n := r.End; n != nil && n.Seq == ev.Seq && n.Kind == trace.RunCrashed {
				if w.crashes == nil {
					w.crashes = map[int]*trace.Note{}
				}
				w.crashes[r.Number] = n
				w.kill(n)
			}
		}
	case history.ExecutionCompleted, history.ExecutionFailed, history.Escalated:
		w.ended = true
	case history.JournalDeleted:
		w.tampered = true
		w.tamper = append(w.tamper, "a journal record was deleted by hand")
		if w.deleted == 0 {
			w.deleted = ev.Seq
		}
	}
	w.take(false)
}

// take hands the settled attempts at the head of the queue to the check
// (all of them at the history's end) and forgets them in the fold.
func (w *walk) take(all bool) {
	i := 0
	for ; i < len(w.queue); i++ {
		ta := w.queue[i]
		if !all && !ta.Finished && !ta.Crashed {
			break
		}
		w.attempt(ta)
		w.t.Forget(ta)
	}
	w.queue = append(w.queue[:0], w.queue[i:]...)
}

// attempt takes one attempt of the history.
func (w *walk) attempt(ta *trace.Attempt) {
	if rec, ok := w.recorded[ta.Call]; ok && w.policy.Journal && rec.seq < ta.Seq && ta.Run > rec.run && (w.deleted == 0 || ta.Seq < w.deleted) {
		w.violate("invariant", ta.Call, fmt.Sprintf("attempt %d re-executes a step whose result is recorded in the journal", ta.N))
	}
	a := recordOf(ta, w.crashes, w.intern)
	w.nAttempts++
	st := w.steps[a.step]
	if a.req {
		st.op, st.opAt = a.op, w.nAttempts
	}
	switch {
	case a.finished && a.outcome == history.OutcomeOK:
		st.done = true
	case a.finished && (a.outcome == history.OutcomeTimeout || a.outcome == history.OutcomeError):
		st.unknown = true
	case !a.finished:
		st.unknown = true
	}
	w.steps[a.step] = st
	for _, p := range a.points {
		if w.faultCount == nil {
			w.faultCount = map[fault.Point]int{}
		}
		w.faultCount[p]++
		in := Injection{Step: a.step, Attempt: a.n, Point: p}
		if w.nFaults < 2 {
			w.firstFaults = append(w.firstFaults, in)
		}
		w.nFaults++
		if w.explainedAll && !w.noExact {
			w.injections = append(w.injections, in)
			if len(w.injections) == 1024 {
				// A long list is kept only for the exact model; asking
				// whether it applies costs a lookup, so only now.
				if w.opts.Resolve == nil {
					w.noExact = true
				} else {
					_, ok := w.opts.Resolve(w.x.Scenario)
					w.noExact = !ok
				}
				if w.noExact {
					w.injections = nil
				}
			}
		}
	}
	if w.explainedAll && !a.explained() {
		w.explainedAll, w.injections = false, nil
	}
	if id := (attemptID{a.step, a.n}); w.wanted[id] {
		if w.kept == nil {
			if w.space != nil {
				w.kept, w.space.kept = orMade(w.space.kept), nil
			} else {
				w.kept = map[attemptID]*attempt{}
			}
		}
		w.kept[id] = a
	}
	if !w.capped {
		w.order = append(w.order, a)
		if len(w.order) > w.keep {
			w.capped, w.order = true, nil
		}
	}
	if !a.finished && !a.crashed {
		w.unfinished = append(w.unfinished, a)
	}
}

// recordOf is the check's record of one settled attempt of the fold.
func recordOf(ta *trace.Attempt, crashes map[int]*trace.Note, intern func(string) string) *attempt {
	a := &attempt{step: intern(ta.Call), n: ta.N, run: ta.Run, key: intern(ta.Key)}
	if ta.Request != nil {
		a.op, a.req = opOf(ta.Request), true
		a.args = intern(canonicalBody(ta.Request.Body))
	}
	if len(ta.Faults) > 0 {
		a.points = make([]fault.Point, len(ta.Faults))
		for i, f := range ta.Faults {
			a.points[i] = fault.Point(intern(f))
		}
	}
	switch {
	case ta.Finished:
		a.outcome, a.finished = history.Outcome(intern(string(ta.Outcome))), true
	case ta.Crashed:
		c := crashes[ta.Run]
		a.crashed, a.crashPoint, a.external = true, fault.Point(ta.CrashFault), c == nil || externalKill(c)
	}
	return a
}

// intern returns the walk's copy of s.
func (w *walk) intern(s string) string {
	if c, ok := w.strs[s]; ok {
		return c
	}
	w.strs[s] = s
	return s
}

// done ends the reading: the attempts still open are taken as they are,
// the fold's anomalies join the violations (after a jump at the very
// start, before the attempts'), and each attempt joins its intent, now
// that every call is known.
func (w *walk) done() {
	w.unfinished = nil // only those still open at the end
	w.take(true)
	first := 0
	if w.jumped {
		first = 1
	}
	attemptVio := append([]Violation(nil), w.vio[first:]...)
	w.vio = w.vio[:first]
	w.lastSeq = w.t.LastSeq
	for _, an := range w.t.Anomalies {
		kind := "invariant"
		if an.Jump {
			kind = "durability"
		}
		w.violate(kind, an.Call, an.Text)
	}
	w.vio = append(w.vio, attemptVio...)
	w.disturbed = append(w.tamper, w.disturbed...)
	for _, a := range w.unfinished {
		w.disturb(fmt.Sprintf("%s attempt %d never finished", a.step, a.n))
	}
	w.unfinished = nil
	for step, st := range w.steps {
		in := w.byStep[step]
		in.done = in.done || st.done
		in.unknown = in.unknown || st.unknown
		if st.opAt > in.opAt {
			in.op, in.opAt = st.op, st.opAt
		}
	}
	for id := range w.recorded {
		if in := w.byStep[id]; in != nil {
			in.done = true
		}
	}
	// A replay of a step this history never scheduled is a recorded
	// decision ("<step>#args"), not an operation.
	for _, id := range w.replayed {
		if in := w.byStep[id]; in != nil {
			in.done = true
		}
	}
	if w.ended {
		w.finished = true
	}
	if w.space != nil {
		clear(w.queue)
		w.space.queue = w.queue[:0]
	}
	w.t, w.strs, w.queue = nil, nil, nil
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
	// Service and Seq name one ledger entry; stable all the same, as
	// sort.Slice was on the few effects of an execution.
	slices.SortStableFunc(effects, func(a, b Effect) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	for _, e := range effects {
		in := w.byStep[e.Attr.Step]
		a := w.kept[attemptID{e.Attr.Step, e.Attr.Attempt}]
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
		if w.effects == nil {
			if w.space != nil {
				w.effects, w.space.effects = orMade(w.space.effects), nil
			} else {
				w.effects = map[*attempt][]Effect{}
			}
		}
		w.effects[a] = append(w.effects[a], e)
		in.effects = append(in.effects, e)
	}
	if err := w.aggregate(); err != nil {
		w.violate("durability", "", fmt.Sprintf("history could not be read again: %v", err))
	}

	pred, exact := w.predict()
	var predicted map[*intent]int
	var seen map[string]bool
	if w.space != nil {
		predicted, seen = w.space.predicted, w.space.scheduled
	}
	predicted = scratch(predicted)
	if exact {
		seen = scratch(seen)
		for _, in := range w.intents {
			for _, s := range in.steps {
				predicted[in] += pred.Effects[s]
				seen[s] = true
			}
		}
		for _, s := range sortedSteps(pred.Effects) {
			if !seen[s] && pred.Effects[s] > 0 {
				w.violate("model", s, fmt.Sprintf("the model expects %s of %s, which the history never scheduled", plural.Count(pred.Effects[s], "effect"), s))
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
			op.Departure = fmt.Sprintf("%s; the %s model expects %s", plural.Count(op.Effects, "effect"), op.Model, op.Predicted)
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
		Kind: in.kind, Attempts: in.agg.attempts, Done: in.done, Unknown: in.unknown}
	var ids map[effectID]bool
	if w.space != nil {
		ids = w.space.ids
	}
	ids = scratch(ids)
	for _, e := range in.effects {
		if !ids[e.identity()] {
			ids[e.identity()] = true
			op.Refs = append(op.Refs, e.String())
		}
	}
	op.Effects = len(ids)
	op.Faults = in.agg.faults
	op.KeyExpired = in.agg.expired
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

// predict runs the exact model when it applies: the scenario is known and
// modelled, the execution finished, and nothing but its planned faults
// disturbed it.
func (w *walk) predict() (Prediction, bool) {
	if w.opts.Resolve == nil || len(w.disturbed) > 0 || !w.x.Status.Finished() {
		return Prediction{}, false
	}
	if !w.explainedAll {
		return Prediction{}, false
	}
	plan, ok := w.opts.Resolve(w.x.Scenario)
	if !ok {
		return Prediction{}, false
	}
	pred, err := Predict(w.judgedExpiry(plan), w.policy, w.injections)
	if err != nil {
		return Prediction{}, false
	}
	return pred, true
}

// rangeOf bounds an intent's effects from its history (aggregate
// gathered it): each attempt that certainly took effect adds one unless an
// earlier one with the same key (still remembered) or, for an upsert, the
// same fields already did; each attempt whose outcome is unknown may add
// one.
func (w *walk) rangeOf(in *intent) Range {
	if in.read() {
		return Range{}
	}
	rg := Range{Lo: in.agg.uniqueLo, Hi: in.agg.uniqueHi}
	for _, yes := range in.agg.slots {
		rg.Hi++
		if yes {
			rg.Lo++
		}
	}
	return rg
}

// dedupes reports whether the scenario's mail tool honours keys.
func (w *walk) dedupes() bool {
	if w.opts.Resolve != nil {
		if p, ok := w.opts.Resolve(w.x.Scenario); ok && p.Scenario != nil {
			for _, t := range p.Scenario.Tools {
				if t.Service == "mail" && !t.Deduplicates() {
					return false
				}
			}
		}
	}
	return true
}

// aggregate goes over the attempts once more, in Seq order, now that every
// intent, its operation and the ledger's effects are known, and gathers
// what classify and rangeOf need of them (intentAgg). The attempts are in
// memory (order) unless there were more than keep: then the history is
// read again, its attempts taken as they settle and let go.
func (w *walk) aggregate() error {
	dedupe, ret := w.dedupes(), w.retention()
	var seen map[attemptID]int
	if w.space != nil {
		seen = w.space.seen
	}
	seen = scratch(seen)
	add := func(a *attempt) {
		in := w.byStep[a.step]
		if in == nil {
			return
		}
		ag := &in.agg
		ag.attempts++
		for _, p := range a.points {
			if ag.faults == nil {
				ag.faults = map[fault.Point]int{}
			}
			ag.faults[p]++
		}
		id := attemptID{a.step, a.n}
		var fx []Effect
		if k := w.kept[id]; k != nil {
			// The effects went to the last attempt of the id, as the
			// index of finish has it.
			seen[id]++
			if k == a || seen[id] == max(w.occurs[id], 1) {
				fx = w.effects[k]
			}
		}
		if a.key != "" {
			for _, e := range fx {
				if ag.first == nil {
					ag.first = fromPool(w, func(s *walkSpace) *mapPool[string, time.Time] { return &s.times })
				}
				t, ok := ag.first[a.key]
				if !ok {
					ag.first[a.key] = e.Time
					continue
				}
				if e.Time.Sub(t) > ret {
					ag.expired = true
				}
			}
		}
		if in.read() {
			return
		}
		r := a.reach()
		if r == reachNo {
			return
		}
		var sl slot
		switch {
		case a.key != "" && dedupe:
			if ag.epoch == nil {
				ag.epoch = fromPool(w, func(s *walkSpace) *mapPool[string, int] { return &s.epochs })
				ag.keyTime = fromPool(w, func(s *walkSpace) *mapPool[string, time.Time] { return &s.times })
			}
			for _, e := range fx {
				if t, ok := ag.keyTime[a.key]; ok && e.Time.Sub(t) > ret {
					ag.epoch[a.key]++
				}
				ag.keyTime[a.key] = e.Time
			}
			sl = slot{slotKey, a.key, ag.epoch[a.key]}
		case in.op == "upsert":
			sl = slot{slotFields, a.args, 0}
		case w.occurs[id] == 0:
			// An attempt started once is a slot of its own.
			ag.uniqueHi++
			if r == reachYes {
				ag.uniqueLo++
			}
			return
		default:
			sl = slot{slotAttempt, a.step, a.n}
		}
		if ag.slots == nil {
			ag.slots = fromPool(w, func(s *walkSpace) *mapPool[slot, bool] { return &s.slots })
		}
		ag.slots[sl] = ag.slots[sl] || r == reachYes
	}
	if !w.capped {
		for _, a := range w.order {
			add(a)
		}
		return nil
	}
	return w.replay(add)
}

// replay reads the history again and hands each attempt, in Seq order, to
// fn once it has settled (all that are left at the end), keeping only the
// attempts not yet settled.
func (w *walk) replay(fn func(*attempt)) error {
	t := trace.New(w.x.ID)
	t.Stream()
	crashes := map[int]*trace.Note{}
	var queue []*trace.Attempt
	same := func(s string) string { return s }
	take := func(all bool) {
		i := 0
		for ; i < len(queue); i++ {
			ta := queue[i]
			if !all && !ta.Finished && !ta.Crashed {
				break
			}
			fn(recordOf(ta, crashes, same))
			t.Forget(ta)
		}
		queue = append(queue[:0], queue[i:]...)
	}
	err := w.reread(func(ev history.Event) {
		prev := t.Attempt(ev.Step, ev.Attempt)
		history.Apply(t, ev)
		switch ev.Type {
		case history.AttemptStarted:
			if a := t.Attempt(ev.Step, ev.Attempt); a != nil && a != prev {
				queue = append(queue, a)
			}
		case history.WorkerCrashed:
			for _, r := range t.Runs {
				if n := r.End; n != nil && n.Seq == ev.Seq && n.Kind == trace.RunCrashed {
					crashes[r.Number] = n
				}
			}
		}
		take(false)
	})
	take(true)
	return err
}
