package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
)

// ErrNoEvents is History's answer for an execution with no events of its
// own to export.
var ErrNoEvents = errors.New("no events recorded")

// JSONWriter writes the OTLP/JSON document of Export a span at a time:
// the same bytes as pdata's JSONMarshaler writes for Export's result, but
// with no more than one span in memory, and (through History) no more of
// a history than its calls, however many attempts it made, each span as
// soon as it is final. Write the executions with History or Trace, then
// Close.
type JSONWriter struct {
	w       io.Writer
	td      ptrace.Traces // the envelope: the resource, the scope, one span
	spans   ptrace.SpanSlice
	m       ptrace.JSONMarshaler
	version string
	// prefix is the envelope up to its first span, written before it.
	prefix []byte
	count  int
	err    error
}

// spansSuffix closes the spans, the scope's and the resource's lists, and
// the document: what pdata writes after the last span.
var spansSuffix = []byte("]}]}]}")

// NewJSONWriter starts a document on w; version is the scope's (the
// build's) version.
func NewJSONWriter(w io.Writer, version string) *JSONWriter {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "retrylab")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/retrylab/retrylab")
	ss.Scope().SetVersion(version)
	return &JSONWriter{w: w, td: td, spans: ss.Spans(), version: version}
}

// Spans counts the spans written so far.
func (jw *JSONWriter) Spans() int { return jw.count }

// flush marshals the envelope's one span and writes it: the prefix before
// the first, a comma before the others.
func (jw *JSONWriter) flush() {
	if jw.err != nil || jw.spans.Len() == 0 {
		jw.spans.RemoveIf(func(ptrace.Span) bool { return true })
		return
	}
	data, err := jw.m.MarshalTraces(jw.td)
	jw.spans.RemoveIf(func(ptrace.Span) bool { return true })
	if err != nil {
		jw.err = fmt.Errorf("encode: %w", err)
		return
	}
	if jw.prefix == nil {
		i := bytes.Index(data, []byte(`"spans":[`))
		if i < 0 {
			jw.err = errors.New("encode: pdata wrote no list of spans")
			return
		}
		jw.prefix = append([]byte(nil), data[:i+len(`"spans":[`)]...)
	}
	if !bytes.HasPrefix(data, jw.prefix) || !bytes.HasSuffix(data, spansSuffix) {
		jw.err = errors.New("encode: pdata's envelope changed between spans")
		return
	}
	span := data[len(jw.prefix) : len(data)-len(spansSuffix)]
	if jw.count == 0 {
		_, jw.err = jw.w.Write(jw.prefix)
	} else {
		_, jw.err = jw.w.Write([]byte{','})
	}
	if jw.err == nil {
		_, jw.err = jw.w.Write(span)
	}
	jw.count++
}

// exporter is one run's span writer.
func (jw *JSONWriter) exporter(t *trace.Trace, run int) *exporter {
	return &exporter{spans: jw.spans, t: t, tid: traceID(t.Execution, run), done: jw.flush}
}

// cursor is a cursor on t that writes through jw.
func (jw *JSONWriter) cursor(t *trace.Trace) *cursor {
	return newCursor(t, func(run int) *exporter { return jw.exporter(t, run) }, func() bool { return jw.err != nil })
}

// Trace writes the spans of a folded execution (one imported, say, whose
// model is in memory anyway), in Export's order.
func (jw *JSONWriter) Trace(t *trace.Trace) error {
	c := jw.cursor(t)
	c.pump(true)
	c.finish()
	return jw.err
}

// Close ends the document. With no span written, it writes the envelope
// alone, as pdata does.
func (jw *JSONWriter) Close() error {
	if jw.err != nil {
		return jw.err
	}
	if jw.count == 0 {
		data, err := jw.m.MarshalTraces(jw.td)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		_, err = jw.w.Write(data)
		return err
	}
	_, err := jw.w.Write(spansSuffix)
	return err
}

// History writes the spans of one execution of retrylab's own, reading its
// history once (read calls fn for each event from the first) without
// holding it: it folds each event and writes each span as soon as nothing
// can change it, in Export's order, forgetting each attempt it wrote. An
// execution with no events is ErrNoEvents.
//
// An attempt is written once its call moved on after its answer (its
// retry, its journal record or the next attempt is in) or its worker died;
// the last attempt of a recorded call once its call closed. A turn is
// written once its calls are and the next turn of its run began. What
// only the history's end tells waits for it: each run's root span (its
// end, whether its worker was killed, how the execution ended), the last
// turn of each run (it ends with the run), and attempts still without an
// answer. While the last attempt of a call nothing recorded waits for
// something to settle it, what follows it in the tree waits in memory too.
func (jw *JSONWriter) History(id string, read func(fn func(history.Event) error) error) error {
	t := trace.New(id)
	t.Stream()
	c := jw.cursor(t)
	c.forget = true
	err := read(func(ev history.Event) error {
		t.ApplyHistory(ev)
		c.pump(false)
		return jw.err
	})
	if err != nil {
		return err
	}
	if t.Events == 0 {
		return ErrNoEvents
	}
	c.pump(true)
	c.finish()
	return jw.err
}

// cursor walks a fold's tree in its order and writes each span once it is
// final: an attempt or a replay when it is reached and settled, a turn
// once its children are written and the next turn began, each run's root
// span (and its last turn) at the end. Span ids are numbered in the
// tree's order (exporter.reserve), whatever order the spans go out in.
type cursor struct {
	t           *trace.Trace
	newExporter func(run int) *exporter
	failed      func() bool
	// forget, for a streaming fold, lets go of each attempt written.
	forget bool
	stack  []*exportFrame
	// closing are the frames whose spans wait for the end of the history,
	// in the order they closed: each run's last turn, then its root.
	closing []*exportFrame
}

func newCursor(t *trace.Trace, newExporter func(run int) *exporter, failed func() bool) *cursor {
	if failed == nil {
		failed = func() bool { return false }
	}
	return &cursor{t: t, newExporter: newExporter, failed: failed, stack: []*exportFrame{{}}}
}

// exportFrame is a container being written: the top level, a run, a turn
// or a call; next is its next child to write.
type exportFrame struct {
	node trace.Node // nil at the top level
	e    *exporter
	run  *trace.Run
	// turn is the turn it is in (or is), at run.Nodes[turnAt]; nil for a
	// run, or a call outside a turn.
	turn   *trace.Turn
	turnAt int
	// id is its span's id, its children's parent (a call has no span of
	// its own: its turn's or run's); up is its span's parent.
	id, up pcommon.SpanID
	next   int
	// retrying is set when the call's last written attempt scheduled a
	// retry: another attempt is coming.
	retrying bool
}

func (c *cursor) children(f *exportFrame) []trace.Node {
	if f.node == nil {
		return c.t.Nodes
	}
	return f.node.Children()
}

// pump writes the spans that have become final, in the order of the tree,
// and (forget set) forgets each attempt it wrote. With final set, the
// history was read to its end: everything is final but the spans finish
// writes.
func (c *cursor) pump(final bool) {
	for len(c.stack) > 0 && !c.failed() {
		top := len(c.stack) - 1
		f := c.stack[top]
		ns := c.children(f)
		if f.next >= len(ns) {
			if !final && !c.closed(top) {
				return
			}
			c.stack = c.stack[:top]
			c.close(f)
			continue
		}
		switch n := ns[f.next].(type) {
		case *trace.Run:
			e := c.newExporter(n.Number)
			c.stack = append(c.stack, &exportFrame{node: n, e: e, run: n, id: e.reserve()})
		case *trace.Turn:
			c.stack = append(c.stack, &exportFrame{node: n, e: f.e, run: f.run, turn: n, turnAt: f.next,
				id: f.e.reserve(), up: f.id})
		case *trace.Call:
			c.stack = append(c.stack, &exportFrame{node: n, e: f.e, run: f.run, turn: f.turn, turnAt: f.turnAt, id: f.id})
		case *trace.Attempt:
			if !final && !settled(n, ns[f.next+1:]) {
				return
			}
			call := f.node.(*trace.Call)
			last := n == call.Attempts[len(call.Attempts)-1]
			// The call's last attempt carries its journal record, and a
			// record may come before another attempt (a concurrent copy's
			// retry): with a record, the last attempt so far waits until
			// no attempt can follow, its call closed.
			if !final && last && call.Recorded != nil && (n.Retry > 0 || !c.closed(top)) {
				return
			}
			f.e.attempt(call, n, f.id, c.attemptEnd(f, n), last)
			f.retrying = n.Retry > 0
			if c.forget {
				c.t.Forget(n)
				if len(c.children(f)) < len(ns) {
					continue // it left the call's nodes: the next one took its place
				}
			}
		case *trace.Replay:
			f.e.replay(n, f.id)
		}
		f.next++
	}
}

// close writes the span of a frame whose children are written, or keeps
// the frame for finish: a turn is written once the next turn of its run
// began (its end); a run's root span always waits.
func (c *cursor) close(f *exportFrame) {
	switch n := f.node.(type) {
	case *trace.Run:
		c.closing = append(c.closing, f)
	case *trace.Turn:
		if end, ok := nextTurn(f.run.Nodes, f.turnAt); ok {
			f.e.turn(n, f.id, f.up, end)
		} else {
			c.closing = append(c.closing, f)
		}
	}
}

// finish writes, once the history was read to its end and pumped, the
// spans that waited for it: each run's last turn and its root span.
func (c *cursor) finish() {
	for _, f := range c.closing {
		if c.failed() {
			return
		}
		switch n := f.node.(type) {
		case *trace.Run:
			f.e.run(n, n == c.t.Runs[len(c.t.Runs)-1], f.id)
		case *trace.Turn:
			f.e.turn(n, f.id, f.up, turnEnd(f.run.Nodes, f.turnAt, runEnd(c.t, f.run)))
		}
	}
	c.closing = nil
}

// attemptEnd is when an attempt's span ends: when its answer came; when
// its worker died, if it died first; else (still in flight at the end of
// the history) with its turn, or its run outside a turn.
func (c *cursor) attemptEnd(f *exportFrame, a *trace.Attempt) time.Time {
	if a.Finished {
		return a.Started.Add(a.Duration)
	}
	if a.Crashed {
		if at, ok := crashTime(f.run, a); ok {
			return at
		}
	}
	until := runEnd(c.t, f.run)
	if f.turn != nil {
		until = turnEnd(f.run.Nodes, f.turnAt, until)
	}
	return until
}

// settled reports whether an attempt's span is final: its worker died
// before its answer, or it has its answer and its call moved on after it
// (so its retry, or its journal record, is in).
func settled(a *trace.Attempt, after []trace.Node) bool {
	if a.Crashed && !a.Finished {
		return true
	}
	if !a.Finished {
		return false
	}
	for _, n := range after {
		if seqOf(n) > a.EndSeq {
			return true
		}
	}
	return false
}

// seqOf is the Seq a call's node began at.
func seqOf(n trace.Node) uint64 {
	switch n := n.(type) {
	case *trace.Attempt:
		return n.Seq
	case *trace.Note:
		return n.Seq
	}
	return 0
}

// closed reports whether nothing more can be added to the container of
// the frame at depth i before the history's end: a run once a later run
// began, a turn once something followed it in its run, a call once
// something followed it and it is not retrying nor waiting for an answer.
func (c *cursor) closed(i int) bool {
	f := c.stack[i]
	switch n := f.node.(type) {
	case *trace.Run:
		return n != c.t.Runs[len(c.t.Runs)-1]
	case *trace.Turn, *trace.Call:
		if c.closed(i - 1) {
			return true
		}
		if ns := c.children(c.stack[i-1]); len(ns) > 0 && ns[len(ns)-1] == n {
			return false
		}
		if call, ok := n.(*trace.Call); ok {
			if f.retrying {
				return false
			}
			for _, a := range call.Attempts {
				if !a.Finished && !a.Crashed {
					return false
				}
			}
		}
		return true
	}
	return false // the top level closes only at the history's end
}
