package otlp

// The receiver audits a request's executions on its own spans before the
// group commit, on the request's goroutine: in the commit's transaction,
// which runs its requests' writes one after another, the audit on the
// spans in hand (writer.handJob, handJob.run) was a sixth of each write
// (BENCHMARKS.md, 24a).

// inHand is what auditInHand found of one execution.
type inHand struct {
	v      int8 // as summary.hand: 0 the fast path was not sure, 1 no duplicate, 2 a duplicate
	traces int  // how many traces of the request it read
}

// handAudits are a request's audits by execution id.
type handAudits map[string]inHand

// auditInHand audits each execution of spans (facts: their facts) as
// handJob.run would once writer.write has stored them as the first spans
// of the execution: the spans of the traces whose execution id
// (ExecutionID, the trace's first conversation in the request) is its,
// those flagReads keeps. An execution is left out when a span of it comes
// twice in the request (the write stores it once) or it needs no audit
// (needsAudit). useAudits takes an audit only for an execution the write
// found whole in hand, of as many traces.
func auditInHand(spans []Span, facts []spanFacts, scratch *flagScratch) handAudits {
	type trace struct {
		id, exec string
		spans    []int
	}
	traces := map[string]*trace{}
	var order []*trace
	for i := range spans {
		t := traces[spans[i].TraceID]
		if t == nil {
			t = &trace{id: spans[i].TraceID}
			traces[t.id] = t
			order = append(order, t)
		}
		t.spans = append(t.spans, i)
	}
	type execution struct {
		traces []*trace
	}
	execs := map[string]*execution{}
	var names []string
	for _, t := range order {
		conv := ""
		for _, i := range t.spans {
			if c := spans[i].Conversation(); c != "" {
				conv = c
				break
			}
		}
		t.exec = ExecutionID(t.id, conv)
		x := execs[t.exec]
		if x == nil {
			x = &execution{}
			execs[t.exec] = x
			names = append(names, t.exec)
		}
		x.traces = append(x.traces, t)
	}
	audits := make(handAudits, len(execs))
	var kept []Span
	seen := map[string]struct{}{}
	for _, name := range names {
		x := execs[name]
		kept = kept[:0]
		clear(seen)
		var m summary
		twice := false
		for _, t := range x.traces {
			for _, i := range t.spans {
				s := &spans[i]
				key := s.TraceID + s.SpanID
				if _, ok := seen[key]; ok {
					twice = true
				}
				seen[key] = struct{}{}
				if !flagReads(s, facts[i].role) {
					continue
				}
				kept = append(kept, *s)
				if facts[i].effect {
					m.effects++
				}
				if facts[i].weighs {
					m.weighing++
				}
			}
		}
		if twice || !needsAudit(&m, false) {
			continue
		}
		a := inHand{traces: len(x.traces)}
		if dup, sure := scratch.duplicate(kept); sure {
			a.v = 1
			if dup {
				a.v = 2
			}
		}
		audits[name] = a
	}
	clear(kept)
	return audits
}

// useAudits notes, for each execution of the last write whole in hand
// that audits has the audit of (of as many traces: the same spans), its
// answer on its traces, as handJob.run would, and leaves the others to
// handJob.
func (w *writer) useAudits(audits handAudits) {
	if audits == nil {
		return
	}
	rest := w.hand[:0]
	for _, h := range w.hand {
		a, ok := audits[h.exec]
		if !ok || a.traces != len(h.traces) {
			rest = append(rest, h)
			continue
		}
		if a.v != 0 {
			for _, st := range h.traces {
				st.sum.hand = a.v
			}
		}
	}
	clear(w.hand[len(rest):])
	w.hand = rest
}
