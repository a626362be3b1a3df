package trace

import (
	"encoding/json"
	"fmt"
	"time"
)

// Node is one element of the trace tree: a *Run, *Gap, *Turn, *Call,
// *Attempt, *Replay or *Note. ID is stable while events are applied, so a
// view can keep its expanded and selected state across updates.
type Node interface {
	ID() string
	// Children are the node's own nodes in the order they happened.
	Children() []Node
}

// Trace is one execution's history, folded: runs (worker lifetimes, with
// the gaps where nothing ran) hold turns, turns hold tool calls, calls hold
// their attempts. Build it with New and feed it with Apply; every method
// reads the state so far, so a live trace is read between events.
//
// Reading it: walk Nodes (and each node's Children) for the tree in the
// order things happened, or Runs for the runs alone; Attempt(call, n)
// finds one attempt. Marks are decided here (Attempt.Mark, Run.Mark,
// Note.Mark, Outcome), never by a reader: an attempt is ◆ when the caller
// never learnt its outcome (Unknown) and the history records an effect of
// it. LastAttempts, PlansFired, Unfinished and AttemptCounts answer what a
// new run starts from; Anomalies list what cannot be true of a history.
type Trace struct {
	Execution string
	Scenario  string
	// Policy is the policy in words the execution started with.
	Policy  string
	Started time.Time
	// Last is the time of the latest event.
	Last time.Time
	// LastSeq is the Seq of the latest event applied; Events counts them.
	LastSeq uint64
	Events  int

	// Nodes is the top level: runs, the gaps between them, and notes that
	// belong to no run (a journal record deleted by hand).
	Nodes []Node
	Runs  []*Run
	// End is the execution's end, nil while it has not ended.
	End *Note
	// Anomalies are what the events say that cannot be true of a history:
	// a jump in Seq, an attempt of a call never scheduled, ...
	Anomalies []Anomaly

	runs     map[int]*Run
	cur      *Run
	calls    map[string]*Call // the latest call of each id
	attempts map[attemptKey]*Attempt
	// pending holds effects that arrived before their attempt.
	pending map[attemptKey][]Effect
	// progress is each call id's standing over all runs, in order of its
	// first attempt.
	progress map[string]*progress
	order    []string
	plans    map[int]bool

	// onEffect is told of the effects attached to attempts (OnEffect).
	onEffect func(Effect)
	// faults interns fault names: a long history repeats a few.
	faults map[string]string
	// streaming is set by Stream.
	streaming bool
	// spare are the runs of the trace before its last Reset, emptied, for
	// runOf to open again; spareTurns, spareCalls and spareProgress their
	// turns, calls and progress, for the next history's.
	spare         []*Run
	spareTurns    []*Turn
	spareCalls    []*Call
	spareProgress []*progress
}

// progress is where a call id stands over all runs: its latest attempt
// number, and whether it is still open when an ok answer closes it
// (openAnswered) or only a journal record does (openRecorded).
type progress struct {
	last, count                int
	openAnswered, openRecorded bool
	// forgot holds the attempt numbers forgotten (Forget), as sorted,
	// disjoint ranges: one range while they are forgotten in order.
	forgot []span
}

type attemptKey struct {
	call    string
	attempt int
}

// Anomaly is an event that does not fit the history before it.
type Anomaly struct {
	Seq  uint64
	Call string
	Text string
	// Jump is set when events are missing: Seq jumped.
	Jump bool
}

// New starts an empty trace of one execution.
func New(execution string) *Trace {
	// pending, plans and faults are made on their first write: most
	// histories never need them.
	return &Trace{Execution: execution, runs: map[int]*Run{}, calls: map[string]*Call{},
		attempts: map[attemptKey]*Attempt{}, progress: map[string]*progress{}}
}

// Reset makes t a new trace of execution, as New does, keeping the space
// of its maps and runs for the next history: a reader that folds many
// short histories one after another (check, on a worker) allocates them
// once. Nothing read of t before (its runs, calls, attempts, notes) may be
// used after; a trace made by Stream stays one. Reset a trace only after
// a short history: its maps keep the size the longest one grew them to.
func (t *Trace) Reset(execution string) {
	for _, r := range t.Runs {
		t.recycle(r.Nodes)
		calls, open, nodes := r.calls, r.open, r.Nodes
		clear(calls)
		clear(open)
		clear(nodes)
		*r = Run{calls: calls, open: open, Nodes: nodes[:0]}
		t.spare = append(t.spare, r)
	}
	for _, p := range t.progress {
		*p = progress{forgot: p.forgot[:0]}
		t.spareProgress = append(t.spareProgress, p)
	}
	clear(t.Nodes)
	clear(t.Runs)
	clear(t.runs)
	clear(t.calls)
	clear(t.attempts)
	clear(t.progress)
	clear(t.order)
	*t = Trace{Execution: execution, Nodes: t.Nodes[:0], Runs: t.Runs[:0],
		runs: t.runs, calls: t.calls, attempts: t.attempts, progress: t.progress, order: t.order[:0],
		streaming: t.streaming, spare: t.spare, spareTurns: t.spareTurns, spareCalls: t.spareCalls, spareProgress: t.spareProgress}
}

// recycle empties the turns and calls of a run's nodes (each is in the
// tree once) into the spares, keeping the space of their lists.
func (t *Trace) recycle(nodes []Node) {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Turn:
			t.recycle(n.Nodes)
			clear(n.Nodes)
			*n = Turn{Nodes: n.Nodes[:0]}
			t.spareTurns = append(t.spareTurns, n)
		case *Call:
			clear(n.Nodes)
			clear(n.Attempts)
			*n = Call{Nodes: n.Nodes[:0], Attempts: n.Attempts[:0]}
			t.spareCalls = append(t.spareCalls, n)
		}
	}
}

// newTurn is v, in a spare turn when there is one.
func (t *Trace) newTurn(v Turn) *Turn {
	k := len(t.spareTurns)
	if k == 0 {
		return &v
	}
	n := t.spareTurns[k-1]
	t.spareTurns = t.spareTurns[:k-1]
	v.Nodes = n.Nodes
	*n = v
	return n
}

// newCall is v, in a spare call when there is one.
func (t *Trace) newCall(v Call) *Call {
	k := len(t.spareCalls)
	if k == 0 {
		return &v
	}
	c := t.spareCalls[k-1]
	t.spareCalls = t.spareCalls[:k-1]
	v.Nodes, v.Attempts = c.Nodes, c.Attempts
	*c = v
	return c
}

// Stream makes the trace one for a streaming reader, which reads each
// event's consequences as it is applied and keeps nothing it has read: the
// runs do not list their faults (Run.FaultCount still counts them), and
// the reader lets go of each attempt it has read with Forget. Call it
// before the first event.
func (t *Trace) Stream() { t.streaming = true }

// Forget lets go of an attempt a streaming reader has read and needs no
// more: it leaves the tree (Call.Attempts, Call.Nodes) and Attempt, and
// Call.Released counts it. A reader that renders each event as it is
// applied (show, the handout) forgets each attempt once it has written it,
// so a history of any length folds in memory that grows with its calls,
// not its attempts. Events that arrive later for a forgotten attempt are
// absorbed without an anomaly (an effect is still told to OnEffect).
// Readers that read the whole tree (the explorer, check, the runtime)
// never call it.
func (t *Trace) Forget(a *Attempt) {
	k := attemptKey{a.Call, a.N}
	if t.attempts[k] != a {
		return
	}
	delete(t.attempts, k)
	if r := t.runs[a.Run]; r != nil {
		delete(r.open, k)
	}
	if p := t.progress[a.Call]; p != nil {
		p.forget(a.N)
	}
	c := t.calls[a.Call]
	if r := t.runs[a.Run]; r != nil && r.calls[a.Call] != nil {
		c = r.calls[a.Call]
	}
	if c == nil {
		return
	}
	for i, x := range c.Attempts {
		if x == a {
			c.Attempts = append(c.Attempts[:i:i], c.Attempts[i+1:]...)
			c.Released++
			break
		}
	}
	for j, n := range c.Nodes {
		if n == Node(a) {
			c.Nodes = append(c.Nodes[:j:j], c.Nodes[j+1:]...)
			break
		}
	}
}

// Fold applies events in order to a new trace.
func Fold(execution string, events []Event) *Trace {
	t := New(execution)
	for _, e := range events {
		t.Apply(e)
	}
	return t
}

// Run is one worker lifetime.
type Run struct {
	Number int
	PID    int
	// Policy is the policy in words the run ran with.
	Policy string
	Seq    uint64 // the first event of the run
	// Started and Last are the times of its first and latest events.
	Started, Last time.Time
	// Idle is the time before it with no worker running, from the previous
	// run's last event (0 for the first run).
	Idle  time.Duration
	Nodes []Node
	// Faults are the faults injected during the run, in order (not kept by
	// a streaming trace); FaultCount counts them.
	Faults     []string
	FaultCount int
	// End is how the run ended: its worker's death, or the execution's
	// end; nil while it runs (or when its end left no record).
	End *Note

	turn  *Turn
	calls map[string]*Call // this run's calls by id
	open  map[attemptKey]*Attempt
}

// ID is "run<N>".
func (r *Run) ID() string { return fmt.Sprintf("run%d", r.Number) }

// Children are the run's turns, calls outside a turn, replays and notes.
func (r *Run) Children() []Node { return r.Nodes }

// Mark is how the run ended: ☠, ✓, ✖, ⚑, or … while it has no end.
func (r *Run) Mark() Mark {
	if r.End == nil {
		return MarkRunning
	}
	return r.End.Mark
}

// Crashed reports whether the run's worker died.
func (r *Run) Crashed() bool { return r.End != nil && r.End.Kind == RunCrashed }

// Gap is the time before a run when no worker ran.
type Gap struct {
	Run      int // the run it precedes
	Seq      uint64
	Duration time.Duration
	// AfterCrash is set when the run before it died.
	AfterCrash bool
}

// ID is "gap<seq>".
func (g *Gap) ID() string { return fmt.Sprintf("gap%d", g.Seq) }

// Children: none.
func (g *Gap) Children() []Node { return nil }

// Turn is one turn of the agent.
type Turn struct {
	Run, Number int
	Text        string
	Seq         uint64
	Time        time.Time
	Nodes       []Node
}

// ID is "run<R>/turn<N>".
func (t *Turn) ID() string { return fmt.Sprintf("run%d/turn%d", t.Run, t.Number) }

// Children are the turn's calls and replays.
func (t *Turn) Children() []Node { return t.Nodes }

// Call is one tool call as a run scheduled it. A call resumed in a later
// run is a new Call with the same ID; its attempts go on counting.
type Call struct {
	Call string // the call's id in the execution (a step id)
	Tool string
	// Kind is the tool's safety kind when known.
	Kind  string
	Args  json.RawMessage
	Key   string
	Run   int
	Turn  int
	Seq   uint64
	Time  time.Time
	Attrs map[string]string
	// Unscheduled is set when no CallScheduled announced it: it was made
	// for an attempt (or a record) of an id the source never scheduled.
	Unscheduled bool
	// Attempts are the call's attempts in this run, in order.
	Attempts []*Attempt
	// Recorded is the journal's record of its result, if any.
	Recorded *Note
	Nodes    []Node
	// Released counts the attempts a streaming reader let go (Forget).
	Released int
}

// ID is "run<R>/<call>".
func (c *Call) ID() string { return fmt.Sprintf("run%d/%s", c.Run, c.Call) }

// Children are its attempts and its journal record.
func (c *Call) Children() []Node { return c.Nodes }

// Attempt is one try of a call.
type Attempt struct {
	Call        string
	Tool        string
	N           int
	Run         int
	Key         string
	MaxAttempts int
	Seq         uint64
	Ref         string
	Started     time.Time
	Request     *Exchange
	// Faults are the faults injected into it; Injections say more of each.
	Faults     []string
	Injections []Injection
	// Finished is set once its answer is known.
	Finished     bool
	Outcome      Outcome
	Status       int
	Deduplicated bool
	Duration     time.Duration
	Response     *Exchange
	Error        string
	// Ended is when its answer was recorded (zero until Finished), EndSeq
	// the Seq of that event.
	Ended  time.Time
	EndSeq uint64
	// Retry is the backoff before the next attempt, when one was scheduled
	// (at RetryAt).
	Retry   time.Duration
	RetryAt time.Time
	// Crashed is set when its worker died before an answer; CrashFault is
	// the injected fault that killed it, if one did.
	Crashed    bool
	CrashFault string
	// Effects are what the providers did on its behalf, as recorded.
	Effects []Effect
	// NotKept > 0 says this stands for that many attempts the source did
	// not keep (attempts N-NotKept+1 .. N); Error is the last one's.
	NotKept int
	Attrs   map[string]string
}

// ID is "seq<N>" of its start.
func (a *Attempt) ID() string {
	if a.NotKept > 0 {
		return fmt.Sprintf("notkept%d/%s", a.Seq, a.Call)
	}
	return fmt.Sprintf("seq%d", a.Seq)
}

// Children: none.
func (a *Attempt) Children() []Node { return nil }

// Unknown reports whether the caller never learnt the outcome: a timeout,
// a cancellation, or a worker that died with the request out.
func (a *Attempt) Unknown() bool {
	if !a.Finished {
		return a.Crashed
	}
	return a.Outcome == OutcomeTimeout || a.Outcome == OutcomeCancelled
}

// Ambiguous reports whether the caller never learnt the outcome, but the
// history records an effect of the attempt.
func (a *Attempt) Ambiguous() bool { return a.Unknown() && len(a.Effects) > 0 }

// Mark is the attempt's glyph, decided by the fold.
func (a *Attempt) Mark() Mark {
	switch {
	case a.NotKept > 0:
		return MarkNotKept
	case a.Ambiguous():
		return MarkAmbiguous
	case !a.Finished && a.Crashed:
		return MarkKilled
	case !a.Finished:
		return MarkRunning
	case a.Outcome == OutcomeTimeout || a.Outcome == OutcomeCancelled:
		return MarkTimeout
	case a.Outcome == OutcomeOK && a.Deduplicated:
		return MarkDedup
	case a.Outcome == OutcomeOK:
		return MarkOK
	}
	return MarkFailed
}

// endMark is the glyph of an execution's or a run's end: ✓ when it
// finished OK, ✖ for any other outcome.
func endMark(o Outcome) Mark {
	if o == OutcomeOK {
		return MarkOK
	}
	return MarkFailed
}

// Injection is one fault injected into an attempt.
type Injection struct {
	Fault string
	// Plan is 1 + the index in the scenario's fault plan; 0 when armed by hand.
	Plan int
	// Text is how the source says where it came from.
	Text string
	Time time.Time
}

// Replay is a call answered from the journal: no request was sent.
type Replay struct {
	Call, Tool string
	Run        int
	Result     json.RawMessage
	// ResultRun is the run whose record was replayed.
	ResultRun int
	// Decision is set when the recorded arguments, not a result, were reused.
	Decision bool
	// Attempt and Key are the recorded attempt's, when the source says.
	Attempt int
	Key     string
	Seq     uint64
	Time    time.Time
}

// ID is "seq<N>".
func (r *Replay) ID() string { return fmt.Sprintf("seq%d", r.Seq) }

// Children: none.
func (r *Replay) Children() []Node { return nil }

// Note is an event shown as one line: a journal record, a crash, an
// escalation, the execution's end, a record deleted by hand.
type Note struct {
	Kind     Kind
	Mark     Mark
	Seq      uint64
	Time     time.Time
	Run      int
	Call     string
	Tool     string
	Attempt  int
	Key      string
	Result   json.RawMessage
	Fault    string
	ExitCode int
	Error    string
	// Text is what a Noted or RunEnded event says.
	Text string
	// Duration is a ClockMoved's move, a KeyExpired's retention, a Paced
	// wait; Offset a ClockMoved's lead on real time after the move.
	Duration, Offset time.Duration
}

// ID is "note<seq>".
func (n *Note) ID() string { return fmt.Sprintf("note%d", n.Seq) }

// Children: none.
func (n *Note) Children() []Node { return nil }

// Apply folds one event into the trace. It costs O(1) amortised: lookups go
// through maps, and a crash visits only the attempts its run left open.
func (t *Trace) Apply(e Event) {
	if e.Seq == 0 {
		e.Seq = t.LastSeq + 1
	} else if t.LastSeq != 0 && e.Seq != t.LastSeq+1 {
		t.jump(e.Seq, e.Call)
	}
	t.LastSeq = e.Seq
	t.Events++
	if e.Kind == ExecutionStarted {
		t.Scenario, t.Policy, t.Started = e.Scenario, e.Text, e.Time
		if e.Run == 0 {
			t.Last = e.Time
			return
		}
	}
	if e.Kind == ClockMoved || e.Kind == KeyExpired {
		t.clockNote(e)
		return
	}
	r := t.runOf(e)
	if e.Time.After(r.Last) {
		r.Last = e.Time
	}
	if e.Time.After(t.Last) {
		t.Last = e.Time
	}
	switch e.Kind {
	case ExecutionStarted:
		if r.Policy == "" {
			r.Policy = e.Text
		}
	case RunStarted:
		r.PID = e.PID
		if e.Text != "" {
			r.Policy = e.Text
		}
	case TurnStarted:
		r.turn = t.newTurn(Turn{Run: r.Number, Number: e.Turn, Text: e.Text, Seq: e.Seq, Time: e.Time})
		r.Nodes = append(r.Nodes, r.turn)
	case CallScheduled:
		c := t.newCall(Call{Call: e.Call, Tool: e.Tool, Kind: e.Text, Args: e.Args, Key: e.Key, Run: r.Number, Turn: e.Turn,
			Seq: e.Seq, Time: e.Time, Attrs: e.Attrs})
		t.addCall(r, c)
	case AttemptStarted:
		t.attemptStarted(r, e)
	case AttemptsNotKept:
		c := t.callOf(r, e)
		if e.Attempt > 1 {
			o := e.Outcome
			if o == "" {
				o = OutcomeError
			}
			a := &Attempt{Call: e.Call, Tool: c.Tool, N: e.Attempt - 1, Run: r.Number, Seq: e.Seq, Ref: e.Ref, Started: e.Time,
				Finished: true, Outcome: o, Error: e.Error, NotKept: e.Attempt - 1, Attrs: e.Attrs}
			c.Attempts = append(c.Attempts, a)
			c.Nodes = append(c.Nodes, a)
		}
	case FaultInjected:
		r.FaultCount++
		if !t.streaming {
			r.Faults = append(r.Faults, t.intern(e.Fault))
		}
		if e.PlanIndex > 0 {
			if t.plans == nil {
				t.plans = map[int]bool{}
			}
			t.plans[e.PlanIndex] = true
		}
		if a := t.attempts[attemptKey{e.Call, e.Attempt}]; a != nil {
			a.Faults = append(a.Faults, e.Fault)
			a.Injections = append(a.Injections, Injection{Fault: e.Fault, Plan: e.PlanIndex, Text: e.Text, Time: e.Time})
		} else if !t.released(attemptKey{e.Call, e.Attempt}) {
			t.anomaly(e, fmt.Sprintf("fault %s injected into attempt %d, which never started", e.Fault, e.Attempt))
		}
	case AttemptFinished:
		k := attemptKey{e.Call, e.Attempt}
		a := t.attempts[k]
		if a == nil {
			if !t.released(k) {
				t.anomaly(e, fmt.Sprintf("attempt %d finished without starting", e.Attempt))
			}
			return
		}
		a.Finished, a.Outcome, a.Deduplicated, a.Duration, a.Response, a.Error =
			true, e.Outcome, e.Deduplicated, e.Duration, e.Response, e.Error
		a.Status, a.Ended, a.EndSeq = e.Response.status(), e.Time, e.Seq
		if ar := t.runs[a.Run]; ar != nil {
			delete(ar.open, k)
		}
		if p := t.progress[e.Call]; p != nil {
			// A timeout or a server error leaves the outcome unknown: the
			// call stays open until a later attempt, a record or an
			// escalation closes it, so a run after a kill that came before
			// the escalation escalates instead of repeating the call.
			unknown := e.Outcome == OutcomeTimeout || e.Outcome == OutcomeError
			p.openAnswered = unknown
			if e.Outcome != OutcomeOK {
				p.openRecorded = unknown
			}
		}
	case RetryScheduled:
		if a := t.attempts[attemptKey{e.Call, e.Attempt}]; a != nil {
			a.Retry, a.RetryAt = e.Delay, e.Time
		}
	case StepRecorded:
		t.closeCall(e.Call)
		n := t.note(e, MarkRecorded)
		if c := t.lookupCall(r, e.Call); c != nil {
			c.Recorded = n
			c.Nodes = append(c.Nodes, n)
			if n.Tool == "" {
				n.Tool = c.Tool
			}
		} else if r.turn != nil {
			// A record of no call (a decision: the arguments) stays where
			// it happened.
			r.turn.Nodes = append(r.turn.Nodes, n)
		} else {
			r.Nodes = append(r.Nodes, n)
		}
	case StepReplayed:
		t.closeCall(e.Call)
		p := &Replay{Call: e.Call, Tool: e.Tool, Run: r.Number, Result: e.Result, ResultRun: e.ResultRun,
			Decision: e.Text == "decision", Attempt: e.Attempt, Key: e.Key, Seq: e.Seq, Time: e.Time}
		if r.turn != nil {
			r.turn.Nodes = append(r.turn.Nodes, p)
		} else {
			r.Nodes = append(r.Nodes, p)
		}
	case RunCrashed:
		for k, a := range r.open {
			if !a.Finished {
				a.Crashed, a.CrashFault = true, e.Fault
			}
			delete(r.open, k)
		}
		n := t.note(e, MarkKilled)
		r.End = n
		r.Nodes = append(r.Nodes, n)
	case Escalated:
		t.closeCall(e.Call)
		n := t.note(e, MarkEscalated)
		r.End = n
		t.End = n
		r.Nodes = append(r.Nodes, n)
	case JournalDeleted:
		t.Nodes = append(t.Nodes, t.note(e, MarkDeleted))
	case ExecutionEnded:
		n := t.note(e, endMark(e.Outcome))
		r.End = n
		t.End = n
		r.Nodes = append(r.Nodes, n)
	case Paced:
		// In the call it delays, where the call is known: the wait is
		// between its attempts.
		n := t.note(e, MarkNone)
		if c := t.lookupCall(r, e.Call); c != nil && c.Run == r.Number {
			c.Nodes = append(c.Nodes, n)
		} else if r.turn != nil {
			r.turn.Nodes = append(r.turn.Nodes, n)
		} else {
			r.Nodes = append(r.Nodes, n)
		}
	case Noted:
		n := t.note(e, MarkNone)
		if r.turn != nil {
			r.turn.Nodes = append(r.turn.Nodes, n)
		} else {
			r.Nodes = append(r.Nodes, n)
		}
	case RunEnded:
		n := t.note(e, endMark(e.Outcome))
		r.End = n
		r.turn = nil
		r.Nodes = append(r.Nodes, n)
	case EffectObserved:
		if e.Effect == nil {
			return
		}
		k := attemptKey{e.Call, e.Attempt}
		fx := *e.Effect
		if fx.At.IsZero() {
			fx.At = e.Time
		}
		switch a := t.attempts[k]; {
		case a != nil:
			t.addEffects(a, fx)
		case t.released(k):
			t.addEffects(nil, fx)
		default:
			if t.pending == nil {
				t.pending = map[attemptKey][]Effect{}
			}
			t.pending[k] = append(t.pending[k], fx)
		}
	}
}

// clockNote places a ClockMoved or KeyExpired note where it happened: in
// the running run (its open turn), or at the top level between runs when
// no worker runs. A clock move is no worker's doing: it opens no run and
// leaves the runs' times, and so the gaps between them, as they were.
func (t *Trace) clockNote(e Event) {
	n := t.note(e, MarkClock)
	if n.Run == 0 && t.cur != nil {
		n.Run = t.cur.Number
	}
	switch r := t.cur; {
	case r == nil || r.End != nil:
		t.Nodes = append(t.Nodes, n)
	case r.turn != nil:
		r.turn.Nodes = append(r.turn.Nodes, n)
	default:
		r.Nodes = append(r.Nodes, n)
	}
}

func (t *Trace) attemptStarted(r *Run, e Event) {
	c := t.lookupCall(r, e.Call)
	if c == nil {
		t.anomaly(e, fmt.Sprintf("attempt %d of a call that was never scheduled", e.Attempt))
		c = t.callOf(r, e)
	}
	k := attemptKey{e.Call, e.Attempt}
	if t.attempts[k] != nil || t.released(k) {
		t.anomaly(e, fmt.Sprintf("attempt %d started twice", e.Attempt))
	}
	tool := e.Tool
	if tool == "" {
		tool = c.Tool
	}
	a := &Attempt{Call: e.Call, Tool: tool, N: e.Attempt, Run: r.Number, Key: e.Key, MaxAttempts: e.MaxAttempts,
		Seq: e.Seq, Ref: e.Ref, Started: e.Time, Request: e.Request, Attrs: e.Attrs}
	if fx, ok := t.pending[k]; ok {
		t.addEffects(a, fx...)
		delete(t.pending, k)
	}
	c.Attempts = append(c.Attempts, a)
	c.Nodes = append(c.Nodes, a)
	t.attempts[k] = a
	r.open[k] = a
	p := t.progress[e.Call]
	if p == nil {
		if k := len(t.spareProgress); k > 0 {
			p, t.spareProgress = t.spareProgress[k-1], t.spareProgress[:k-1]
		} else {
			p = &progress{}
		}
		t.progress[e.Call] = p
		t.order = append(t.order, e.Call)
	}
	p.last = max(p.last, e.Attempt)
	p.count++
	p.openAnswered, p.openRecorded = true, true
}

// intern returns the trace's copy of a fault name.
func (t *Trace) intern(s string) string {
	if c, ok := t.faults[s]; ok {
		return c
	}
	if t.faults == nil {
		t.faults = map[string]string{}
	}
	t.faults[s] = s
	return s
}

// span is a range of attempt numbers, lo..hi inclusive.
type span struct{ lo, hi int }

// forget adds attempt n to the forgotten ranges.
func (p *progress) forget(n int) {
	i := 0
	for i < len(p.forgot) && p.forgot[i].hi < n-1 {
		i++
	}
	switch {
	case i < len(p.forgot) && p.forgot[i].lo <= n && n <= p.forgot[i].hi:
		return
	case i < len(p.forgot) && p.forgot[i].hi == n-1:
		p.forgot[i].hi = n
		if i+1 < len(p.forgot) && p.forgot[i+1].lo == n+1 {
			p.forgot[i].hi = p.forgot[i+1].hi
			p.forgot = append(p.forgot[:i+1], p.forgot[i+2:]...)
		}
	case i < len(p.forgot) && p.forgot[i].lo == n+1:
		p.forgot[i].lo = n
	default:
		p.forgot = append(p.forgot, span{})
		copy(p.forgot[i+1:], p.forgot[i:])
		p.forgot[i] = span{n, n}
	}
}

// forgotten reports whether attempt n was forgotten.
func (p *progress) forgotten(n int) bool {
	for _, r := range p.forgot {
		if r.lo <= n && n <= r.hi {
			return true
		}
	}
	return false
}

// released reports whether attempt k was forgotten (Forget).
func (t *Trace) released(k attemptKey) bool {
	p := t.progress[k.call]
	return p != nil && t.attempts[k] == nil && p.forgotten(k.attempt)
}

// addEffects attaches effects to an attempt (nil: one forgotten) and tells
// OnEffect's fn of them.
func (t *Trace) addEffects(a *Attempt, fx ...Effect) {
	if a != nil {
		a.Effects = append(a.Effects, fx...)
	}
	if t.onEffect != nil {
		for _, f := range fx {
			t.onEffect(f)
		}
	}
}

// OnEffect has fn told of every effect the fold attaches to an attempt, in
// the order they are attached, whatever the provider: an effect that
// arrives before its attempt when the attempt starts, one of an attempt
// the reader forgot (Forget) when it arrives, one of an attempt never seen
// to start never. A reader that judges effects as they come (engine/audit's
// Deliveries) needs no tree of them. Call it before the first event; Reset
// drops it.
func (t *Trace) OnEffect(fn func(Effect)) { t.onEffect = fn }

func (t *Trace) closeCall(id string) {
	if p := t.progress[id]; p != nil {
		p.openAnswered, p.openRecorded = false, false
	}
}

// LastAttempts maps each call id to its latest attempt number over all
// runs: where a new run's attempts go on counting.
func (t *Trace) LastAttempts() map[string]int {
	out := make(map[string]int, len(t.progress))
	for id, p := range t.progress {
		out[id] = p.last
	}
	return out
}

// AttemptCounts maps each call id to how many attempts it made, over all runs.
func (t *Trace) AttemptCounts() map[string]int {
	out := make(map[string]int, len(t.progress))
	for id, p := range t.progress {
		out[id] = p.count
	}
	return out
}

// PlansFired is the set of fault-plan entries (1-based) already injected.
func (t *Trace) PlansFired() map[int]bool {
	out := make(map[int]bool, len(t.plans))
	for i := range t.plans {
		out[i] = true
	}
	return out
}

// Unfinished lists the calls whose latest attempt never finished, or
// finished with an unknown outcome (a timeout or a server error), and that
// no record, replay or escalation closed since, in order of their first
// attempt. With journal set, only a journal record (not an ok answer)
// finishes a call: an answer that never reached the journal leaves it
// unfinished.
func (t *Trace) Unfinished(journal bool) []string {
	var out []string
	for _, id := range t.order {
		p := t.progress[id]
		if (journal && p.openRecorded) || (!journal && p.openAnswered) {
			out = append(out, id)
		}
	}
	return out
}

// lookupCall finds the call an event names: this run's, else the latest.
func (t *Trace) lookupCall(r *Run, id string) *Call {
	if c := r.calls[id]; c != nil {
		return c
	}
	return t.calls[id]
}

// callOf finds the call an event names, scheduling it in this run when no
// event did (a source that reports attempts without their call).
func (t *Trace) callOf(r *Run, e Event) *Call {
	if c := t.lookupCall(r, e.Call); c != nil {
		return c
	}
	c := t.newCall(Call{Call: e.Call, Tool: e.Tool, Key: e.Key, Run: r.Number, Seq: e.Seq, Time: e.Time, Unscheduled: true})
	t.addCall(r, c)
	return c
}

// addCall places a new call in the run's open turn (taking the turn's
// number), or in the run itself between turns, and indexes it by its id.
func (t *Trace) addCall(r *Run, c *Call) {
	if r.turn != nil {
		c.Turn = r.turn.Number
		r.turn.Nodes = append(r.turn.Nodes, c)
	} else {
		r.Nodes = append(r.Nodes, c)
	}
	r.calls[c.Call] = c
	t.calls[c.Call] = c
}

// runOf finds the run an event belongs to, opening it (and the gap before
// it) when the event is the run's first: a run is opened by its number,
// not by RunStarted, since a worker may report before its start is
// recorded.
func (t *Trace) runOf(e Event) *Run {
	n := e.Run
	if n == 0 {
		switch {
		case t.cur == nil:
			n = 1
		case e.Kind == RunStarted && (t.cur.PID != 0 || t.cur.End != nil):
			n = t.cur.Number + 1
		default:
			return t.cur
		}
	}
	if r := t.runs[n]; r != nil {
		return r
	}
	var r *Run
	if k := len(t.spare); k > 0 {
		r, t.spare = t.spare[k-1], t.spare[:k-1]
		r.Number, r.Seq, r.Started, r.Last = n, e.Seq, e.Time, e.Time
	} else {
		r = &Run{Number: n, Seq: e.Seq, Started: e.Time, Last: e.Time, calls: map[string]*Call{}, open: map[attemptKey]*Attempt{}}
	}
	if prev := t.cur; prev != nil {
		r.Policy = prev.Policy
		if !t.Last.IsZero() && e.Time.After(t.Last) {
			r.Idle = e.Time.Sub(t.Last)
		}
		t.Nodes = append(t.Nodes, &Gap{Run: n, Seq: e.Seq, Duration: r.Idle, AfterCrash: prev.Crashed()})
	} else {
		r.Policy = t.Policy
	}
	t.runs[n] = r
	t.Runs = append(t.Runs, r)
	t.Nodes = append(t.Nodes, r)
	if t.cur == nil || n > t.cur.Number {
		t.cur = r
		t.End = nil // a run after the end: the execution goes on
	}
	return r
}

func (t *Trace) note(e Event, m Mark) *Note {
	n := &Note{Kind: e.Kind, Mark: m, Seq: e.Seq, Time: e.Time, Run: e.Run, Call: e.Call, Tool: e.Tool, Attempt: e.Attempt,
		Key: e.Key, Result: e.Result, Fault: e.Fault, ExitCode: e.ExitCode, Error: e.Error, Text: e.Text,
		Duration: e.Duration, Offset: e.Offset}
	if e.Kind == Paced {
		n.Duration = e.Delay
	}
	return n
}

// Skip notes an event of a source that the fold has no use for (an
// adapter translates it to nothing): it still advances LastSeq, so a gap
// check stays exact. call is the event's call, if it has one.
func (t *Trace) Skip(seq uint64, call string) {
	if t.LastSeq != 0 && seq != t.LastSeq+1 {
		t.jump(seq, call)
	}
	if seq > t.LastSeq {
		t.LastSeq = seq
	}
}

func (t *Trace) jump(seq uint64, call string) {
	t.Anomalies = append(t.Anomalies, Anomaly{Seq: seq, Call: call, Jump: true,
		Text: fmt.Sprintf("history jumps from event %d to %d", t.LastSeq, seq)})
}

func (t *Trace) anomaly(e Event, text string) {
	t.Anomalies = append(t.Anomalies, Anomaly{Seq: e.Seq, Call: e.Call, Text: text})
}

func (x *Exchange) status() int {
	if x == nil {
		return 0
	}
	return x.Status
}

// Seen reports whether attempt n of a call started, forgotten or not.
func (t *Trace) Seen(call string, n int) bool {
	k := attemptKey{call, n}
	return t.attempts[k] != nil || t.released(k)
}

// Attempt is attempt n of a call, or nil.
func (t *Trace) Attempt(call string, n int) *Attempt { return t.attempts[attemptKey{call, n}] }

// LastCall is the latest call scheduled under an id, or nil.
func (t *Trace) LastCall(id string) *Call { return t.calls[id] }

// UnmatchedEffects are effects attributed to attempts the trace never saw start.
func (t *Trace) UnmatchedEffects() int {
	n := 0
	for _, fx := range t.pending {
		n += len(fx)
	}
	return n
}

// Outcome is the execution's mark: its end, ☠ when its last run's worker
// died, … while it runs.
func (t *Trace) Outcome() Mark {
	if t.End != nil {
		return t.End.Mark
	}
	if t.cur != nil && t.cur.Crashed() {
		return MarkKilled
	}
	return MarkRunning
}
