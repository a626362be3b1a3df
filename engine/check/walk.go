package check

import (
	"fmt"
	"strings"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
)

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
