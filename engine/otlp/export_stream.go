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
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
)

// ErrNoEvents is History's answer for an execution with no events of its
// own to export.
var ErrNoEvents = imports.ErrNoEvents

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
	// batch > 0 writes JSON Lines: a document (an export request) of up
	// to batch spans a line, as a BatchSpanProcessor sends them.
	batch int
}

// LinesBatch is how many spans a line of NewJSONLinesWriter holds: the
// OpenTelemetry SDKs' default largest export batch.
const LinesBatch = 512

// spansSuffix closes the spans, the scope's and the resource's lists, and
// the document: what pdata writes after the last span.
var spansSuffix = []byte("]}]}]}")

// NewJSONWriter starts a document on w; version is the scope's (the
// build's) version.
func NewJSONWriter(w io.Writer, version string) *JSONWriter {
	td, spans := envelope(version)
	return &JSONWriter{w: w, td: td, spans: spans, version: version}
}

// NewJSONLinesWriter starts OTLP/JSON Lines on w: the spans of
// NewJSONWriter's document, LinesBatch to a line, each line a document of
// its own with the same envelope, ended by a newline. Nothing is written
// for no span.
func NewJSONLinesWriter(w io.Writer, version string) *JSONWriter {
	jw := NewJSONWriter(w, version)
	jw.batch = LinesBatch
	return jw
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
	switch {
	case jw.count == 0:
		_, jw.err = jw.w.Write(jw.prefix)
	case jw.batch > 0 && jw.count%jw.batch == 0: // the line is full: the next
		if _, jw.err = jw.w.Write(spansSuffix); jw.err == nil {
			if _, jw.err = jw.w.Write([]byte{'\n'}); jw.err == nil {
				_, jw.err = jw.w.Write(jw.prefix)
			}
		}
	default:
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

// Close ends the document (or the last line: JSON Lines end with a
// newline, and a document does not). With no span written, a document is
// the envelope alone, as pdata writes it, and JSON Lines are no line.
func (jw *JSONWriter) Close() error {
	if jw.err != nil {
		return jw.err
	}
	if jw.batch > 0 {
		if jw.count == 0 {
			return nil
		}
		if _, err := jw.w.Write(spansSuffix); err != nil {
			return err
		}
		_, err := jw.w.Write([]byte{'\n'})
		return err
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
		history.Apply(t, ev)
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

// cursor writes each span of a fold's tree once it is final (trace.Walk
// says when): an attempt or a replay when it is reached and settled, a
// turn once its children are written and the next turn began, each run's
// root span (and its last turn) at the end. Span ids are numbered in the
// tree's order (exporter.reserve), whatever order the spans go out in.
type cursor struct {
	t           *trace.Trace
	walk        *trace.Walk[span]
	newExporter func(run int) *exporter
	failed      func() bool
	// forget, for a streaming fold, lets go of each attempt written.
	forget bool
	// closing are the frames whose spans wait for the end of the history,
	// in the order they closed: each run's last turn, then its root.
	closing []*trace.Frame[span]
}

func newCursor(t *trace.Trace, newExporter func(run int) *exporter, failed func() bool) *cursor {
	if failed == nil {
		failed = func() bool { return false }
	}
	c := &cursor{t: t, newExporter: newExporter, failed: failed}
	c.walk = trace.NewWalk[span](t, c)
	return c
}

// span is what the cursor keeps for a container being written: its run's
// exporter, its span's id, its children's parent (a call has no span of
// its own: its turn's or run's), and up, its span's parent.
type span struct {
	e      *exporter
	id, up pcommon.SpanID
}

// pump writes the spans that have become final, in the order of the tree,
// and (forget set) forgets each attempt it wrote. With final set, the
// history was read to its end: everything is final but the spans finish
// writes.
func (c *cursor) pump(final bool) { c.walk.Pump(final) }

// Enter reserves the span id of a run or a turn as it is reached.
func (c *cursor) Enter(parent, f *trace.Frame[span]) {
	switch n := f.Node.(type) {
	case *trace.Run:
		e := c.newExporter(n.Number)
		f.Data = span{e: e, id: e.reserve()}
	case *trace.Turn:
		f.Data = span{e: parent.Data.e, id: parent.Data.e.reserve(), up: parent.Data.id}
	case *trace.Call:
		f.Data = span{e: parent.Data.e, id: parent.Data.id}
	}
}

// Attempt writes a settled attempt. The call's last attempt carries its
// journal record, and a record may come before another attempt (a
// concurrent copy's retry): with a record, the last attempt so far waits
// until no attempt can follow, its call closed.
func (c *cursor) Attempt(f *trace.Frame[span], a *trace.Attempt, final bool) (written, forget bool) {
	call := f.Node.(*trace.Call)
	last := a == call.Attempts[len(call.Attempts)-1]
	if !final && last && call.Recorded != nil && (a.Retry > 0 || !c.walk.Closed()) {
		return false, false
	}
	f.Data.e.attempt(call, a, f.Data.id, c.attemptEnd(f, a), last)
	return true, c.forget
}

// Other writes a replay's span; gaps and notes have none of their own.
func (c *cursor) Other(f *trace.Frame[span], n trace.Node) {
	if r, ok := n.(*trace.Replay); ok {
		f.Data.e.replay(r, f.Data.id)
	}
}

// Failed reports that writing failed.
func (c *cursor) Failed() bool { return c.failed() }

// Leave writes the span of a container whose children are written, or
// keeps the frame for finish: a turn is written once the next turn of its
// run began (its end); a run's root span always waits.
func (c *cursor) Leave(f *trace.Frame[span]) {
	switch n := f.Node.(type) {
	case *trace.Run:
		c.closing = append(c.closing, f)
	case *trace.Turn:
		if end, ok := nextTurn(f.Run.Nodes, f.TurnAt); ok {
			f.Data.e.turn(n, f.Data.id, f.Data.up, end)
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
		switch n := f.Node.(type) {
		case *trace.Run:
			f.Data.e.run(n, n == c.t.Runs[len(c.t.Runs)-1], f.Data.id)
		case *trace.Turn:
			f.Data.e.turn(n, f.Data.id, f.Data.up, turnEnd(f.Run.Nodes, f.TurnAt, runEnd(c.t, f.Run)))
		}
	}
	c.closing = nil
}

// attemptEnd is when an attempt's span ends: when its answer came; when
// its worker died, if it died first; else (still in flight at the end of
// the history) with its turn, or its run outside a turn.
func (c *cursor) attemptEnd(f *trace.Frame[span], a *trace.Attempt) time.Time {
	if a.Finished {
		return a.Started.Add(a.Duration)
	}
	if a.Crashed {
		if at, ok := crashTime(f.Run, a); ok {
			return at
		}
	}
	until := runEnd(c.t, f.Run)
	if f.Turn != nil {
		until = turnEnd(f.Run.Nodes, f.TurnAt, until)
	}
	return until
}
