package otlp

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/trace"
)

// PolicyUnknown is the policy in words of a trace retrylab did not run.
const PolicyUnknown = "unknown (imported)"

// Events translates one execution's spans into the fold's input events, in
// time order:
//
//   - the execution starts with its first span and ends with its last; it
//     failed when its latest root span has status ERROR (a run that failed
//     and was rerun successfully under the same conversation did not);
//   - each trace is a run (a conversation's traces are its runs);
//   - each invoke_agent span inside no other is a turn, with the model
//     calls and agent spans inside it
//     (an agent's tool loop is one turn, as agentevals' truth files count
//     them); a model call inside no agent span, nor inside another model
//     call, is a turn of its own;
//   - each execute_tool span is an attempt of a tool call. Spans with the
//     same gen_ai.tool.call.id, or with the same parent, tool and canonical
//     arguments, are attempts of one call;
//   - an attempt's outcome comes from the span's status and error.type: a
//     timeout or cancellation is reported as such (the fold treats both as
//     ambiguous), 409/422/4xx HTTP statuses as conflict/mismatch/rejected;
//   - span ids are the events' Ref; the parent and other attributes are in
//     Attrs; a span whose parent never arrived (or whose parents form a
//     cycle) is kept and marked "orphan" in Attrs, never dropped.
func Events(spans []Span) []trace.Event {
	if len(spans) == 0 {
		return nil
	}
	spans = append([]Span(nil), spans...)
	SortSpans(spans)
	t := newTranslation(spans)
	return t.events()
}

// auditEvents is Events for the duplicate flag's audit: it sorts spans in
// place (the caller's own copy) and leaves out the events' Attrs, which
// neither the fold nor the audit reads (the detail pane does), saving a
// map per turn and per attempt.
//
// t, when not nil, is a translation done with, whose memory is used again:
// the events returned are in it, valid until its next use.
func auditEvents(spans []Span, t *translation) []trace.Event {
	if len(spans) == 0 {
		return nil
	}
	SortSpans(spans)
	if t == nil {
		t = &translation{}
	}
	t.reset(spans)
	t.lean = true
	return t.events()
}

type translation struct {
	spans   []Span
	byID    map[spanRef]int // -> index
	orphan  map[int]string  // index -> why
	runOf   map[string]int  // trace -> run number
	evs     []trace.Event   // in the order they are emitted
	order   []int32         // evs' positions, sorted by time
	at      []int64         // when each happened
	orphans []string
	// turnAt lists the turns' starts, in order, for the calls to find theirs.
	turnAt []turnStart
	// canon holds the tool spans' canonical arguments, computed once;
	// canonRaw the same by the arguments as sent: a retried call sends the
	// same ones again.
	canon    map[int]json.RawMessage
	canonRaw map[string]json.RawMessage
	// lean leaves the events' Attrs out (auditEvents).
	lean bool
}

// args are span i's canonical arguments. Canonicalising parses and
// re-encodes the JSON, the translation's largest cost: each span's is
// computed once, though a call's signature, its scheduling and its attempt
// all use it.
func (t *translation) args(i int) json.RawMessage {
	if a, ok := t.canon[i]; ok {
		return a
	}
	raw := t.spans[i].Args()
	a, ok := t.canonRaw[string(raw)]
	if !ok {
		a = canonical(raw)
		t.canonRaw[string(raw)] = a
	}
	t.canon[i] = a
	return a
}

type turnStart struct {
	at   int64
	run  int
	turn int
}

// turnOf is the latest turn of run that started at or before at (0: none).
func (t *translation) turnOf(run int, at int64) int {
	n := 0
	for _, ts := range t.turnAt {
		if ts.at > at {
			break
		}
		if ts.run == run {
			n = ts.turn
		}
	}
	return n
}

// spanRef names a span: its trace and span ids.
type spanRef struct{ trace, span string }

// errNoNumber is atoi's answer for an absent attribute.
var errNoNumber = errors.New("no number")

// atoi is strconv.Atoi, answering an empty string (an attribute the span
// does not have, the usual case) without allocating an error.
func atoi(s string) (int, error) {
	if s == "" {
		return 0, errNoNumber
	}
	return strconv.Atoi(s)
}

func newTranslation(spans []Span) *translation {
	t := &translation{}
	t.reset(spans)
	return t
}

// reset readies t to translate spans, keeping what it allocated for the
// spans it translated last.
func (t *translation) reset(spans []Span) {
	if t.byID == nil {
		t.byID, t.orphan, t.runOf = make(map[spanRef]int, len(spans)), map[int]string{}, map[string]int{}
		t.canon, t.canonRaw = map[int]json.RawMessage{}, map[string]json.RawMessage{}
	} else {
		clear(t.byID)
		clear(t.orphan)
		clear(t.runOf)
		clear(t.canon)
		clear(t.canonRaw)
	}
	n := 3*len(spans) + 4
	t.spans, t.orphans, t.turnAt = spans, t.orphans[:0], t.turnAt[:0]
	t.evs, t.at, t.order = slices.Grow(t.evs[:0], n), slices.Grow(t.at[:0], n), t.order[:0]
	for i := range spans {
		t.byID[spanRef{spans[i].TraceID, spans[i].SpanID}] = i
	}
	for i := range spans {
		if why := t.orphanReason(i); why != "" {
			t.orphan[i] = why
			t.orphans = append(t.orphans, spans[i].SpanID)
		}
	}
}

// parent returns the index of span i's parent, or -1.
func (t *translation) parent(i int) int {
	s := &t.spans[i]
	if s.ParentID == "" {
		return -1
	}
	if p, ok := t.byID[spanRef{s.TraceID, s.ParentID}]; ok {
		return p
	}
	return -1
}

func (t *translation) orphanReason(i int) string {
	s := &t.spans[i]
	if s.ParentID == "" {
		return ""
	}
	if t.parent(i) < 0 {
		return "parent " + s.ParentID + " never arrived"
	}
	// A chain longer than the trace has spans goes round a cycle.
	steps := 0
	for p := t.parent(i); p >= 0; p = t.parent(p) {
		if p == i || steps > len(t.spans) {
			return "parent cycle through " + t.spans[p].SpanID
		}
		steps++
	}
	return ""
}

// ancestors calls fn for span i's ancestors, nearest first, stopping at a
// cycle or when fn returns false.
func (t *translation) ancestors(i int, fn func(int) bool) {
	steps := 0
	for p := t.parent(i); p >= 0 && p != i && steps <= len(t.spans); p = t.parent(p) {
		steps++
		if !fn(p) {
			return
		}
	}
}

func (t *translation) emit(at int64, ev trace.Event) {
	ev.Time = time.Unix(0, at).UTC()
	t.evs = append(t.evs, ev)
	t.at = append(t.at, at)
}

func (t *translation) events() []trace.Event {
	first, last := t.spans[0].Start, t.spans[0].End
	var root, lastRoot *Span
	traces := []string{}
	for i := range t.spans {
		s := &t.spans[i]
		if s.End > last {
			last = s.End
		}
		if _, ok := t.runOf[s.TraceID]; !ok {
			t.runOf[s.TraceID] = len(traces) + 1
			traces = append(traces, s.TraceID)
		}
		if n, err := atoi(s.Attrs.Get("retrylab.run")); err == nil && n > 0 && s.ParentID == "" {
			t.runOf[s.TraceID] = n // retrylab's own export numbers its runs
		}
		if s.ParentID == "" {
			if root == nil {
				root = s
			}
			if lastRoot == nil || laterRoot(s.Start, s.Status == "error", lastRoot.Start) {
				lastRoot = s
			}
		}
	}
	failed := ""
	if lastRoot != nil && lastRoot.Status == "error" {
		failed = firstNonEmpty(lastRoot.ErrorText(), "root span "+lastRoot.SpanID+" has status ERROR")
	}
	start := trace.Event{Kind: trace.ExecutionStarted, Attrs: map[string]string{
		"source": "OpenTelemetry", "spans": strconv.Itoa(len(t.spans)), "traces": strconv.Itoa(len(traces))}}
	if root != nil {
		// Text is the policy in words: a trace from elsewhere does not say.
		start.Ref, start.Scenario, start.Text = root.SpanID, root.Name, PolicyUnknown
		if root.Service != "" {
			start.Attrs["service.name"] = root.Service
		}
		if sc, ok := root.Attrs.Lookup("retrylab.scenario"); ok {
			// retrylab's own export: its scenario and policy in words.
			start.Scenario, start.Text = sc, root.Attrs.Get("retrylab.policy")
		}
	} else {
		start.Scenario, start.Text = "(no root span)", PolicyUnknown
		start.Attrs["root"] = "no root span arrived"
	}
	if len(t.orphans) > 0 {
		start.Attrs["orphans"] = strings.Join(t.orphans, " ")
	}
	t.emit(first, start)
	t.runs(traces)
	t.turns()
	t.calls()
	t.crashes()
	t.end(last, failed)

	// Events are large: sort their positions, then move each event to its
	// place once, in the slice they were emitted into.
	order := slices.Grow(t.order[:0], len(t.evs))[:len(t.evs)]
	t.order = order
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(t.at[a], t.at[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // emitted first
	})
	evs := t.evs
	for i := range order {
		// Follow the cycle through i: position i takes the event
		// order[i], whose position takes order[order[i]], and so on.
		if order[i] < 0 || int(order[i]) == i {
			continue
		}
		tmp := evs[i]
		j := i
		for {
			k := int(order[j])
			order[j] = -1
			if k == i {
				evs[j] = tmp
				break
			}
			evs[j] = evs[k]
			j = k
		}
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	return evs
}

func (t *translation) runs(traces []string) {
	for _, tr := range traces {
		var root *Span
		at := int64(-1)
		for i := range t.spans {
			s := &t.spans[i]
			if s.TraceID != tr {
				continue
			}
			if at < 0 {
				at = s.Start
			}
			if s.ParentID == "" && root == nil {
				root = s
			}
		}
		ev := trace.Event{Kind: trace.RunStarted, Run: t.runOf[tr], Attrs: map[string]string{"trace.id": tr}}
		if root != nil {
			ev.Ref = root.SpanID
			ev.Attrs["root"] = root.Name
			if p, ok := root.Attrs.Lookup("retrylab.run.policy"); ok {
				ev.Text = p
			}
			ev.PID, _ = atoi(root.Attrs.Get("process.pid"))
		} else {
			ev.Attrs["root"] = "trace " + tr + " (its root span never arrived)"
		}
		t.emit(at, ev)
	}
}

// isTurn says whether span i opens a turn.
func (t *translation) isTurn(i int) bool {
	switch t.spans[i].Role() {
	case RoleAgent:
		// An agent span inside another (OpenInference's LangGraph nodes,
		// each an AGENT inside the graph's) is part of that turn: one
		// invocation is one turn.
		inner := false
		t.ancestors(i, func(p int) bool {
			inner = t.spans[p].Role() == RoleAgent
			return !inner
		})
		return !inner
	case RoleModel:
		// Inside an agent span, or another model call, it is part of
		// that turn.
		inner := false
		t.ancestors(i, func(p int) bool {
			if r := t.spans[p].Role(); r == RoleModel || r == RoleAgent {
				inner = true
				return false
			}
			return true
		})
		return !inner
	}
	return false
}

func (t *translation) turns() {
	n := 0
	for i := range t.spans {
		if !t.isTurn(i) {
			continue
		}
		n++
		s := &t.spans[i]
		number, text := n, s.Name
		if v, err := atoi(s.Attrs.Get("retrylab.turn")); err == nil {
			number = v
		}
		if v, ok := s.Attrs.Lookup("retrylab.turn.text"); ok {
			text = v
		}
		t.turnAt = append(t.turnAt, turnStart{at: s.Start, run: t.runOf[s.TraceID], turn: number})
		t.emit(s.Start, trace.Event{Kind: trace.TurnStarted, Run: t.runOf[s.TraceID], Turn: number, Text: text,
			Ref: s.SpanID, Attrs: t.attrs(i)})
	}
}

// call is one tool call being assembled from its spans.
type call struct {
	id       string
	attempts []int
}

func (t *translation) calls() {
	var calls []*call
	byID := map[string]*call{}
	bySig := map[string]*call{}
	for i := range t.spans {
		s := &t.spans[i]
		if s.Attrs.Get("retrylab.replay") == "true" {
			t.replay(i)
			continue
		}
		if s.Role() != RoleTool {
			continue
		}
		sig := s.ParentID + "\x00" + s.Tool() + "\x00" + string(t.args(i))
		cid := s.CallID()
		exported := s.Attrs.Has("retrylab.attempt")
		c := byID[cid]
		if (cid == "" || c == nil) && !exported {
			// Same parent, tool and arguments: another attempt of the same
			// call (retrylab's own export names its calls exactly).
			c = bySig[sig]
		}
		if c == nil {
			c = &call{id: firstNonEmpty(cid, s.SpanID)}
			calls = append(calls, c)
		}
		if cid != "" && byID[cid] == nil {
			byID[cid] = c
		}
		if bySig[sig] == nil {
			bySig[sig] = c
		}
		c.attempts = append(c.attempts, i)
	}
	for _, c := range calls {
		lastRun := 0
		for n, i := range c.attempts {
			s := &t.spans[i]
			run := t.runOf[s.TraceID]
			if run != lastRun {
				// The call is scheduled in each run that tries it.
				lastRun = run
				args := t.args(i)
				key := s.Key()
				if s.Attrs.Has("retrylab.attempt") {
					key = s.Attrs.Get("retrylab.call.key") // retrylab keys attempts, not always the call
				}
				sched := trace.Event{Kind: trace.CallScheduled, Run: run, Turn: t.turnOf(run, s.Start), Call: c.id, Tool: s.Tool(),
					Args: args, Key: key, Ref: s.SpanID, Text: s.Attrs.Get("retrylab.tool.kind")}
				if !t.lean {
					sched.Attrs = map[string]string{"span.parent": s.ParentID}
					if cid := s.CallID(); cid != "" {
						sched.Attrs["tool.call.id"] = cid
					}
				}
				t.emit(s.Start, sched)
			}
			number := n + 1
			if v, err := atoi(s.Attrs.Get("retrylab.attempt")); err == nil {
				number = v
			}
			t.attempt(i, c.id, run, number)
		}
	}
}

// attempt emits one execute_tool span's events: its start, the faults
// retrylab injected into it, its answer, the effects it caused, the retry
// it led to and the journal record of its result.
func (t *translation) attempt(i int, callID string, run, number int) {
	s := &t.spans[i]
	a := t.args(i)
	maxAttempts, _ := atoi(s.Attrs.Get("retrylab.max_attempts"))
	t.emit(s.Start, trace.Event{Kind: trace.AttemptStarted, Run: run, Call: callID, Tool: s.Tool(), Attempt: number,
		MaxAttempts: maxAttempts, Key: s.Key(), Ref: s.SpanID, Args: a, Request: &trace.Exchange{Body: a}, Attrs: t.attrs(i)})
	if faults := s.Attrs.Get("retrylab.faults"); faults != "" {
		for _, f := range strings.Split(faults, ",") {
			t.emit(s.Start, trace.Event{Kind: trace.FaultInjected, Run: run, Call: callID, Attempt: number, Fault: f, Ref: s.SpanID})
		}
	}
	effects := recordedEffects(s)
	for i := range effects {
		t.emit(s.End, trace.Event{Kind: trace.EffectObserved, Run: run, Call: callID, Attempt: number, Effect: &effects[i], Ref: s.SpanID})
	}
	o := s.Attrs.Get("retrylab.outcome")
	if o == "none" {
		return // the caller never had an answer: its worker died, or it is in flight
	}
	outcome, status := s.outcome()
	if o != "" {
		outcome = trace.Outcome(o)
	}
	fin := trace.Event{Kind: trace.AttemptFinished, Run: run, Call: callID, Tool: s.Tool(), Attempt: number, Outcome: outcome,
		Duration: time.Duration(s.End - s.Start), Ref: s.SpanID, Deduplicated: s.Attrs.Get("retrylab.deduplicated") == "true"}
	if res := s.Result(); res != nil || status != 0 {
		fin.Response = &trace.Exchange{Status: status, Body: res}
	}
	if outcome != trace.OutcomeOK {
		fin.Error = firstNonEmpty(s.ErrorText(), string(outcome))
	}
	t.emit(s.End, fin)
	if after := s.Attrs.Get("retrylab.retry_after"); after != "" { // ParseDuration allocates its error
		if d, err := time.ParseDuration(after); err == nil {
			t.emit(s.End, trace.Event{Kind: trace.RetryScheduled, Run: run, Call: callID, Attempt: number, Delay: d, Ref: s.SpanID})
		}
	}
	if s.Attrs.Get("retrylab.journal.recorded") == "true" {
		t.emit(s.End, trace.Event{Kind: trace.StepRecorded, Run: run, Call: callID, Tool: s.Tool(), Attempt: number, Key: s.Key(),
			Result: asJSONOrNil(s.Attrs.Get("retrylab.journal.result")), Ref: s.SpanID})
	}
}

// recordedEffects are the provider effects retrylab's own export recorded
// of tool span s (retrylab.effects), as many as the JSON holds; none when
// it does not parse. The duplicate flag's fast path counts them the same
// way (attemptStateOf).
func recordedEffects(s *Span) []trace.Effect {
	var effects []trace.Effect
	if fx := s.Attrs.Get("retrylab.effects"); fx != "" {
		_ = json.Unmarshal([]byte(fx), &effects)
	}
	return effects
}

// replay emits a call answered from retrylab's journal.
func (t *translation) replay(i int) {
	s := &t.spans[i]
	resultRun, _ := atoi(s.Attrs.Get("retrylab.replay.run"))
	ev := trace.Event{Kind: trace.StepReplayed, Run: t.runOf[s.TraceID], Call: s.CallID(), Tool: s.Tool(), Result: s.Result(),
		ResultRun: resultRun, Ref: s.SpanID}
	if s.Attrs.Get("retrylab.replay.decision") == "true" {
		ev.Text = "decision"
	}
	t.emit(s.Start, ev)
}

// crashes emits the death of each run whose root span says its worker was
// killed (retrylab's own export), once everything in the run happened.
func (t *translation) crashes() {
	for i := range t.spans {
		s := &t.spans[i]
		if s.ParentID != "" || s.Attrs.Get("retrylab.run.crashed") != "true" {
			continue
		}
		code, _ := atoi(s.Attrs.Get("retrylab.run.exit_code"))
		t.emit(s.End, trace.Event{Kind: trace.RunCrashed, Run: t.runOf[s.TraceID], ExitCode: code, Fault: s.Attrs.Get("retrylab.run.fault"),
			Error: s.Message, Ref: s.SpanID})
	}
}

// end emits the execution's end: as retrylab's own export says it, else
// failed when a root span failed, else completed.
func (t *translation) end(last int64, failed string) {
	for i := range t.spans {
		s := &t.spans[i]
		how, ok := s.Attrs.Lookup("retrylab.execution.end")
		if !ok || s.ParentID != "" {
			continue
		}
		switch how {
		case "ok":
			t.emit(s.End, trace.Event{Kind: trace.ExecutionEnded, Run: t.runOf[s.TraceID], Outcome: trace.OutcomeOK, Ref: s.SpanID})
		case "failed":
			t.emit(s.End, trace.Event{Kind: trace.ExecutionEnded, Run: t.runOf[s.TraceID], Outcome: trace.OutcomeError,
				Error: s.Attrs.Get("retrylab.execution.error"), Ref: s.SpanID})
		case "escalated":
			t.emit(s.End, trace.Event{Kind: trace.Escalated, Run: t.runOf[s.TraceID], Error: s.Attrs.Get("retrylab.execution.error"), Ref: s.SpanID})
		}
		return // "running": no end yet
	}
	end := trace.Event{Kind: trace.ExecutionEnded, Outcome: trace.OutcomeOK}
	if failed != "" {
		end.Outcome, end.Error = trace.OutcomeError, failed
	}
	t.emit(last, end)
}

func asJSONOrNil(v string) json.RawMessage {
	if v == "" {
		return nil
	}
	return asJSON(v)
}

// attrs are what the detail pane shows of span i: its attributes and ids.
func (t *translation) attrs(i int) map[string]string {
	if t.lean {
		return nil
	}
	s := &t.spans[i]
	m := make(map[string]string, len(s.Attrs)+4)
	for _, a := range s.Attrs {
		m[a.Key] = a.Value
	}
	m["span.id"] = s.SpanID
	m["trace.id"] = s.TraceID
	if s.ParentID != "" {
		m["span.parent"] = s.ParentID
	}
	if why := t.orphan[i]; why != "" {
		m["orphan"] = why
	}
	if s.Status == "error" && s.Message != "" {
		m["status.message"] = s.Message
	}
	return m
}

// outcome classifies a tool span's end, and gives its HTTP status if any.
func (s *Span) outcome() (trace.Outcome, int) {
	status, _ := atoi(firstNonEmpty(s.Attrs.Get("http.response.status_code"), s.Attrs.Get("http.status_code")))
	etype := s.ErrorType()
	if s.Status != "error" && etype == "" && (status < 400 || status == 0) {
		return trace.OutcomeOK, status
	}
	// A framework that wraps the error says what it wrapped in the
	// exception's message: pydantic-ai's ToolRetryError reads
	// "TimeoutError: response lost".
	what := strings.ToLower(etype + " " + s.Message + " " + s.exceptionMessages())
	switch {
	case strings.Contains(what, "timeout"), strings.Contains(what, "timedout"), strings.Contains(what, "timed out"),
		strings.Contains(what, "deadline"):
		return trace.OutcomeTimeout, status
	case strings.Contains(what, "cancel"):
		return trace.OutcomeCancelled, status
	case status == 409:
		return trace.OutcomeConflict, status
	case status == 422:
		return trace.OutcomeMismatch, status
	case status >= 400 && status < 500:
		return trace.OutcomeRejected, status
	case strings.Contains(what, "validationerror"), strings.Contains(what, "validation error"):
		// The arguments were refused before the tool ran.
		return trace.OutcomeRejected, status
	}
	return trace.OutcomeError, status
}

// exceptionMessages are the messages of the span's exception events,
// joined, without their stack frames (indented lines: a frame's function
// may be called withTimeout without anything timing out).
func (s *Span) exceptionMessages() string {
	var b strings.Builder
	for _, e := range s.Events {
		if e.Name != "exception" {
			continue
		}
		for _, l := range strings.Split(e.Attrs.Get("exception.message"), "\n") {
			if l != "" && l[0] != ' ' && l[0] != '\t' {
				b.WriteString(l)
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}

// canonical is retrylab's canonical JSON of args (keys sorted, as Python's
// json.dumps(sort_keys=True)), so equal arguments compare equal however an
// emitter spaced or ordered them.
func canonical(args json.RawMessage) json.RawMessage {
	if args == nil {
		return nil
	}
	c, err := idemkey.Canonical(args)
	if err != nil {
		return args
	}
	return c
}

// Describe is a one-line account of a span, for errors and evidence.
func (s *Span) Describe() string {
	return fmt.Sprintf("span %s %q at %s", s.SpanID, s.Name, time.Unix(0, s.Start).UTC().Format(time.RFC3339Nano))
}
