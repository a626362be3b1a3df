package otlp

import (
	"cmp"
	"slices"
)

// The receivers audit a request's executions on its own spans before the
// group commit, on the request's goroutine. In the commit's transaction,
// which runs its requests' writes one after another on one goroutine, the
// audit on the spans in hand (writer.handJob, handJob.run) was a fifth of
// the transaction's build, while the machine's two cores stood 11-16% idle
// (BENCHMARKS.md, 24a): the serial part of a request's path set the rate.

// aheadAudit is what auditAhead found of one execution of a request.
type aheadAudit struct {
	v      handVerdict // as handJob.run notes it; notAudited: the fast path was not sure
	traces int         // how many of the request's traces it holds
}

// aheadAudits are a request's audits made ahead, by execution id.
type aheadAudits map[string]aheadAudit

// auditAhead audits each execution of spans (facts: their facts) as
// handJob.run would once writer.write has stored them as the first spans
// of the execution: the spans of the traces whose execution id
// (ExecutionID, with the trace's first conversation in the request) is
// its, those the fast path reads, in the order write stores them (their
// keys'). An execution is left out when a span of it comes twice in the
// request (the write stores it once), it needs no audit (needsAudit), or
// the fast path is not sure of a span of it (handJob audits it in full on
// the stored forms). into is cleared and filled; scratch is memory to use
// again. It returns the spans grouped by trace, for the write.
//
// useAhead takes an audit only for an execution the write found whole in
// hand, of as many traces: the same spans.
func auditAhead(spans []Span, facts []spanFacts, into aheadAudits, scratch *aheadScratch) *traceGroups {
	clear(into)
	order, byTrace := groupByTrace(spans)
	// Each trace's execution (an index into execs), then the traces in the
	// order of their executions, an execution's side by side.
	if scratch.place == nil {
		scratch.place = map[string]int{}
	}
	clear(scratch.place)
	execs, execOf := scratch.execs[:0], scratch.execOf[:0]
	for k, t := range order {
		exec := ExecutionID(t, traceConversation(spans, facts, byTrace[k]))
		e, ok := scratch.place[exec]
		if !ok {
			e = len(execs)
			scratch.place[exec] = e
			execs = append(execs, exec)
		}
		execOf = append(execOf, e)
	}
	traces := scratch.traces[:0]
	for k := range order {
		traces = append(traces, k)
	}
	slices.SortStableFunc(traces, func(a, b int) int { return cmp.Compare(execOf[a], execOf[b]) })
	scratch.execs, scratch.execOf, scratch.traces = execs, execOf, traces
	for from := 0; from < len(traces); {
		e := execOf[traces[from]]
		to := from + 1
		for to < len(traces) && execOf[traces[to]] == e {
			to++
		}
		if a, ok := scratch.audit(spans, facts, byTrace, traces[from:to]); ok {
			into[execs[e]] = a
		}
		from = to
	}
	clear(execs) // let the ids go
	return &traceGroups{order: order, byTrace: byTrace}
}

// audit audits the execution whose traces are traces (places in byTrace)
// for auditAhead: false when it leaves the execution out.
func (scratch *aheadScratch) audit(spans []Span, facts []spanFacts, byTrace [][]int, traces []int) (aheadAudit, bool) {
	idx := scratch.idx[:0]
	for _, k := range traces {
		idx = append(idx, byTrace[k]...)
	}
	// The order of the spans' keys (spanKey) within the execution: trace
	// id and span id, one after the other.
	slices.SortFunc(idx, func(a, b int) int { return compareSpanKeys(&spans[a], &spans[b]) })
	scratch.idx = idx
	flags := scratch.flags[:0]
	defer func() {
		clear(flags) // let the spans' strings go
		scratch.flags = flags[:0]
	}()
	unsure := false
	var m summary
	for n, i := range idx {
		if n > 0 && compareSpanKeys(&spans[idx[n-1]], &spans[i]) == 0 {
			return aheadAudit{}, false // a span twice: the write stores it once
		}
		f := &facts[i]
		if !f.reads {
			continue
		}
		unsure = unsure || f.flagUnsure
		if f.flagUse {
			flags = append(flags, f.flag)
		}
		if f.effect {
			m.effects++
		}
		if f.weighs {
			m.weighing++
		}
	}
	if unsure || !needsAudit(&m, false) {
		return aheadAudit{}, false
	}
	a := aheadAudit{traces: len(traces)}
	if g, sure := scratch.flag.verdictOf(flags); sure {
		a.v = handVerdictOf(g)
	}
	return a, true
}

// compareSpanKeys orders two spans as their keys under one execution sort:
// by trace id and span id written one after the other.
func compareSpanKeys(a, b *Span) int {
	if len(a.TraceID) == len(b.TraceID) {
		if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
			return c
		}
		return cmp.Compare(a.SpanID, b.SpanID)
	}
	return cmp.Compare(a.TraceID+a.SpanID, b.TraceID+b.SpanID)
}

// aheadScratch is auditAhead's memory, kept with a request's.
type aheadScratch struct {
	place  map[string]int // execution -> its index in execs
	execs  []string
	execOf []int // each trace's execution
	traces []int // the traces, by execution
	idx    []int // an execution's spans
	flags  []flagSpan
	flag   *flagScratch
}

func newAheadScratch() *aheadScratch { return &aheadScratch{flag: newFlagScratch()} }

// useAhead notes, for each execution of the last write whole in hand that
// audits has the audit of (of as many traces: the same spans), its answer
// on its traces, as handJob.run would, and leaves the others to handJob.
func (w *writer) useAhead(audits aheadAudits) {
	if len(audits) == 0 {
		return
	}
	rest := w.hand[:0]
	for _, h := range w.hand {
		a, ok := audits[h.exec]
		if !ok || a.traces != len(h.traces) || h.unsure {
			rest = append(rest, h)
			continue
		}
		if a.v != notAudited {
			for _, st := range h.traces {
				st.sum.hand = a.v
			}
		}
	}
	clear(w.hand[len(rest):])
	w.hand = rest
}
