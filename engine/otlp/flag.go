package otlp

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
)

// The duplicate flag without the fold.
//
// An execution record's duplicate flag is what the audit (default
// effects, the execution alone) says of the execution's spans translated
// (Events) and folded. For the spans of the usual agent, whose tool spans
// the translation maps one to one onto attempts, that answer can be had
// straight from the spans: the translation's grouping of tool spans into
// calls is done here the same way (by tool-call id, else by parent, tool
// and canonical arguments; a call scheduled again in each run that tries
// it, with that run's first attempt's tool and arguments), and the audit's
// grading of one execution's attempts of one effect needs only the keys of
// those that succeeded (audit.SucceededTwice). That is several times
// cheaper than building events, folding and walking them, and it is most
// of what an import of many short traces spent on the flag
// (BENCHMARKS.md, 8a).
//
// Where the spans say something this does not model, the answer is left
// to the translation and the fold (sure is false): retrylab's own export
// (attempt numbers and runs of its own, recorded effects, crashed
// workers), two calls of one id, two tool spans that sort as one (same
// times and span id), a tool name holding a NUL byte.
// TestQuickFlagMatchesTheAudit compares the two on many generated traces.

// flagScratch is the fast path's memory, used again from one execution to
// the next. It is for one goroutine.
type flagScratch struct {
	flat   []flagSpan
	order  []*flagSpan
	canon  map[argsRef]string
	byID   map[string]int
	bySig  map[sigKey]int
	ids    map[string]bool
	calls  []flagCall
	oks    []okAttempt
	keys   []string
	effect effects
}

// argsRef is a tool span's arguments as it carries them: the attribute
// and its value (argsAttr).
type argsRef struct{ key, val string }

// sigKey is what makes spans without a common call id attempts of one call.
type sigKey struct{ parent, tool, args string }

// flagCall is a call being assembled from its spans.
type flagCall struct {
	trace      string // the trace (run) of its latest attempt
	tool, args string // as its scheduling in that run says
	effect     bool   // tool is side-effecting
}

// okAttempt is a side-effecting attempt that succeeded: the effect it is
// an attempt of, and the idempotency key it carried.
type okAttempt struct {
	tool, args, key string
}

// flagSpan is what the fast path reads of a tool span: a few strings of
// it, not the span and its attributes, so that an import can keep it for
// many spans (keptSpans) for little memory.
type flagSpan struct {
	trace, span, parent string
	start, end          int64
	tool                string
	args                argsRef // as argsAttr has them
	callID, key         string
	succeeded           bool // succeeded(s)
}

// flagSpanOf is what the fast path reads of s (role: its role): use says
// it is a tool span the fast path groups into calls, and sure is false
// when s alone leaves the answer to the translation and the fold.
func flagSpanOf(s *Span, role Role) (f flagSpan, use, sure bool) {
	if s.ParentID == "" {
		// retrylab's own export numbers its runs and records its
		// workers' deaths, which the fold turns into unknown outcomes.
		if _, ok := s.Attrs["retrylab.run"]; ok || s.Attrs["retrylab.run.crashed"] == "true" {
			return f, false, false
		}
	}
	if role != RoleTool || s.Attrs["retrylab.replay"] == "true" {
		return f, false, true
	}
	if _, ok := s.Attrs["retrylab.attempt"]; ok || s.Attrs["retrylab.effects"] != "" {
		return f, false, false
	}
	k, v := s.argsAttr()
	return flagSpan{trace: s.TraceID, span: s.SpanID, parent: s.ParentID, start: s.Start, end: s.End,
		tool: s.Tool(), args: argsRef{k, v}, callID: s.CallID(), key: s.Key(), succeeded: succeeded(s)}, true, true
}

func newFlagScratch() *flagScratch {
	return &flagScratch{canon: map[argsRef]string{}, byID: map[string]int{}, bySig: map[sigKey]int{},
		ids: map[string]bool{}, effect: effects{}}
}

// flagReads says whether the fast path reads span s (role: its role): the
// roots, for what they say of runs, and every tool span, side-effecting or
// not, since a read can share a call with a send.
func flagReads(s *Span, role Role) bool { return role == RoleTool || s.ParentID == "" }

// duplicate says whether the audit finds a duplicate in one execution
// whose spans (at least those flagReads keeps; others are skipped) are
// spans, in any order; sure is false when the answer must come from the
// translation and the fold instead (hasDuplicate).
func (sc *flagScratch) duplicate(spans []Span) (dup, sure bool) {
	flat := sc.flat[:0]
	defer func() {
		clear(flat)
		sc.flat = flat[:0]
	}()
	for i := range spans {
		f, use, ok := flagSpanOf(&spans[i], spans[i].Role())
		if !ok {
			return false, false
		}
		if use {
			flat = append(flat, f)
		}
	}
	return sc.duplicateOf(flat)
}

// duplicateOf is duplicate on what flagSpanOf made of an execution's
// spans: those it said to use, all of them sure.
func (sc *flagScratch) duplicateOf(spans []flagSpan) (dup, sure bool) {
	order := sc.order[:0]
	defer func() {
		clear(order)
		sc.order = order[:0]
		clear(sc.byID)
		clear(sc.bySig)
		clear(sc.ids)
		clear(sc.calls)
		sc.calls = sc.calls[:0]
		clear(sc.oks)
		sc.oks = sc.oks[:0]
		if len(sc.canon) > 1024 {
			clear(sc.canon) // arguments repeat within an execution, seldom across
		}
	}()
	for i := range spans {
		order = append(order, &spans[i])
	}
	// The translation's order: start, end (latest first), span id.
	slices.SortStableFunc(order, func(a, b *flagSpan) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		return strings.Compare(a.span, b.span)
	})
	for i := 1; i < len(order); i++ {
		if a, b := order[i-1], order[i]; a.start == b.start && a.end == b.end && a.span == b.span {
			return false, false // their order would be the input's
		}
	}
	for _, s := range order {
		tool := s.tool
		if strings.IndexByte(tool, 0) >= 0 {
			return false, false // the audit's group keys join tool and arguments with a NUL
		}
		args := sc.args(s.args)
		cid := s.callID
		c, ok := -1, false
		if cid != "" {
			if c, ok = sc.byID[cid]; !ok {
				c = -1
			}
		}
		sig := sigKey{s.parent, tool, args}
		if c < 0 {
			if c, ok = sc.bySig[sig]; !ok {
				c = -1
			}
		}
		if c < 0 {
			id := firstNonEmpty(cid, s.span)
			if sc.ids[id] {
				return false, false // two calls of one id: their attempts would collide in the fold
			}
			sc.ids[id] = true
			c = len(sc.calls)
			sc.calls = append(sc.calls, flagCall{})
		}
		if _, ok := sc.byID[cid]; cid != "" && !ok {
			sc.byID[cid] = c
		}
		if _, ok := sc.bySig[sig]; !ok {
			sc.bySig[sig] = c
		}
		call := &sc.calls[c]
		if call.trace == "" || call.trace != s.trace {
			// The call is scheduled (again) in this run, with this span's
			// tool and arguments: the audit groups its attempts by those.
			call.trace, call.tool, call.args = s.trace, tool, args
			call.effect = sc.effect.tool(tool)
		}
		if call.effect && s.succeeded {
			args := call.args
			if audit.ArgsUnknown(args) {
				// The audit groups a call without arguments with no other.
				args = "\x01" + strconv.Itoa(c)
			}
			sc.oks = append(sc.oks, okAttempt{tool: call.tool, args: args, key: s.key})
		}
	}
	oks := sc.oks
	slices.SortFunc(oks, func(a, b okAttempt) int {
		if c := strings.Compare(a.tool, b.tool); c != 0 {
			return c
		}
		return strings.Compare(a.args, b.args)
	})
	for i := 0; i < len(oks); {
		j := i + 1
		for j < len(oks) && oks[j].tool == oks[i].tool && oks[j].args == oks[i].args {
			j++
		}
		keys := sc.keys[:0]
		for _, a := range oks[i:j] {
			keys = append(keys, a.key)
		}
		sc.keys = keys
		if audit.SucceededTwice(keys) {
			clear(keys)
			return true, true
		}
		clear(keys)
		i = j
	}
	return false, true
}

// args are the canonical arguments, as a string, of a tool span that
// carries them as ref (argsAttr): the translation's (Span.Args), computed
// once for each value an execution's spans carry.
func (sc *flagScratch) args(ref argsRef) string {
	if ref.key == "" {
		return ""
	}
	if a, ok := sc.canon[ref]; ok {
		return a
	}
	a := string(canonical(argsOf(ref.key, ref.val)))
	sc.canon[ref] = a
	return a
}

// succeeded says whether tool span s is an attempt the audit counts as
// succeeded: it finished (retrylab's export marks one that never did), OK,
// and was not deduplicated. One that timed out is never OK, and without
// recorded effects (which the fast path leaves to the fold) it is not ◆.
func succeeded(s *Span) bool {
	o := s.Attrs["retrylab.outcome"]
	if o == "none" {
		return false
	}
	outcome := trace.Outcome(o)
	if o == "" {
		outcome, _ = s.outcome()
	}
	return outcome == trace.OutcomeOK && s.Attrs["retrylab.deduplicated"] != "true"
}

// tool says whether a tool counts as a side effect by default.
func (e effects) tool(name string) bool {
	is, ok := e[name]
	if !ok {
		is = audit.EffectByDefault(name)
		e[name] = is
	}
	return is
}
