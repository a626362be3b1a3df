package trace

// Walk goes through a trace's tree in its order while the history is
// folded, and hands each node to its writer once nothing the rest of the
// history holds can change it: an attempt once it is settled (its worker
// died before its answer, or its call moved on after its answer), a
// container (a run, a turn, a call) once its children are handed over and
// nothing more can be added to it. With the trace streaming (Stream), the
// writer may let each attempt go once written, so what it writes from a
// history of any length needs memory for its calls, not its attempts.
// The handout (engine/narrate) and the OTLP export (engine/otlp) write
// through it; D is what a writer keeps for each container.
type Walk[D any] struct {
	t     *Trace
	w     Walker[D]
	stack []*Frame[D]
}

// Frame is a container the walk is in: the top level (Node nil), a run, a
// turn or a call.
type Frame[D any] struct {
	Node Node
	// Run is the run it is in, or is; nil at the top level.
	Run *Run
	// Turn is the turn it is in, or is, at Run.Nodes[TurnAt]; nil for a
	// run, or a call outside a turn.
	Turn   *Turn
	TurnAt int
	// Data is the writer's, set by Enter.
	Data D
	// next is the next child to hand over.
	next int
	// retrying is set when the call's last written attempt scheduled a
	// retry: another attempt is coming.
	retrying bool
}

// Walker is what a Walk hands the nodes to.
type Walker[D any] interface {
	// Enter is called when the walk reaches a container in parent; f is
	// its frame, Data still to set.
	Enter(parent, f *Frame[D])
	// Leave is called when a container's children are all handed over and
	// nothing more can be added to it (or the history was read to its end).
	Leave(f *Frame[D])
	// Attempt is handed an attempt of the call of frame f once it is
	// settled (any attempt, with final set). It reports false to hold it
	// (the walk stops there until the next Pump), or true once written,
	// with forget set to have the walk let it go (Trace.Forget).
	Attempt(f *Frame[D], a *Attempt, final bool) (written, forget bool)
	// Other is handed any other node: a gap, a replay or a note.
	Other(f *Frame[D], n Node)
	// Failed reports that the writer failed: the walk goes no further.
	Failed() bool
}

// NewWalk starts a walk of t at its top level.
func NewWalk[D any](t *Trace, w Walker[D]) *Walk[D] {
	return &Walk[D]{t: t, w: w, stack: []*Frame[D]{{}}}
}

func (w *Walk[D]) children(f *Frame[D]) []Node {
	if f.Node == nil {
		return w.t.Nodes
	}
	return f.Node.Children()
}

// Pump hands over the nodes that have become final, in the order of the
// tree. With final set, the history was read to its end: everything is
// final.
func (w *Walk[D]) Pump(final bool) {
	for len(w.stack) > 0 && !w.w.Failed() {
		top := len(w.stack) - 1
		f := w.stack[top]
		ns := w.children(f)
		if f.next >= len(ns) {
			if !final && !w.closed(top) {
				return
			}
			w.stack = w.stack[:top]
			if f.Node != nil {
				w.w.Leave(f)
			}
			continue
		}
		switch n := ns[f.next].(type) {
		case *Run, *Turn, *Call:
			in := &Frame[D]{Node: n, Run: f.Run, Turn: f.Turn, TurnAt: f.TurnAt}
			switch n := n.(type) {
			case *Run:
				in.Run, in.Turn, in.TurnAt = n, nil, 0
			case *Turn:
				in.Turn, in.TurnAt = n, f.next
			}
			w.w.Enter(f, in)
			w.stack = append(w.stack, in)
		case *Attempt:
			if !final && !settled(n, ns[f.next+1:]) {
				return
			}
			written, forget := w.w.Attempt(f, n, final)
			if !written {
				return
			}
			f.retrying = n.Retry > 0
			if forget {
				w.t.Forget(n)
				if len(w.children(f)) < len(ns) {
					continue // it left the call's nodes: the next one took its place
				}
			}
		default:
			w.w.Other(f, n)
		}
		f.next++
	}
}

// Closed reports whether nothing more can be added before the history's
// end to the container the walk is in (the call of an attempt being
// handed over, say).
func (w *Walk[D]) Closed() bool { return w.closed(len(w.stack) - 1) }

// closed reports whether nothing more can be added to the container of
// the frame at depth i before the history's end: a run once a later run
// began, a turn once something followed it in its run, a call once
// something followed it and it is neither retrying nor waiting for an
// answer (or once its turn or run closed).
func (w *Walk[D]) closed(i int) bool {
	f := w.stack[i]
	switch n := f.Node.(type) {
	case *Run:
		return n != w.t.Runs[len(w.t.Runs)-1]
	case *Turn, *Call:
		if w.closed(i - 1) {
			return true
		}
		if ns := w.children(w.stack[i-1]); len(ns) > 0 && ns[len(ns)-1] == n {
			return false
		}
		if call, ok := n.(*Call); ok {
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

// settled reports whether an attempt is final: its worker died before its
// answer, or it has its answer and its call moved on after it (after are
// the call's nodes that follow it: its retry, or its journal record, is
// in).
func settled(a *Attempt, after []Node) bool {
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

// seqOf is the Seq a call's node (an attempt or a note) began at.
func seqOf(n Node) uint64 {
	switch n := n.(type) {
	case *Attempt:
		return n.Seq
	case *Note:
		return n.Seq
	}
	return 0
}
