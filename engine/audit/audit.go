// Package audit infers duplicated side effects from folded traces, where no
// simulated provider saw the effects: an outbox for traces retrylab did not
// run. Side-effecting tool calls (chosen by name) are grouped by tool and
// canonical arguments, within an execution and across executions close in
// time, and each group with more than one attempt that may have acted is
// graded:
//
//   - duplicate: two attempts succeeded without a shared idempotency key;
//   - possible: an attempt whose outcome the caller never learnt (timeout,
//     cancellation, a dead worker) was followed by another, or one that
//     failed, not known to have failed before it acted (as a rejection, a
//     4xx or a validation error, is), was repeated; or an attempt that
//     acted was followed by one still in flight (started, with no answer
//     yet: a history cut while it runs), which may act too;
//   - absorbed: the repeat carried the same idempotency key (or the provider
//     answered it from its key store), so it should have done nothing new.
//
// Real frameworks give each agent-level retry a new tool-call id, so ids are
// never trusted to group calls: the arguments are. A call whose
// arguments the trace does not hold is an effect of its own: two calls of
// one tool with unknown arguments may well be two different emails. Where
// the source says its ids do tell calls apart (a Temporal activity id is
// kept by every retry of the activity, so two ids are two calls), the
// finding's words say whether the repeats are attempts of one call or
// separate calls with the same arguments (a deliberate loop, or a workflow
// that asked twice).
//
// For the histories retrylab records itself, where the simulated mail
// provider reports each delivery, Deliveries holds the plainer rule the
// execution record's Duplicates flag states: one intent's mail delivered
// twice.
package audit

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/trace"
)

// DefaultEffects are the tool-name patterns counted as side effects unless
// the caller says otherwise.
const DefaultEffects = "send_*,charge_*,create_*,post_*,pay_*,book_*,transfer_*,refund_*,submit_*,place_*,delete_*,update_*,write_*,upsert_*"

// readPrefixes name tools that only read; they never count, whatever the
// patterns say.
var readPrefixes = []string{"get_", "list_", "read_", "search_", "fetch_", "find_", "lookup_", "query_", "describe_", "check_"}

// DefaultWindow is how close in time attempts of different executions must
// be to count as repeats of one effect.
const DefaultWindow = 10 * time.Minute

// Grade is how sure a finding is.
type Grade string

// The grades, worst first.
const (
	Duplicate Grade = "duplicate"
	Possible  Grade = "possible"
	Absorbed  Grade = "absorbed"
)

func (g Grade) rank() int {
	switch g {
	case Duplicate:
		return 3
	case Possible:
		return 2
	case Absorbed:
		return 1
	}
	return 0
}

// Options choose what counts.
type Options struct {
	// Effects are tool-name patterns (path.Match syntax, case-insensitive).
	Effects []string
	// Window bounds the time between repeats in different executions.
	Window time.Duration
}

// ParseEffects splits a comma-separated pattern list and checks each.
func ParseEffects(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("effects pattern %q: %w", p, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("effects: no patterns in %q", s)
	}
	return out, nil
}

// SideEffecting reports whether a tool counts as a side effect.
// Names are matched as written (lowercased) and in snake case, so the
// patterns reach CamelCase tool names too (Temporal activity types such as
// SendEmail or sendEmail match send_*).
func (o Options) SideEffecting(tool string) bool {
	for _, name := range []string{strings.ToLower(tool), snakeCase(tool)} {
		for _, p := range readPrefixes {
			if strings.HasPrefix(name, p) {
				return false
			}
		}
	}
	for _, name := range []string{strings.ToLower(tool), snakeCase(tool)} {
		for _, p := range o.Effects {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// snakeCase is SendEmail or sendEmail as send_email (HTTPCall: http_call).
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		lower := unicode.ToLower(r)
		if unicode.IsUpper(r) && i > 0 && rs[i-1] != '_' &&
			(unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(lower)
	}
	return b.String()
}

// Evidence is one attempt of a finding.
type Evidence struct {
	Execution string `json:"execution"`
	Call      string `json:"call"`
	Attempt   int    `json:"attempt"`
	// NotKept > 0: the evidence stands for attempts the source did not
	// keep, Attempt-NotKept+1 .. Attempt (Outcome "not-kept").
	NotKept int       `json:"not_kept,omitempty"`
	Ref     string    `json:"ref"` // the span id (or history event) of the attempt
	Started time.Time `json:"started"`
	// Outcome is the fold's word for its mark ("ok", "timeout", "in
	// flight", ...), "not-kept" for attempts the source did not keep.
	Outcome string `json:"outcome"`
	Mark    string `json:"mark"`
	Key     string `json:"key,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Finding is one effect that may have happened more than once.
type Finding struct {
	Grade Grade           `json:"grade"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
	// Why says which attempts make the grade, in words.
	Why      string     `json:"why"`
	Attempts []Evidence `json:"attempts"`
}

// Report is an audit of some executions.
type Report struct {
	Effects    []string  `json:"effects"`
	Executions int       `json:"executions"`
	Attempts   int       `json:"side_effecting_attempts"`
	Findings   []Finding `json:"findings"`
	Counts     Counts    `json:"counts"`
}

// Counts are the findings by grade.
type Counts struct {
	Duplicate int `json:"duplicate"`
	Possible  int `json:"possible"`
	Absorbed  int `json:"absorbed"`
}

// attempt is one side-effecting attempt with what grading needs, copied
// out of its trace so the trace can go.
type attempt struct {
	exec, args string
	a          seen
}

// seen is what the audit keeps of an attempt.
type seen struct {
	Call, Tool, Ref, Key, Error string
	N, NotKept                  int
	Started                     time.Time
	Deduplicated, ok, unknown   bool
	failed                      bool // unknown: it failed, perhaps after it acted
	delivered                   bool // ok, though its caller saw no answer (◆)
	// inflight: started, no answer yet, its worker not known dead: it may
	// act, so repeating an attempt that acted is possible already.
	inflight bool
	// ownID: the call's id is its own, kept by its retries and by no other
	// call (distinctIDs), so attempts of other ids are separate calls.
	ownID bool
	Mark  trace.Mark
}

// distinctIDs are the call attributes by which a source says its call ids
// tell calls apart: Temporal's activity id (local activities too) and
// child workflow id, which every retry keeps and no other call shares.
var distinctIDs = []string{"temporal.activity_id", "temporal.workflow_id"}

// ownID says whether a call's id tells it apart from other calls.
func ownID(c *trace.Call) bool {
	for _, k := range distinctIDs {
		if c.Attrs[k] != "" {
			return true
		}
	}
	return false
}

// Auditor gathers side-effecting attempts one folded execution at a time,
// keeping only what grading needs, so executions can be read one by one.
type Auditor struct {
	opts       Options
	groups     map[string][]attempt
	order      []string
	executions int
	attempts   int
	effect     map[string]bool // tool -> side-effecting (opts.SideEffecting), asked once
}

// NewAuditor starts an audit.
func NewAuditor(opts Options) *Auditor {
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	return &Auditor{opts: opts, groups: map[string][]attempt{}, effect: map[string]bool{}}
}

// Add takes in one folded execution.
func (au *Auditor) Add(t *trace.Trace) { au.add(t, false) }

// AddCanonical is Add for an execution whose calls' arguments are already
// retrylab's canonical JSON, or are not JSON at all (as the OpenTelemetry
// translation gives them: it canonicalises each call's arguments and keeps
// those that do not parse as they are). Canonicalising them again would
// give the same bytes, so it is skipped: it parses and re-encodes them.
func (au *Auditor) AddCanonical(t *trace.Trace) { au.add(t, true) }

func (au *Auditor) add(t *trace.Trace, canonicalArgs bool) {
	au.executions++
	for _, r := range t.Runs {
		walk(r.Nodes, func(c *trace.Call) {
			effect, ok := au.effect[c.Tool]
			if !ok {
				effect = au.opts.SideEffecting(c.Tool)
				au.effect[c.Tool] = effect
			}
			if !effect {
				return
			}
			args := c.Args
			if !canonicalArgs {
				args = canonical(args)
			}
			argStr := string(args)
			own := ownID(c)
			k := c.Tool + "\x00" + argStr
			if ArgsUnknown(argStr) {
				// Unknown arguments group nothing: the call is its own effect.
				k = c.Tool + "\x00\x01" + t.Execution + "\x00" + c.Call
			}
			for _, a := range c.Attempts {
				if a.NotKept > 0 && !a.Unknown() {
					// Attempts a source did not keep count only when their
					// last failure says they may have acted (a timeout:
					// Temporal's start-to-close or heartbeat).
					continue
				}
				au.attempts++
				if _, ok := au.groups[k]; !ok {
					au.order = append(au.order, k)
				}
				// An attempt its caller never heard back from, but whose
				// effect the trace records (◆), acted for certain.
				delivered := a.Ambiguous()
				failed := mayHaveActed(a)
				unknown := (a.Unknown() || failed) && !delivered
				au.groups[k] = append(au.groups[k], attempt{exec: t.Execution, args: argStr, a: seen{
					Call: a.Call, Tool: c.Tool, Ref: a.Ref, Key: a.Key, Error: a.Error, N: a.N, NotKept: a.NotKept, Started: a.Started,
					Deduplicated: a.Deduplicated, unknown: unknown, failed: failed, delivered: delivered, ownID: own, Mark: a.Mark(),
					inflight: inFlight(a),
					ok:       delivered || (!unknown && a.Finished && a.Outcome == trace.OutcomeOK && !a.Deduplicated)}})
			}
		})
	}
}

// ArgsUnknown says whether a call's arguments (canonical JSON, as the
// audit groups by) are unknown: the trace holds none.
func ArgsUnknown(args string) bool { return args == "" || args == "null" }

// mayHaveActed says whether a finished attempt failed in a way that does
// not say it failed before its effect: a plain error (a 5xx, an exception,
// a framework's "error running tool"), not a rejection, conflict or
// mismatch (4xx answers, validation errors: refused before acting), nor a
// timeout or cancellation (Unknown already).
func mayHaveActed(a *trace.Attempt) bool {
	return a.Finished && a.Outcome == trace.OutcomeError && !a.Deduplicated
}

// inFlight says whether an attempt has started and has no answer yet, its
// worker not known to have died: it may still act.
func inFlight(a *trace.Attempt) bool { return !a.Finished && !a.Crashed && a.NotKept == 0 }

// Run audits folded traces.
func Run(traces []*trace.Trace, opts Options) Report {
	au := NewAuditor(opts)
	for _, t := range traces {
		au.Add(t)
	}
	return au.Report()
}

// Report grades what was added.
func (au *Auditor) Report() Report {
	rep := Report{Effects: au.opts.Effects, Executions: au.executions, Attempts: au.attempts, Findings: []Finding{}}
	for _, k := range au.order {
		g := au.groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].a.Started.Before(g[j].a.Started) })
		for _, cl := range clusters(g, au.opts.Window) {
			if f, ok := grade(cl, true); ok {
				rep.Findings = append(rep.Findings, f)
			}
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Grade.rank() != b.Grade.rank() {
			return a.Grade.rank() > b.Grade.rank()
		}
		return a.Attempts[0].Started.Before(b.Attempts[0].Started)
	})
	for _, f := range rep.Findings {
		switch f.Grade {
		case Duplicate:
			rep.Counts.Duplicate++
		case Possible:
			rep.Counts.Possible++
		case Absorbed:
			rep.Counts.Absorbed++
		}
	}
	return rep
}

// canonical is retrylab's canonical JSON of a call's arguments, so the
// same arguments spaced or ordered otherwise group together.
func canonical(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if c, err := idemkey.Canonical(args); err == nil {
		return c
	}
	return args
}

// walk visits the calls under nodes.
func walk(nodes []trace.Node, fn func(*trace.Call)) {
	for _, n := range nodes {
		switch x := n.(type) {
		case *trace.Call:
			fn(x)
		case *trace.Turn:
			walk(x.Nodes, fn)
		}
	}
}

// clusters splits a time-ordered group where attempts of different
// executions lie more than window apart.
func clusters(g []attempt, window time.Duration) [][]attempt {
	var out [][]attempt
	var cur []attempt
	for _, a := range g {
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			if prev.exec != a.exec && a.a.Started.Sub(prev.a.Started) > window {
				out = append(out, cur)
				cur = nil
			}
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// The reasons a finding gives for its grade.
const (
	whyKey       = "the repeat carried the same idempotency key"
	whyDelivered = "two attempts took effect (one whose caller saw no answer, ◆)"
	whyTwoOK     = "two attempts succeeded"
	whyManyOK    = "%d attempts succeeded"
	whyUnknown   = "an attempt with an unknown outcome was followed by another"
	whyFailed    = "an attempt that failed, perhaps after it acted, was repeated"
	// Where call ids tell calls apart (seen.ownID):
	whyOneCallOK   = "two attempts of one call succeeded"
	whySeparateOK  = "%d separate calls with the same arguments succeeded"
	whySeparateUnk = "a call whose outcome is unknown was followed by a separate call with the same arguments"
	// When the later attempt of the pair is in flight (seen.inflight):
	whyOKThenInFlight = "an attempt succeeded and was repeated"
	inFlightWords     = "; the repeat is in flight"
)

// succeededWords is whyTwoOK with the number of attempts of cl that
// succeeded when more than two did: "two attempts succeeded" read as an
// undercount over a cluster of seven.
func succeededWords(cl []attempt) string {
	n := 0
	for _, x := range cl {
		if x.a.ok && !x.a.Deduplicated {
			n++
		}
	}
	if n <= 2 {
		return whyTwoOK
	}
	return fmt.Sprintf(whyManyOK, n)
}

// sameCall says whether two attempts are of one call.
func sameCall(a, b attempt) bool { return a.exec == b.exec && a.a.Call == b.a.Call }

// callWords is a reason in the words of a source whose call ids tell calls
// apart, when both attempts of the pair that made it (i before j) come
// from one: attempts of one call, or separate calls (counted among those
// that succeeded); the reason as it was otherwise.
func callWords(cl []attempt, why string, i, j int) string {
	if i < 0 || !cl[i].a.ownID || !cl[j].a.ownID {
		return why
	}
	switch why {
	case whyTwoOK:
		if sameCall(cl[i], cl[j]) {
			return whyOneCallOK
		}
		calls := map[[2]string]bool{}
		for _, x := range cl {
			if x.a.ok {
				calls[[2]string{x.exec, x.a.Call}] = true
			}
		}
		return fmt.Sprintf(whySeparateOK, len(calls))
	case whyUnknown:
		if !sameCall(cl[i], cl[j]) {
			return whySeparateUnk
		}
	}
	return why
}

// grade finds the worst pair in a cluster: an earlier attempt that may have
// acted, and a later one. A pair (i before j) is graded when i acted (it
// succeeded, or its outcome is unknown) and j did not definitely fail:
// absorbed when j was deduplicated or carried i's idempotency key, else
// duplicate when both succeeded, else possible when i's outcome is
// unknown. The finding's grade is the worst pair's, its reason the first
// such pair's (by later attempt, then earlier), its evidence every attempt
// in a graded pair.
//
// It takes one pass each way, not one per pair: one call retried 30 000
// times is one cluster, and pairs would be 450 million (BENCHMARKS.md, 8f).
// Forward, each later attempt j is graded against what the attempts before
// it hold: which keys acted, the first that succeeded (and the first
// whose key differs from its), the same for the unknown ones. Backward,
// each earlier attempt i learns whether a later one pairs with it.
//
// Without evidence, the finding holds only its grade and reason.
func grade(cl []attempt, evidence bool) (Finding, bool) {
	best := Grade("")
	why := ""
	whyI, whyJ := -1, -1 // the pair that gave the reason
	involved := make([]bool, len(cl))
	// first attempts before j that acted, with a key other than the first's
	type firsts struct{ first, other int }
	ok, unknown := firsts{-1, -1}, firsts{-1, -1}
	note := func(f *firsts, i int) {
		switch {
		case f.first < 0:
			f.first = i
		case f.other < 0 && cl[i].a.Key != cl[f.first].a.Key:
			f.other = i
		}
	}
	// otherKey is the first attempt of f whose key is not key ("" matches none).
	otherKey := func(f firsts, key string) int {
		if f.first < 0 || key == "" || cl[f.first].a.Key != key {
			return f.first
		}
		return f.other
	}
	actedKeys := map[string]bool{} // keys of attempts that acted, so far
	acted := false
	for j := range cl {
		b := cl[j].a
		if j > 0 && (b.ok || b.unknown || b.Deduplicated || b.inflight) {
			g, w, pair := Grade(""), "", -1
			switch {
			case b.Deduplicated && acted, b.Key != "" && actedKeys[b.Key]:
				g, w = Absorbed, whyKey
				if b.Key != "" {
					w += " (" + b.Key + ")"
				}
			}
			if !b.Deduplicated {
				if i := otherKey(ok, b.Key); b.ok && i >= 0 {
					g, w, pair = Duplicate, whyTwoOK, i
					if cl[i].a.delivered || b.delivered {
						w = whyDelivered
					}
				} else if i := otherKey(unknown, b.Key); g.rank() < Possible.rank() && (i >= 0 || b.inflight) {
					// One in flight pairs with the first that acted.
					if o := otherKey(ok, b.Key); b.inflight && o >= 0 && (i < 0 || o < i) {
						g, w, pair = Possible, whyOKThenInFlight, o
					} else if i >= 0 {
						g, w, pair = Possible, whyUnknown, i
						if cl[i].a.failed {
							w = whyFailed
						}
					}
				}
			}
			if g != "" {
				involved[j] = true
				if g.rank() > best.rank() {
					best, why, whyI, whyJ = g, w, pair, j
				}
			}
		}
		if b.ok || b.unknown {
			acted = true
			if b.Key != "" {
				actedKeys[b.Key] = true
			}
			if b.ok {
				note(&ok, j)
			} else {
				note(&unknown, j)
			}
		}
	}
	if best == "" {
		return Finding{}, false
	}
	why = callWords(cl, why, whyI, whyJ)
	if why == whyTwoOK {
		why = succeededWords(cl)
	}
	if cl[whyJ].a.inflight {
		why += inFlightWords
	}
	if !evidence {
		return Finding{Grade: best, Why: why}, true
	}
	// Backward: an earlier attempt with an unknown outcome pairs with any
	// later one that did not definitely fail; one that succeeded, with a
	// later success, a deduplicated repeat or one carrying its key.
	later, laterOK, laterDedup, laterInFlight := false, false, false, false
	laterKeys := map[string]bool{}
	for i := len(cl) - 1; i >= 0; i-- {
		a := cl[i].a
		switch {
		case a.unknown && later, a.ok && (laterOK || laterDedup || laterInFlight || (a.Key != "" && laterKeys[a.Key])):
			involved[i] = true
		}
		if a.ok || a.unknown || a.Deduplicated || a.inflight {
			later = true
			laterInFlight = laterInFlight || a.inflight
			laterOK = laterOK || a.ok
			laterDedup = laterDedup || a.Deduplicated
			if a.Key != "" {
				laterKeys[a.Key] = true
			}
		}
	}
	f := Finding{Grade: best, Tool: cl[0].a.Tool, Args: json.RawMessage(cl[0].args), Why: why}
	if len(f.Args) == 0 {
		f.Args = json.RawMessage("null")
	}
	for i, x := range cl {
		if !involved[i] {
			continue
		}
		f.Attempts = append(f.Attempts, evidenceOf(x))
	}
	return f, true
}

// NotKeptOutcome is the outcome evidence gives attempts the source did
// not keep: one word, as "ok" and "timeout" are.
const NotKeptOutcome = "not-kept"

// evidenceOf is the evidence of one attempt of a finding.
func evidenceOf(x attempt) Evidence {
	m := x.a.Mark
	e := Evidence{Execution: x.exec, Call: x.a.Call, Attempt: x.a.N, NotKept: x.a.NotKept, Ref: x.a.Ref,
		Started: x.a.Started, Outcome: m.Word(), Mark: m.Glyph(), Key: x.a.Key, Error: x.a.Error}
	if e.NotKept > 0 {
		e.Outcome = NotKeptOutcome
	}
	return e
}

// Which are the attempt's numbers in words: "attempt 3", "attempts 1-2".
func (e Evidence) Which() string { return trace.AttemptWords(e.Attempt, e.NotKept) }

// defaultPatterns are DefaultEffects parsed, once; never changed.
var defaultPatterns, _ = ParseEffects(DefaultEffects)

// defaultOptions are the options of an audit with the default effects.
func defaultOptions() Options { return Options{Effects: defaultPatterns} }

// EffectByDefault reports whether a tool counts as a side effect with the
// default effects: an importer's cheap test of whether an execution needs
// auditing at all.
func EffectByDefault(tool string) bool { return defaultOptions().SideEffecting(tool) }

// Verdict is what the record of an imported execution says of it: the
// worst grade of a finding of the execution audited alone with the default
// effects, Duplicate or Possible, else "" (an absorbed repeat is no mark).
// The explorer's list marks ⚠ a duplicate and ◇ a possible one, and its
// filter finds them by the record's flags.
func Verdict(t *trace.Trace) Grade {
	au := NewAuditor(defaultOptions())
	au.Add(t)
	return au.verdict()
}

// Flags are the flags an execution record keeps for verdict g:
// history.Execution's Duplicates and Possible.
func (g Grade) Flags() (duplicates, possible bool) { return g == Duplicate, g == Possible }

// VerdictCanonical is Verdict for an execution whose calls' arguments are
// already canonical (AddCanonical).
func VerdictCanonical(t *trace.Trace) Grade {
	au := NewAuditor(defaultOptions())
	au.AddCanonical(t)
	return au.verdict()
}

// verdict is the worst grade Report would give, Duplicate or Possible,
// without building the findings' evidence.
func (au *Auditor) verdict() Grade {
	worst := Grade("")
	for _, k := range au.order {
		g := au.groups[k]
		if len(g) < 2 {
			continue // one attempt pairs with none
		}
		sort.SliceStable(g, func(i, j int) bool { return g[i].a.Started.Before(g[j].a.Started) })
		for _, cl := range clusters(g, au.opts.Window) {
			f, ok := grade(cl, false)
			switch {
			case !ok:
			case f.Grade == Duplicate:
				return Duplicate
			case f.Grade == Possible:
				worst = Possible
			}
		}
	}
	return worst
}

// SucceededTwice says whether one execution's attempts of one effect (one
// tool, the same canonical arguments) hold a finding Verdict grades Duplicate,
// given the idempotency keys ("" for none) of those that succeeded: that
// finished OK and were not deduplicated, or whose effect is recorded though
// their caller never heard back (◆). Two of them that do not share a key
// make a duplicate, whatever their order and whatever the attempts that
// did not succeed (TestSucceededTwiceIsTheDuplicateGrade checks it against
// grade). An attempt both ◆ and deduplicated is outside this rule (grade
// then depends on the order): a caller that may see one must fold. An
// importer that knows each attempt's tool, arguments, outcome and key
// without folding the trace grades with it (engine/otlp).
func SucceededTwice(keys []string) bool {
	for _, k := range keys[min(1, len(keys)):] {
		if k == "" || k != keys[0] {
			return true
		}
	}
	return false
}
