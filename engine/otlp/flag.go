package otlp

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
)

// The record's verdict without the fold.
//
// An execution record's duplicate and possible flags are what the audit
// (default effects, the execution alone: audit.Verdict) says of the
// execution's spans translated (Events) and folded. For the spans of the
// usual agent, whose tool spans the translation maps one to one onto
// attempts, that answer can be had straight from the spans: the
// translation's grouping of tool spans into calls is done here the same
// way (by tool-call id, else by parent, tool and canonical arguments; a
// call scheduled again in each run that tries it, with that run's first
// attempt's tool and arguments), and the audit's DUPLICATE for one
// execution's attempts of one effect needs only the keys of those that
// succeeded (audit.SucceededTwice). That is several times
// cheaper than building events, folding and walking them, and it is most
// of what an import of many short traces spent on the flag
// (BENCHMARKS.md, 8a).
//
// retrylab's own export says more, and the fast path reads it as the
// translation and the fold do: a root span's run number (retrylab.run),
// which names the run of its trace; a root span's worker death
// (retrylab.run.crashed), which leaves the attempts of its run that never
// had an answer (retrylab.outcome "none") with an unknown outcome; a tool
// span's attempt number (retrylab.attempt), which keeps it out of the
// grouping by parent, tool and arguments, and keys its attempt in the
// fold; its recorded effects (retrylab.effects), which make an attempt
// whose outcome is unknown one that acted (◆), so a success.
//
// A POSSIBLE duplicate needs more: an attempt whose outcome is unknown (a
// timeout, a crash, an error that does not say it came before the effect)
// followed by another of the same effect that succeeded, is unknown too or
// is in flight (no answer, its worker not dead), with another idempotency
// key or none; or one that succeeded followed by one in flight. The fast path grades it as the
// audit does, on each effect's attempts in the order they started
// (repeatsUnknown); two of them that started at the same instant, whose
// order would be the fold's walk, are left to the fold.
//
// Where the spans say something this does not model, the answer is left
// to the translation and the fold (sure is false): traces of the
// execution's tool calls and crashes some numbered and some not, or two
// of them numbered alike (their runs would not be one a trace), a trace
// numbered twice otherwise; two attempts of one call under one number
// (the fold keys attempts by call and number); a tool span that ends
// before it starts (its answer would come before its start); an attempt
// both ◆ and deduplicated of a side-effecting tool (audit.SucceededTwice);
// two calls of one id, two tool spans that sort as one (same times and
// span id), a tool name holding a NUL byte.
// TestQuickFlagMatchesTheAudit compares the two on many generated traces,
// TestQuickFlagMatchesTheAuditOnOwnExports on retrylab's own exports.

// flagScratch is the fast path's memory, used again from one execution to
// the next. It is for one goroutine.
type flagScratch struct {
	flat    []flagSpan
	order   []*flagSpan
	canon   map[argsRef]string
	byID    map[string]int
	bySig   map[sigKey]int
	ids     map[string]bool
	calls   []flagCall
	acted   []actedAttempt
	keys    []string
	effect  effects
	runs    map[string]flagRun
	numbers map[int32]bool
	tried   map[[2]int]bool
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
	attempts   int    // its attempts so far
}

// flagRun is what the fast path learns of a trace (a run) from its root
// spans and tool spans.
type flagRun struct {
	number  int32 // its root's retrylab.run, 0 for none
	crashed bool  // a root span of it says its worker died
	crash   int64 // when the latest of those ended
	tools   bool  // it holds tool spans the fast path groups
}

// actedAttempt is a side-effecting attempt that succeeded, or whose
// outcome is unknown (ok false): the effect it is an attempt of, the
// idempotency key it carried and when it started.
type actedAttempt struct {
	tool, args, key string
	start           int64
	ok              bool
	// inflight: it never had an answer and its worker did not die: still
	// running, it may act (neither ok nor unknown).
	inflight bool
}

// flagSpan is what the fast path reads of a tool span, or of a root span
// that numbers its run or records its worker's death (or both, of a root
// that is a tool span): a few strings of it, not the span and its
// attributes, so that an import can keep it for many spans (keptSpans)
// for little memory.
type flagSpan struct {
	trace, span, parent string
	start, end          int64
	tool                string
	args                argsRef // as argsAttr has them
	callID, key         string
	number              int32 // retrylab.attempt, with flagNumbered
	run                 int32 // a root's retrylab.run (> 0), else 0
	flags               uint8
	state               attemptState // a tool span's
}

// The flags of a flagSpan.
const (
	flagTool     uint8 = 1 << iota // a tool span the fast path groups into calls
	flagCrashed                    // a root span whose worker died (retrylab.run.crashed)
	flagExported                   // it carries retrylab.attempt
	flagNumbered                   // ... and number holds it, parsed
)

// attemptState is what an attempt's span says of whether the audit counts
// it as succeeded (audit.SucceededTwice's keys).
type attemptState uint8

const (
	attemptFailed attemptState = iota // it did not succeed, and did not act (or was deduplicated)
	attemptOK                         // it succeeded, or acted though its caller never heard (◆)
	// attemptOKIfCrashed: it never had an answer and has recorded
	// effects: ◆, so a success, when its run's worker died at or after
	// its start (the fold then marks it crashed, its outcome unknown).
	attemptOKIfCrashed
	// attemptToFold: ◆ or unknown, and deduplicated, which the audit
	// grades by the order of the attempts: left to the fold.
	attemptToFold
	// attemptUnknown: its outcome is unknown (a timeout, a cancellation
	// without recorded effects; an error that does not say it came
	// before the effect).
	attemptUnknown
	// attemptUnknownIfCrashed: it never had an answer and has no
	// recorded effects: unknown when its run's worker died at or after
	// its start (else it is still running: in flight, as with
	// attemptOKIfCrashed).
	attemptUnknownIfCrashed
)

// flagSpanOf is what the fast path reads of s (role: its role): use says
// the fast path needs it (a tool span it groups into calls, a root span
// that numbers its run or records its worker's death), and sure is false
// when s alone leaves the answer to the translation and the fold.
func flagSpanOf(s *Span, role Role) (f flagSpan, use, sure bool) {
	if s.ParentID == "" {
		// retrylab's own export numbers its runs and records its
		// workers' deaths, which the fold turns into unknown outcomes.
		if n, err := atoi(s.Attrs.Get("retrylab.run")); err == nil && n > 0 {
			if n > math.MaxInt32 {
				return f, false, false
			}
			f.run, use = int32(n), true
		}
		if s.Attrs.Get("retrylab.run.crashed") == "true" {
			f.flags |= flagCrashed
			use = true
		}
		if use {
			f.trace, f.span, f.start, f.end = s.TraceID, s.SpanID, s.Start, s.End
		}
	}
	if role != RoleTool || s.Attrs.Get("retrylab.replay") == "true" {
		return f, use, true
	}
	if v, ok := s.Attrs.Lookup("retrylab.attempt"); ok {
		f.flags |= flagExported
		if n, err := atoi(v); err == nil {
			if n < math.MinInt32 || n > math.MaxInt32 {
				return f, false, false
			}
			f.number = int32(n)
			f.flags |= flagNumbered
		}
	}
	k, v := s.argsAttr()
	f.trace, f.span, f.parent, f.start, f.end = s.TraceID, s.SpanID, s.ParentID, s.Start, s.End
	f.tool, f.args, f.callID, f.key = s.Tool(), argsRef{k, v}, s.CallID(), s.Key()
	f.flags |= flagTool
	f.state = attemptStateOf(s)
	return f, true, true
}

func newFlagScratch() *flagScratch {
	return &flagScratch{canon: map[argsRef]string{}, byID: map[string]int{}, bySig: map[sigKey]int{},
		ids: map[string]bool{}, effect: effects{}, runs: map[string]flagRun{}, numbers: map[int32]bool{},
		tried: map[[2]int]bool{}}
}

// flagReads says whether the fast path reads span s (role: its role): the
// roots, for what they say of runs, and every tool span, side-effecting or
// not, since a read can share a call with a send.
func flagReads(s *Span, role Role) bool { return role == RoleTool || s.ParentID == "" }

// verdict is audit.Verdict of one execution whose spans (at least those
// flagReads keeps; others are skipped) are spans, in any order: Duplicate,
// Possible or nothing; sure is false when the answer must come from the
// translation and the fold instead (verdictOf).
func (sc *flagScratch) verdict(spans []Span) (v audit.Grade, sure bool) {
	flat := sc.flat[:0]
	defer func() {
		clear(flat)
		sc.flat = flat[:0]
	}()
	for i := range spans {
		f, use, ok := flagSpanOf(&spans[i], spans[i].Role())
		if !ok {
			return "", false
		}
		if use {
			flat = append(flat, f)
		}
	}
	return sc.verdictOf(flat)
}

// verdictOf is verdict on what flagSpanOf made of an execution's spans:
// those it said to use, all of them sure.
func (sc *flagScratch) verdictOf(spans []flagSpan) (v audit.Grade, sure bool) {
	order := sc.order[:0]
	defer func() {
		clear(order)
		sc.order = order[:0]
		clear(sc.byID)
		clear(sc.bySig)
		clear(sc.ids)
		clear(sc.calls)
		sc.calls = sc.calls[:0]
		clear(sc.acted)
		sc.acted = sc.acted[:0]
		clear(sc.runs)
		clear(sc.numbers)
		clear(sc.tried)
		if len(sc.canon) > 1024 {
			clear(sc.canon) // arguments repeat within an execution, seldom across
		}
	}()
	roots, exported := false, false
	for i := range spans {
		s := &spans[i]
		if s.flags&flagTool != 0 {
			if s.end < s.start {
				return "", false // its answer would come before its start
			}
			order = append(order, s)
			exported = exported || s.flags&flagExported != 0
		}
		roots = roots || s.run > 0 || s.flags&flagCrashed != 0
	}
	if roots && !sc.runsOf(spans) {
		return "", false
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
			return "", false // their order would be the input's
		}
	}
	for _, s := range order {
		tool := s.tool
		if strings.IndexByte(tool, 0) >= 0 {
			return "", false // the audit's group keys join tool and arguments with a NUL
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
		if c < 0 && s.flags&flagExported == 0 {
			// retrylab's own export names its calls exactly: its
			// attempts are not grouped by signature.
			if c, ok = sc.bySig[sig]; !ok {
				c = -1
			}
		}
		if c < 0 {
			id := firstNonEmpty(cid, s.span)
			if sc.ids[id] {
				return "", false // two calls of one id: their attempts would collide in the fold
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
		call.attempts++
		if exported {
			// The fold keys attempts by call and number: the span's
			// own, else its place among the call's attempts.
			n := call.attempts
			if s.flags&flagNumbered != 0 {
				n = int(s.number)
			}
			if sc.tried[[2]int{c, n}] {
				return "", false // two attempts of one number: one would stand for both
			}
			sc.tried[[2]int{c, n}] = true
		}
		if call.trace == "" || call.trace != s.trace {
			// The call is scheduled (again) in this run, with this span's
			// tool and arguments: the audit groups its attempts by those.
			call.trace, call.tool, call.args = s.trace, tool, args
			call.effect = sc.effect.tool(tool)
		}
		if !call.effect {
			continue
		}
		ok, unknown, inflight := false, false, false
		switch s.state {
		case attemptOK:
			ok = true
		case attemptOKIfCrashed, attemptUnknownIfCrashed:
			// The fold crashes the attempts its run left open when a root
			// span of the run says its worker died, at that span's end:
			// the latest one's, at or after this attempt's start. One
			// with recorded effects then acted (◆), one without has an
			// unknown outcome.
			r := sc.runs[s.trace]
			crashed := r.crashed && r.crash >= s.start
			ok, unknown = crashed && s.state == attemptOKIfCrashed, crashed && s.state == attemptUnknownIfCrashed
			inflight = !crashed
		case attemptUnknown:
			unknown = true
		case attemptToFold:
			return "", false
		}
		if ok || unknown || inflight {
			args := call.args
			if audit.ArgsUnknown(args) {
				// The audit groups a call without arguments with no other.
				args = "\x01" + strconv.Itoa(c)
			}
			sc.acted = append(sc.acted, actedAttempt{tool: call.tool, args: args, key: s.key, start: s.start, ok: ok, inflight: inflight})
		}
	}
	// The audit's groups: one effect (tool and arguments) each, its
	// attempts in the order they started.
	acted := sc.acted
	slices.SortFunc(acted, func(a, b actedAttempt) int {
		if c := strings.Compare(a.tool, b.tool); c != 0 {
			return c
		}
		if c := strings.Compare(a.args, b.args); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	possible := false
	for i := 0; i < len(acted); {
		j := i + 1
		for j < len(acted) && acted[j].tool == acted[i].tool && acted[j].args == acted[i].args {
			j++
		}
		group := acted[i:j]
		keys := sc.keys[:0]
		for _, a := range group {
			if a.ok {
				keys = append(keys, a.key)
			}
		}
		sc.keys = keys
		dup, allOK := audit.SucceededTwice(keys), len(keys) == len(group)
		clear(keys)
		if dup {
			return audit.Duplicate, true
		}
		if allOK {
			i = j
			continue // no unknown outcome: nothing possible, in any order
		}
		for k := 1; k < len(group); k++ {
			if group[k].start == group[k-1].start {
				return "", false // the fold's order of the two is its walk's
			}
		}
		possible = possible || repeatsUnknown(group)
		i = j
	}
	if possible {
		return audit.Possible, true
	}
	return "", true
}

// repeatsUnknown says whether the audit grades POSSIBLE one group of
// attempts of one effect, in the order they started, that holds no
// duplicate: an attempt that succeeded, whose outcome is unknown or that
// is in flight comes after one whose outcome is unknown and whose
// idempotency key is not its own (or it has none), or one in flight comes
// after one that succeeded, its key not the in-flight one's.
func repeatsUnknown(group []actedAttempt) bool {
	unknown, ok := keyFirsts{-1, -1}, keyFirsts{-1, -1}
	for j, a := range group {
		if unknown.other(group, a.key) >= 0 || (a.inflight && ok.other(group, a.key) >= 0) {
			return true
		}
		switch {
		case a.ok:
			ok.note(group, j)
		case !a.inflight:
			unknown.note(group, j)
		}
	}
	return false
}

// keyFirsts are the first of some attempts of a group, and the first of
// them whose idempotency key differs from its (-1: none yet).
type keyFirsts struct{ first, second int }

// note takes in attempt j of group.
func (f *keyFirsts) note(group []actedAttempt, j int) {
	switch {
	case f.first < 0:
		f.first = j
	case f.second < 0 && group[j].key != group[f.first].key:
		f.second = j
	}
}

// other is the first attempt noted whose key is not key ("" matches none), or -1.
func (f keyFirsts) other(group []actedAttempt, key string) int {
	if f.first < 0 || key == "" || group[f.first].key != key {
		return f.first
	}
	return f.second
}

// runsOf fills sc.runs with what spans (flagSpanOf's, of one execution
// whose roots number runs or record crashes) say of their traces, and
// says whether the traces that matter, those of tool spans and of
// crashes, are runs of their own: all numbered, each its own number, or
// none numbered (the translation then numbers each trace in turn). A
// trace of neither does not matter: its run, shared or not, holds no
// attempt and kills none.
func (sc *flagScratch) runsOf(spans []flagSpan) bool {
	for i := range spans {
		s := &spans[i]
		r := sc.runs[s.trace]
		if s.run > 0 {
			if r.number != 0 && r.number != s.run {
				return false // the translation takes the latest root's number
			}
			r.number = s.run
		}
		if s.flags&flagCrashed != 0 {
			if !r.crashed || s.end > r.crash {
				r.crash = s.end
			}
			r.crashed = true
		}
		r.tools = r.tools || s.flags&flagTool != 0
		sc.runs[s.trace] = r
	}
	numbered, plain := false, false
	for _, r := range sc.runs {
		if !r.tools && !r.crashed {
			continue
		}
		if r.number == 0 {
			plain = true
			continue
		}
		if sc.numbers[r.number] {
			return false
		}
		sc.numbers[r.number] = true
		numbered = true
	}
	return !(numbered && plain)
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

// attemptStateOf says how the audit counts tool span s as an attempt:
// succeeded when it finished (retrylab's export marks one that never did,
// "none"), OK, and was not deduplicated, or when its caller never learnt
// its outcome (a timeout, a cancellation; or no answer at all, and its
// worker died after it started) and its effects are recorded (◆); unknown
// when its caller never learnt its outcome and no effect is recorded, or
// it failed with an error that does not say it came before its effect (a
// 5xx, an exception; not a 4xx: audit's mayHaveActed).
func attemptStateOf(s *Span) attemptState {
	o := s.Attrs.Get("retrylab.outcome")
	dedup := s.Attrs.Get("retrylab.deduplicated") == "true"
	if o == "none" {
		switch {
		case dedup:
			return attemptToFold
		case len(recordedEffects(s)) > 0:
			return attemptOKIfCrashed
		}
		return attemptUnknownIfCrashed
	}
	outcome := trace.Outcome(o)
	if o == "" {
		outcome, _ = s.outcome()
	}
	switch {
	case outcome == trace.OutcomeTimeout || outcome == trace.OutcomeCancelled:
		switch {
		case dedup:
			return attemptToFold
		case s.Attrs.Get("retrylab.effects") == "" || len(recordedEffects(s)) == 0:
			return attemptUnknown
		}
		return attemptOK
	case outcome == trace.OutcomeOK && !dedup:
		return attemptOK
	case outcome == trace.OutcomeError && !dedup:
		return attemptUnknown
	}
	return attemptFailed
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
