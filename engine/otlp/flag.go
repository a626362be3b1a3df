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
	order  []*Span
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
		s := &spans[i]
		if s.ParentID == "" {
			// retrylab's own export numbers its runs and records its
			// workers' deaths, which the fold turns into unknown outcomes.
			if _, ok := s.Attrs["retrylab.run"]; ok || s.Attrs["retrylab.run.crashed"] == "true" {
				return false, false
			}
		}
		if s.Role() != RoleTool || s.Attrs["retrylab.replay"] == "true" {
			continue
		}
		if _, ok := s.Attrs["retrylab.attempt"]; ok || s.Attrs["retrylab.effects"] != "" {
			return false, false
		}
		order = append(order, s)
	}
	// The translation's order: start, end (latest first), span id.
	slices.SortStableFunc(order, func(a, b *Span) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(b.End, a.End); c != 0 {
			return c
		}
		return strings.Compare(a.SpanID, b.SpanID)
	})
	for i := 1; i < len(order); i++ {
		if a, b := order[i-1], order[i]; a.Start == b.Start && a.End == b.End && a.SpanID == b.SpanID {
			return false, false // their order would be the input's
		}
	}
	for _, s := range order {
		tool := s.Tool()
		if strings.IndexByte(tool, 0) >= 0 {
			return false, false // the audit's group keys join tool and arguments with a NUL
		}
		args := sc.args(s)
		cid := s.CallID()
		c, ok := -1, false
		if cid != "" {
			if c, ok = sc.byID[cid]; !ok {
				c = -1
			}
		}
		sig := sigKey{s.ParentID, tool, args}
		if c < 0 {
			if c, ok = sc.bySig[sig]; !ok {
				c = -1
			}
		}
		if c < 0 {
			id := firstNonEmpty(cid, s.SpanID)
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
		if call.trace == "" || call.trace != s.TraceID {
			// The call is scheduled (again) in this run, with this span's
			// tool and arguments: the audit groups its attempts by those.
			call.trace, call.tool, call.args = s.TraceID, tool, args
			call.effect = sc.effect.tool(tool)
		}
		if call.effect && succeeded(s) {
			args := call.args
			if audit.ArgsUnknown(args) {
				// The audit groups a call without arguments with no other.
				args = "\x01" + strconv.Itoa(c)
			}
			sc.oks = append(sc.oks, okAttempt{tool: call.tool, args: args, key: s.Key()})
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

// args are s's canonical arguments as the translation has them (its args),
// as a string, computed once for each value an execution's spans carry.
func (sc *flagScratch) args(s *Span) string {
	k, v := s.argsAttr()
	if k == "" {
		return ""
	}
	ref := argsRef{k, v}
	if a, ok := sc.canon[ref]; ok {
		return a
	}
	a := string(canonical(s.Args()))
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
