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
// a history than its calls, however many attempts it made. Write the
// executions with History or Trace, then Close.
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

// Trace writes the spans of a folded execution (one imported, say, whose
// model is in memory anyway).
func (jw *JSONWriter) Trace(t *trace.Trace) error {
	for i, r := range t.Runs {
		e := jw.exporter(t, r.Number)
		root := e.run(r, i == len(t.Runs)-1)
		e.nodes(r.Nodes, root, runEnd(t, r))
		if jw.err != nil {
			return jw.err
		}
	}
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
// history (read calls fn for each event from the first, and is called
// twice) without holding it: a first pass folds what a span needs ahead of
// its children (each run's end and the end of each turn), forgetting each
// attempt as it finishes; the second folds it again and writes each span
// once nothing can change it, in Export's order, and forgets the attempts
// it wrote. An execution with no events is ErrNoEvents.
//
// An attempt is written once its call moved on after its answer (its
// retry, its journal record or the next attempt is in) or its worker died;
// the last attempt of a recorded call once its call closed. While one
// waits for that (the last attempt of a call nothing recorded, until the
// history ends), what follows it waits in memory too.
func (jw *JSONWriter) History(id string, read func(fn func(history.Event) error) error) error {
	whole := trace.New(id)
	whole.Stream()
	err := read(func(ev history.Event) error {
		whole.ApplyHistory(ev)
		if ev.Type == history.AttemptFinished {
			if a := whole.Attempt(ev.Step, ev.Attempt); a != nil {
				whole.Forget(a)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if whole.Events == 0 {
		return ErrNoEvents
	}
	s := &historyStream{jw: jw, whole: whole, t: trace.New(id), turnEnds: map[uint64]time.Time{}}
	for _, r := range whole.Runs {
		end := runEnd(whole, r)
		for i, n := range r.Nodes {
			if x, ok := n.(*trace.Turn); ok {
				s.turnEnds[x.Seq] = turnEnd(r.Nodes, i, end)
			}
		}
	}
	s.t.Stream()
	s.stack = []*exportFrame{{}}
	err = read(func(ev history.Event) error {
		s.t.ApplyHistory(ev)
		s.pump(false)
		return jw.err
	})
	if err != nil {
		return err
	}
	s.pump(true)
	return jw.err
}

// historyStream is where History's second pass stands.
type historyStream struct {
	jw *JSONWriter
	// whole is the first pass's fold: the runs as they ended.
	whole *trace.Trace
	// t is the second pass's fold, as far as it was read.
	t        *trace.Trace
	turnEnds map[uint64]time.Time // by the turn's Seq
	runs     int                  // the runs written
	stack    []*exportFrame
}

// exportFrame is a container whose span (if it has one) is written: the
// top level, a run, a turn or a call; next is its next child to write.
type exportFrame struct {
	node   trace.Node // nil at the top level
	e      *exporter
	parent pcommon.SpanID // its children's parent span
	until  time.Time      // when its children end at the latest
	next   int
	// retrying is set when the call's last written attempt scheduled a
	// retry: another attempt is coming.
	retrying bool
}

func (s *historyStream) children(f *exportFrame) []trace.Node {
	if f.node == nil {
		return s.t.Nodes
	}
	return f.node.Children()
}

// pump writes the spans that have become final, in the order of the tree,
// and forgets each attempt it wrote. With final set, the history was read
// to its end.
func (s *historyStream) pump(final bool) {
	for len(s.stack) > 0 && s.jw.err == nil {
		f := s.stack[len(s.stack)-1]
		ns := s.children(f)
		if f.next >= len(ns) {
			if !final && !s.closed(len(s.stack)-1) {
				return
			}
			s.stack = s.stack[:len(s.stack)-1]
			continue
		}
		switch n := ns[f.next].(type) {
		case *trace.Run:
			// The first pass has the run's end, and the execution's.
			if s.runs >= len(s.whole.Runs) {
				s.jw.err = fmt.Errorf("execution %s: its history changed between two reads", s.t.Execution)
				return
			}
			r := s.whole.Runs[s.runs]
			s.runs++
			e := s.jw.exporter(s.whole, r.Number)
			root := e.run(r, s.runs == len(s.whole.Runs))
			s.stack = append(s.stack, &exportFrame{node: n, e: e, parent: root, until: runEnd(s.whole, r)})
		case *trace.Turn:
			end := s.turnEnds[n.Seq]
			id := f.e.turn(n, f.parent, end)
			s.stack = append(s.stack, &exportFrame{node: n, e: f.e, parent: id, until: end})
		case *trace.Call:
			s.stack = append(s.stack, &exportFrame{node: n, e: f.e, parent: f.parent, until: f.until})
		case *trace.Attempt:
			if !final && !settled(n, ns[f.next+1:]) {
				return
			}
			c := f.node.(*trace.Call)
			last := n == c.Attempts[len(c.Attempts)-1]
			// The call's last attempt carries its journal record, and a
			// record may come before another attempt (a concurrent copy's
			// retry): with a record, the last attempt so far waits until
			// no attempt can follow, its call closed.
			if !final && last && c.Recorded != nil && (n.Retry > 0 || !s.closed(len(s.stack)-1)) {
				return
			}
			f.e.attempt(c, n, f.parent, f.until, last)
			f.retrying = n.Retry > 0
			s.t.Forget(n)
			if len(s.children(f)) < len(ns) {
				continue // it left the call's nodes: the next one took its place
			}
		case *trace.Replay:
			f.e.replay(n, f.parent)
		}
		f.next++
	}
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
func (s *historyStream) closed(i int) bool {
	f := s.stack[i]
	switch n := f.node.(type) {
	case *trace.Run:
		return n != s.t.Runs[len(s.t.Runs)-1]
	case *trace.Turn, *trace.Call:
		if s.closed(i - 1) {
			return true
		}
		if ns := s.children(s.stack[i-1]); len(ns) > 0 && ns[len(ns)-1] == n {
			return false
		}
		if c, ok := n.(*trace.Call); ok {
			if f.retrying {
				return false
			}
			for _, a := range c.Attempts {
				if !a.Finished && !a.Crashed {
					return false
				}
			}
		}
		return true
	}
	return false // the top level closes only at the history's end
}
