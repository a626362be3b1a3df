package otlp

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/trace"
)

// Export writes folded executions of retrylab's own as OTLP traces, with
// the GenAI semantic conventions and retrylab.* attributes for what they
// have no name for: each run is a trace (its root span "retrylab.run"),
// the runs of one execution share gen_ai.conversation.id; each turn is an
// invoke_agent span, each attempt an execute_tool span (attempt number,
// faults, dedup, idempotency key, provider effects, journal record), each
// replay a "retrylab.replay" span (no request was sent, so no
// execute_tool). Importing the result gives the same model.
//
// Spans come in the order a streaming writer can give them (JSONWriter):
// each after the spans inside it. A run's attempts and replays come in the
// tree's order, a turn after its calls (a run's last turn, whose end is the
// run's, at the end of the execution), each run's root span last. OTLP
// puts no order on the spans of a scope; ids are numbered in the tree's
// order, parents first, so they do not depend on it.
func Export(traces []*trace.Trace, version string) ptrace.Traces {
	td, spans := envelope(version)
	for _, t := range traces {
		c := newCursor(t, func(run int) *exporter {
			return &exporter{spans: spans, t: t, tid: traceID(t.Execution, run)}
		}, nil)
		c.pump(true)
		c.finish()
	}
	return td
}

// envelope is an export's document without spans: one resource (the
// service retrylab), one scope (its module at version), and that scope's
// span list, empty.
func envelope(version string) (ptrace.Traces, ptrace.SpanSlice) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "retrylab")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/retrylab/retrylab")
	ss.Scope().SetVersion(version)
	return td, ss.Spans()
}

type exporter struct {
	spans ptrace.SpanSlice
	t     *trace.Trace
	tid   pcommon.TraceID
	n     int
	// done, when set, is called once each span is complete (a streaming
	// writer marshals it and clears spans).
	done func()
}

// reserve numbers the run's next span in the tree's order and returns its
// id: a container's id is reserved when it is reached, before its
// children, though its span is written after them.
func (e *exporter) reserve() pcommon.SpanID {
	e.n++
	return spanID(e.tid, e.n)
}

// run writes a run's root span, whose id is id; last says it is the
// execution's last run, which carries how the execution ended.
func (e *exporter) run(r *trace.Run, last bool, id pcommon.SpanID) {
	t := e.t
	root := e.span("retrylab.run", id, pcommon.SpanID{}, r.Started, runEnd(t, r))
	root.SetName("retrylab.run " + t.Scenario)
	a := root.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_workflow")
	a.PutStr("gen_ai.conversation.id", t.Execution)
	a.PutStr("retrylab.execution", t.Execution)
	a.PutStr("retrylab.scenario", t.Scenario)
	a.PutStr("retrylab.policy", t.Policy)
	a.PutInt("retrylab.run", int64(r.Number))
	if r.Policy != "" {
		a.PutStr("retrylab.run.policy", r.Policy)
	}
	if r.PID != 0 {
		a.PutInt("process.pid", int64(r.PID))
	}
	if r.End != nil && r.End.Kind == trace.RunCrashed {
		a.PutBool("retrylab.run.crashed", true)
		a.PutInt("retrylab.run.exit_code", int64(r.End.ExitCode))
		if r.End.Fault != "" {
			a.PutStr("retrylab.run.fault", r.End.Fault)
		}
		root.Status().SetCode(ptrace.StatusCodeError)
		root.Status().SetMessage("worker killed")
	}
	if last {
		end := "running"
		switch {
		case t.End != nil && t.End.Kind == trace.Escalated:
			end = "escalated"
		case t.End != nil && t.End.Mark == trace.MarkOK:
			end = "ok"
		case t.End != nil:
			end = "failed"
			root.Status().SetCode(ptrace.StatusCodeError)
			root.Status().SetMessage(t.End.Error)
		}
		a.PutStr("retrylab.execution.end", end)
		if t.End != nil && t.End.Error != "" {
			a.PutStr("retrylab.execution.error", t.End.Error)
		}
	}
	e.complete()
}

// runEnd is when a run's last event happened.
func runEnd(t *trace.Trace, r *trace.Run) time.Time {
	if r.End != nil && r.End.Time.After(r.Last) {
		return r.End.Time
	}
	return r.Last
}

// nextTurn is when the first turn after nodes[i] (in its run) began, if
// one did.
func nextTurn(nodes []trace.Node, i int) (time.Time, bool) {
	for _, later := range nodes[i+1:] {
		if lt, ok := later.(*trace.Turn); ok {
			return lt.Time, true
		}
	}
	return time.Time{}, false
}

// turnEnd is when the turn at nodes[i] ended: when the next turn of its
// run began, or until (its run's end).
func turnEnd(nodes []trace.Node, i int, until time.Time) time.Time {
	if at, ok := nextTurn(nodes, i); ok {
		return at
	}
	return until
}

// crashTime is when the worker of run r died with attempt a open: the
// first crash of the run recorded after a began.
func crashTime(r *trace.Run, a *trace.Attempt) (time.Time, bool) {
	for _, n := range r.Nodes {
		if x, ok := n.(*trace.Note); ok && x.Kind == trace.RunCrashed && x.Seq > a.Seq {
			return x.Time, true
		}
	}
	return time.Time{}, false
}

// turn writes a turn's invoke_agent span, whose id is id.
func (e *exporter) turn(x *trace.Turn, id, parent pcommon.SpanID, end time.Time) {
	s := e.span("invoke_agent "+e.t.Scenario, id, parent, x.Time, end)
	a := s.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutStr("gen_ai.agent.name", e.t.Scenario)
	a.PutStr("gen_ai.conversation.id", e.t.Execution)
	a.PutInt("retrylab.turn", int64(x.Number))
	a.PutStr("retrylab.turn.text", x.Text)
	e.complete()
}

// replay writes a retrylab.replay span.
func (e *exporter) replay(x *trace.Replay, parent pcommon.SpanID) {
	s := e.span("retrylab.replay "+x.Tool, e.reserve(), parent, x.Time, x.Time)
	a := s.Attributes()
	a.PutBool("retrylab.replay", true)
	a.PutStr("gen_ai.tool.name", x.Tool)
	a.PutStr("gen_ai.tool.call.id", x.Call)
	a.PutInt("retrylab.replay.run", int64(x.ResultRun))
	if x.Decision {
		a.PutBool("retrylab.replay.decision", true)
	}
	if x.Result != nil {
		a.PutStr("gen_ai.tool.call.result", string(x.Result))
	}
	e.complete()
}

// attempt writes an execute_tool span for one attempt of c, ending at end
// (see cursor.attemptEnd). last says it is the call's last attempt, which
// carries the journal's record of the call.
func (e *exporter) attempt(c *trace.Call, at *trace.Attempt, parent pcommon.SpanID, end time.Time, last bool) {
	s := e.span("execute_tool "+c.Tool, e.reserve(), parent, at.Started, end)
	a := s.Attributes()
	a.PutStr("gen_ai.operation.name", "execute_tool")
	a.PutStr("gen_ai.tool.name", c.Tool)
	a.PutStr("gen_ai.tool.call.id", c.Call)
	if c.Args != nil {
		a.PutStr("gen_ai.tool.call.arguments", string(c.Args))
	}
	if c.Kind != "" {
		a.PutStr("retrylab.tool.kind", c.Kind)
	}
	if c.Key != "" {
		a.PutStr("retrylab.call.key", c.Key)
	}
	a.PutInt("retrylab.attempt", int64(at.N))
	if at.MaxAttempts > 0 {
		a.PutInt("retrylab.max_attempts", int64(at.MaxAttempts))
	}
	if at.Key != "" {
		a.PutStr("retrylab.idempotency_key", at.Key)
	}
	if len(at.Faults) > 0 {
		a.PutStr("retrylab.faults", strings.Join(at.Faults, ","))
	}
	if at.Retry > 0 {
		a.PutStr("retrylab.retry_after", at.Retry.String())
	}
	if len(at.Effects) > 0 {
		b, _ := json.Marshal(at.Effects)
		a.PutStr("retrylab.effects", string(b))
		ids := make([]string, len(at.Effects))
		for i, fx := range at.Effects {
			ids[i] = fx.ID
		}
		a.PutStr("retrylab.provider.message_ids", strings.Join(ids, ","))
	}
	if at.Request != nil && at.Request.URL != "" {
		a.PutStr("url.full", at.Request.URL)
		a.PutStr("http.request.method", at.Request.Method)
	}
	outcome := "none" // no answer: the worker died, or it is in flight
	if at.Finished {
		outcome = string(at.Outcome)
		if at.Status != 0 {
			a.PutInt("http.response.status_code", int64(at.Status))
		}
		if at.Response != nil && at.Response.Body != nil {
			a.PutStr("gen_ai.tool.call.result", string(at.Response.Body))
		}
		if at.Deduplicated {
			a.PutBool("retrylab.deduplicated", true)
		}
		if at.Outcome != trace.OutcomeOK {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(at.Error)
			a.PutStr("error.type", string(at.Outcome))
		}
	}
	a.PutStr("retrylab.outcome", outcome)
	if c.Recorded != nil && last {
		a.PutBool("retrylab.journal.recorded", true)
		if c.Recorded.Result != nil {
			a.PutStr("retrylab.journal.result", string(c.Recorded.Result))
		}
	}
	e.complete()
}

// complete says the latest span is written in full.
func (e *exporter) complete() {
	if e.done != nil {
		e.done()
	}
}

// span appends a span whose id (reserve's) is derived from the execution,
// run and the tree's order, so exporting twice writes the same file.
func (e *exporter) span(name string, id, parent pcommon.SpanID, start, end time.Time) ptrace.Span {
	s := e.spans.AppendEmpty()
	s.SetName(name)
	s.SetTraceID(e.tid)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetKind(ptrace.SpanKindInternal)
	if end.Before(start) {
		end = start
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	return s
}

func traceID(exec string, run int) pcommon.TraceID {
	h := sha256.Sum256([]byte("retrylab\x00" + exec + "\x00" + strconv.Itoa(run)))
	var id pcommon.TraceID
	copy(id[:], h[:16])
	return id
}

func spanID(t pcommon.TraceID, n int) pcommon.SpanID {
	h := sha256.Sum256(append(t[:], strconv.Itoa(n)...))
	var id pcommon.SpanID
	copy(id[:], h[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}
