// Package diff lines up two executions, folded by engine/trace, call by
// call and attempt by attempt, and says where they part: attempts per call,
// outcomes, deduplication by key, replays from the journal, crashes, and
// what each did to the world ("naive: 2 messages to jordan@acme.dev;
// safe: 1").
//
// The alignment works on the rows of each trace (tool calls, replays, run
// ends) in the order they happened. Rows are matched in three passes, each
// on what the previous left unmatched: the same step id (call id), then
// the same tool and canonical arguments (a retry filed under a new step
// id, an imported trace whose call ids differ), then the same tool in
// order (the n-th unmatched call of a tool on one side beside the n-th of
// that tool on the other, whatever their arguments). Calls of tools the
// other side never called stand alone: a paired row is a call the two
// executions have in common. Each pass is a
// longest-common-subsequence diff of the rows' identities, computed by
// go-udiff's lcs package (a port of the Go tools' Myers diff) over the
// identities interned as runes; this package only says what an identity
// is and what the matched rows have in common.
//
// The package knows nothing of screens: Text, Markdown and the explorer's
// side-by-side view all render a Result, with the glyphs of trace.Mark.
package diff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/trace"
)

// Match says how a row's two sides were paired.
type Match string

// How rows are matched.
const (
	MatchStep     Match = "step"     // the same step (call) id
	MatchArgs     Match = "args"     // the same tool and canonical arguments
	MatchPosition Match = "position" // the same tool, in order: the n-th unmatched call of that tool on each side
	MatchEnd      Match = "end"      // the same kind of run end (a crash, the execution's end)
	MatchNone     Match = ""         // only one side has the row
)

// ItemKind is what a row of one trace is.
type ItemKind string

// The kinds of row.
const (
	KindCall      ItemKind = "call"      // a tool call and its attempts in one run
	KindReplay    ItemKind = "replay"    // a call answered from the journal
	KindCrash     ItemKind = "crash"     // the run's worker died
	KindEnd       ItemKind = "end"       // the execution ended
	KindEscalated ItemKind = "escalated" // an unsafe call's outcome is unknown
	KindDeleted   ItemKind = "deleted"   // a journal record deleted by hand
)

// Attempt is one try of a call as the comparison shows it.
type Attempt struct {
	N            int        `json:"n"`
	Mark         trace.Mark `json:"-"`
	Glyph        string     `json:"mark"`
	Outcome      string     `json:"outcome,omitempty"`
	Status       int        `json:"status,omitempty"`
	Deduplicated bool       `json:"deduplicated,omitempty"`
	Key          string     `json:"key,omitempty"`
	Faults       []string   `json:"faults,omitempty"`
	// Effects counts what the providers did on its behalf; for a trace
	// that recorded no effect (an imported one), 1 when the attempt took
	// effect as the audit infers it (a side-effecting call answered ok,
	// not deduplicated), and Inferred is set.
	Effects  int  `json:"effects"`
	Inferred bool `json:"inferred,omitempty"`
}

// Item is one row of one trace.
type Item struct {
	Kind ItemKind `json:"kind"`
	Run  int      `json:"run"`
	Turn int      `json:"turn,omitempty"`
	Call string   `json:"call,omitempty"`
	Tool string   `json:"tool,omitempty"`
	// Args are the call's arguments in canonical JSON (sorted keys), or as
	// recorded when they are not JSON.
	Args     string    `json:"args,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// Mark is the row's glyph: the last attempt's, ⟲ for a replay, ☠ for a
	// crash, the end's.
	Mark  trace.Mark `json:"-"`
	Glyph string     `json:"mark"`
	// ResultRun is the run whose journal record a replay used.
	ResultRun int    `json:"result_run,omitempty"`
	Text      string `json:"text,omitempty"`
	Seq       uint64 `json:"seq"`
}

// Effects sums what an item's attempts caused.
func (it *Item) Effects() int {
	n := 0
	for _, a := range it.Attempts {
		n += a.Effects
	}
	return n
}

// KeyChange is the first attempt whose idempotency key differs from the
// attempt before it (a key built from the attempt or the time), 0 when
// every attempt carried the same key or none.
func (it *Item) KeyChange() int {
	for i := 1; i < len(it.Attempts); i++ {
		if k, prev := it.Attempts[i].Key, it.Attempts[i-1].Key; k != "" && prev != "" && k != prev {
			return it.Attempts[i].N
		}
	}
	return 0
}

// Row is one line of the comparison: an item of A, of B, or of both.
type Row struct {
	A     *Item `json:"a"`
	B     *Item `json:"b"`
	Match Match `json:"match,omitempty"`
	// Differs is set when the sides differ in what a reader tells apart:
	// attempts, their marks, their effects, or one side missing.
	Differs bool `json:"differs"`
	// Why says how they differ, in a few words ("#2 ✓ vs ↺").
	Why string `json:"why,omitempty"`
}

// Side is one execution of the comparison, summed up.
type Side struct {
	// Label names the side in sentences: the scenario, or the execution id
	// when both sides ran the same scenario.
	Label     string     `json:"label"`
	Execution string     `json:"execution"`
	Scenario  string     `json:"scenario,omitempty"`
	Policy    string     `json:"policy,omitempty"`
	Outcome   trace.Mark `json:"-"`
	Glyph     string     `json:"outcome"`
	Runs      int        `json:"runs"`
	Events    int        `json:"events"`
	Calls     int        `json:"calls"`
	Attempts  int        `json:"attempts"`
	Deduped   int        `json:"deduplicated"`
	Replays   int        `json:"replays"`
	Crashes   int        `json:"crashes"`
	Effects   Effects    `json:"effects"`
}

// Result is the comparison of two executions.
type Result struct {
	A    Side  `json:"a"`
	B    Side  `json:"b"`
	Rows []Row `json:"rows"`
	// Common counts the calls and replays paired, by step id, by tool and
	// arguments or by tool: every row with both sides but the run ends.
	Common int `json:"common"`
	// Part is the index of the first row that differs, -1 when none does.
	Part int `json:"part"`
	// Parting says in words where they part, or that they do not.
	Parting string `json:"parting"`
	// EffectLines say what each did to the world, side by side.
	EffectLines []string `json:"effect_lines"`
}

// Compare aligns two folded executions. Labels name the sides; empty
// labels are made from the scenarios (or the execution ids when both ran
// the same scenario).
func Compare(a, b *trace.Trace, labelA, labelB string) *Result {
	if labelA == "" || labelB == "" {
		la, lb := a.Scenario, b.Scenario
		if la == "" || lb == "" || la == lb {
			la, lb = a.Execution, b.Execution
		}
		if labelA == "" {
			labelA = la
		}
		if labelB == "" {
			labelB = lb
		}
	}
	ia, ib := Items(a), Items(b)
	r := &Result{A: side(a, ia, labelA), B: side(b, ib, labelB), Part: -1}
	r.Rows = align(ia, ib, 0, nil)
	for i := range r.Rows {
		row := &r.Rows[i]
		row.Differs, row.Why = differ(row)
		if row.Match == MatchStep || row.Match == MatchArgs || row.Match == MatchPosition {
			r.Common++
		}
		if row.Differs && r.Part < 0 {
			r.Part = i
		}
	}
	r.Parting = parting(r)
	r.EffectLines = EffectLines(r.A, r.B)
	return r
}

// Items flattens a trace into its rows, in the order they happened.
func Items(t *trace.Trace) []*Item {
	var out []*Item
	inf := newInference(t)
	var walk func(nodes []trace.Node, run, turn int)
	walk = func(nodes []trace.Node, run, turn int) {
		for _, n := range nodes {
			switch n := n.(type) {
			case *trace.Run:
				walk(n.Nodes, n.Number, 0)
			case *trace.Turn:
				walk(n.Nodes, run, n.Number)
			case *trace.Call:
				out = append(out, callItem(n, inf))
			case *trace.Replay:
				it := &Item{Kind: KindReplay, Run: n.Run, Turn: turn, Call: n.Call, Tool: n.Tool, Mark: trace.MarkReplay,
					ResultRun: n.ResultRun, Seq: n.Seq, Text: "replayed from journal"}
				if n.Decision {
					it.Text = "arguments replayed from journal"
				}
				if c := t.LastCall(n.Call); c != nil {
					it.Args = canonical(c.Args)
					if it.Tool == "" {
						it.Tool = c.Tool
					}
				}
				out = append(out, it)
			case *trace.Note:
				if it := noteItem(n); it != nil {
					if it.Run == 0 {
						it.Run = run // an importer's events carry no run number
					}
					out = append(out, it)
				}
			}
		}
	}
	walk(t.Nodes, 0, 0)
	for _, it := range out {
		it.Glyph = it.Mark.Glyph()
	}
	return out
}

func callItem(c *trace.Call, inf inference) *Item {
	it := &Item{Kind: KindCall, Run: c.Run, Turn: c.Turn, Call: c.Call, Tool: c.Tool, Args: canonical(c.Args), Seq: c.Seq,
		Mark: trace.MarkRunning}
	infer := inf.on && inf.sideEffecting(c)
	for _, a := range c.Attempts {
		at := Attempt{N: a.N, Mark: a.Mark(), Outcome: string(a.Outcome), Status: a.Status, Deduplicated: a.Deduplicated,
			Key: a.Key, Faults: a.Faults, Effects: len(a.Effects), Inferred: infer}
		if infer {
			if took, _ := inferred(a); took {
				at.Effects = 1
			}
		}
		at.Glyph = at.Mark.Glyph()
		it.Attempts = append(it.Attempts, at)
		it.Mark = at.Mark
	}
	return it
}

func noteItem(n *trace.Note) *Item {
	it := &Item{Run: n.Run, Call: n.Call, Tool: n.Tool, Mark: n.Mark, Seq: n.Seq, Text: n.Error}
	switch n.Kind {
	case trace.RunCrashed:
		it.Kind, it.Text = KindCrash, "worker killed"
		if n.Fault != "" {
			it.Text += " (" + n.Fault + ")"
		}
	case trace.ExecutionEnded:
		it.Kind = KindEnd
		if n.Mark == trace.MarkOK {
			it.Text = "completed"
		} else {
			it.Text = strings.TrimSpace("failed " + n.Error)
		}
	case trace.Escalated:
		it.Kind, it.Text = KindEscalated, "escalated"
	case trace.JournalDeleted:
		it.Kind, it.Text = KindDeleted, "journal record deleted"
	default:
		return nil // a journal record is shown with its call
	}
	return it
}

// canonical is the arguments in canonical JSON, so that {"b":1,"a":2} and
// {"a":2,"b":1} are the same call.
func canonical(args json.RawMessage) string {
	if len(args) == 0 {
		return ""
	}
	if c, err := idemkey.CanonicalJSON(args); err == nil {
		return string(c)
	}
	return string(args)
}

func side(t *trace.Trace, items []*Item, label string) Side {
	s := Side{Label: label, Execution: t.Execution, Scenario: t.Scenario, Policy: t.Policy, Outcome: t.Outcome(),
		Runs: len(t.Runs), Events: t.Events}
	s.Glyph = s.Outcome.Glyph()
	for _, it := range items {
		switch it.Kind {
		case KindCall:
			s.Calls++
			s.Attempts += len(it.Attempts)
			for _, a := range it.Attempts {
				if a.Mark == trace.MarkDedup {
					s.Deduped++
				}
			}
		case KindReplay:
			s.Replays++
		case KindCrash:
			s.Crashes++
		}
	}
	s.Effects = effectsOf(t)
	return s
}

// identity is what a row is matched by in one pass; "" never matches. nth
// counts the rows before it of the same kind and call id: a step scheduled
// again (resumed by a later run, retried by the agent under its step id)
// is matched in order, its first time with the other side's first.
func identity(it *Item, pass, nth int) string {
	switch pass {
	case 0:
		switch it.Kind {
		case KindCall:
			// The step id and the tool: an importer's call ids (a Temporal
			// event id) may be the same number for different activities.
			return fmt.Sprintf("%s\x00%s\x00%s\x00%d", it.Kind, it.Call, it.Tool, nth)
		case KindReplay, KindDeleted:
			return fmt.Sprintf("%s\x00%s\x00%d", it.Kind, it.Call, nth)
		default:
			return string(it.Kind)
		}
	case 1:
		if it.Kind == KindCall || it.Kind == KindReplay {
			return string(it.Kind) + "\x00" + it.Tool + "\x00" + it.Args
		}
	case 2:
		if it.Kind == KindCall {
			return string(it.Kind) + "\x00" + it.Tool
		}
	}
	return ""
}

var passMatch = [3]Match{MatchStep, MatchArgs, MatchPosition}

// align matches a and b in pass `pass` and hands what it leaves unmatched
// to the next pass; what the last pass leaves stands alone.
func align(a, b []*Item, pass int, rows []Row) []Row {
	if pass == len(passMatch) {
		return alone(a, b, rows)
	}
	ids := map[string]rune{}
	next := rune(1)
	intern := func(items []*Item) []rune {
		rs := make([]rune, len(items))
		seen := map[string]int{}
		for i, it := range items {
			k := string(it.Kind) + "\x00" + it.Call
			id := identity(it, pass, seen[k])
			seen[k]++
			r, ok := ids[id]
			if !ok || id == "" {
				r = next
				next++
				if id != "" {
					ids[id] = r
				}
			}
			rs[i] = r
		}
		return rs
	}
	ra, rb := intern(a), intern(b)
	match := passMatch[pass]
	// The common head and tail are matched before the library looks for
	// the longest common subsequence of the middle, so that of two equally
	// long alignments the one that keeps the sides' starts together wins.
	head := 0
	for head < len(ra) && head < len(rb) && ra[head] == rb[head] {
		head++
	}
	tail := 0
	for tail < len(ra)-head && tail < len(rb)-head && ra[len(ra)-1-tail] == rb[len(rb)-1-tail] {
		tail++
	}
	pa, pb := 0, 0
	same := func(n int) {
		for i := 0; i < n; i++ {
			m := match
			if pass == 0 && a[pa+i].Kind != KindCall && a[pa+i].Kind != KindReplay && a[pa+i].Kind != KindDeleted {
				m = MatchEnd
			}
			rows = append(rows, Row{A: a[pa+i], B: b[pb+i], Match: m})
		}
	}
	same(head)
	pa, pb = head, head
	for _, d := range lcs.DiffRunes(ra[head:len(ra)-tail], rb[head:len(rb)-tail]) {
		same(head + d.Start - pa)
		pa, pb = head+d.Start, head+d.ReplStart
		rows = align(a[head+d.Start:head+d.End], b[head+d.ReplStart:head+d.ReplEnd], pass+1, rows)
		pa, pb = head+d.End, head+d.ReplEnd
	}
	same(len(a) - pa)
	return rows
}

// alone adds the rows no pass matched, each standing alone, a's before
// b's: a call of one side is never paired with a call of another tool,
// which the two executions do not have in common.
func alone(a, b []*Item, rows []Row) []Row {
	for _, it := range a {
		rows = append(rows, Row{A: it})
	}
	for _, it := range b {
		rows = append(rows, Row{B: it})
	}
	return rows
}

// differ says whether a row's sides differ in what a reader tells apart,
// and how.
func differ(r *Row) (bool, string) {
	switch {
	case r.A == nil:
		return true, "only in B"
	case r.B == nil:
		return true, "only in A"
	}
	a, b := r.A, r.B
	var why []string
	if a.Tool != b.Tool {
		why = append(why, fmt.Sprintf("tool %s vs %s", a.Tool, b.Tool))
	} else if a.Args != b.Args {
		why = append(why, "other arguments")
	}
	if a.Kind != KindCall || b.Kind != KindCall {
		if a.Mark != b.Mark || a.Kind != b.Kind {
			why = append(why, fmt.Sprintf("%s vs %s", a.Mark.Glyph(), b.Mark.Glyph()))
		}
		return len(why) > 0, strings.Join(why, "; ")
	}
	if len(a.Attempts) != len(b.Attempts) {
		why = append(why, fmt.Sprintf("%d vs %d attempts", len(a.Attempts), len(b.Attempts)))
	}
	// The first few attempts that differ are named; the rest counted.
	more := 0
	for i := 0; i < len(a.Attempts) && i < len(b.Attempts); i++ {
		x, y := a.Attempts[i], b.Attempts[i]
		if x.N == y.N && x.Mark == y.Mark {
			continue
		}
		if more > 0 || countAttemptsIn(why) == maxWhy {
			more++
			continue
		}
		if x.N != y.N {
			why = append(why, fmt.Sprintf("#%d %s vs #%d %s", x.N, x.Glyph, y.N, y.Glyph))
		} else {
			why = append(why, fmt.Sprintf("#%d %s vs %s", x.N, x.Glyph, y.Glyph))
		}
	}
	if more > 0 {
		why = append(why, fmt.Sprintf("%d more attempts differ", more))
	}
	// A retry under a new key is the mistake the key-the-intent lessons
	// are about: say where one side's key changed and the other's did not.
	if ka, kb := a.KeyChange(), b.KeyChange(); (ka > 0) != (kb > 0) {
		if ka > 0 {
			why = append(why, fmt.Sprintf("new key at #%d vs the same key", ka))
		} else {
			why = append(why, fmt.Sprintf("the same key vs new key at #%d", kb))
		}
	}
	if ea, eb := a.Effects(), b.Effects(); ea != eb {
		why = append(why, fmt.Sprintf("%d vs %d effects", ea, eb))
	}
	return len(why) > 0, strings.Join(why, "; ")
}

// maxWhy is how many differing attempts a row names.
const maxWhy = 3

func countAttemptsIn(why []string) int {
	n := 0
	for _, w := range why {
		if strings.HasPrefix(w, "#") {
			n++
		}
	}
	return n
}

func parting(r *Result) string {
	a, b := r.A.Label, r.B.Label
	switch {
	case len(r.Rows) == 0:
		return "neither has a call"
	case r.Common == 0:
		return fmt.Sprintf("nothing in common: no call of %s matches one of %s by step id or by tool", a, b)
	case r.Part < 0:
		return "they do not part: every call, attempt and outcome is the same"
	}
	row := r.Rows[r.Part]
	it := row.A
	if it == nil {
		it = row.B
	}
	return fmt.Sprintf("they part at row %d, %s: %s", r.Part+1, it.Name(), row.Why)
}

// Name is the row's subject in words: "step-4 send_invoice_email", "worker killed".
func (it *Item) Name() string {
	switch it.Kind {
	case KindCall, KindReplay, KindDeleted:
		return strings.TrimSpace(it.Call + " " + it.Tool)
	}
	return it.Text
}

// Effects are what an execution did to the world: recorded effects when
// the history has them, else (an imported trace) effects inferred from
// its successful calls.
type Effects struct {
	// Inferred is set when no effect was recorded and these are inferred.
	Inferred bool `json:"inferred,omitempty"`
	// Mail is messages per recipient.
	Mail []Count `json:"mail,omitempty"`
	// CRMRows counts distinct CRM rows written; CRMWrites the writes.
	CRMRows   int `json:"crm_rows,omitempty"`
	CRMWrites int `json:"crm_writes,omitempty"`
	// Calls are, for inferred effects, calls per tool that took effect
	// (answered ok, not deduplicated) and that may have (no answer).
	Calls []Count `json:"calls,omitempty"`
}

// Count is a number of things for one target (a recipient, a tool).
type Count struct {
	Target string `json:"target"`
	N      int    `json:"n"`
	// Possible counts, for inferred effects, attempts whose outcome is unknown.
	Possible int `json:"possible,omitempty"`
}

// Total is every effect counted.
func (e Effects) Total() int {
	n := e.CRMWrites
	for _, c := range e.Mail {
		n += c.N
	}
	for _, c := range e.Calls {
		n += c.N
	}
	return n
}

// inference says whether a trace's effects are inferred (it recorded
// none) and which of its calls may have side effects: retrylab's own calls
// by their kind (reads never count), an imported trace's by the audit's
// tool-name patterns (audit.DefaultEffects), so the diff and the audit
// count the same attempts.
type inference struct {
	on   bool
	opts audit.Options
}

func newInference(t *trace.Trace) inference {
	recorded := false
	walkCalls(t.Nodes, func(c *trace.Call) bool {
		for _, a := range c.Attempts {
			if len(a.Effects) > 0 {
				recorded = true
			}
		}
		return !recorded
	})
	if recorded {
		return inference{}
	}
	// The default patterns are constant and valid.
	pats, _ := audit.ParseEffects(audit.DefaultEffects)
	return inference{on: true, opts: audit.Options{Effects: pats}}
}

func (inf inference) sideEffecting(c *trace.Call) bool {
	if c.Kind != "" {
		return c.Kind != "read"
	}
	return inf.opts.SideEffecting(c.Tool)
}

// inferred says, as the audit does, whether an attempt took effect (it
// answered ok and was not deduplicated) or may have (its outcome is
// unknown). Attempts a source did not keep count only when their last
// failure says they may have acted.
func inferred(a *trace.Attempt) (took, maybe bool) {
	if a.Unknown() {
		return false, true
	}
	if a.NotKept > 0 {
		return false, false
	}
	return a.Finished && a.Outcome == trace.OutcomeOK && !a.Deduplicated, false
}

// walkCalls hands fn every call of the nodes in order until fn returns false.
func walkCalls(nodes []trace.Node, fn func(*trace.Call) bool) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *trace.Run:
			if !walkCalls(n.Nodes, fn) {
				return false
			}
		case *trace.Turn:
			if !walkCalls(n.Nodes, fn) {
				return false
			}
		case *trace.Call:
			if !fn(n) {
				return false
			}
		}
	}
	return true
}

func effectsOf(t *trace.Trace) Effects {
	var e Effects
	mail := map[string]int{}
	rows := map[string]bool{}
	calls := map[string]*Count{}
	count := func(target string) *Count {
		cnt := calls[target]
		if cnt == nil {
			cnt = &Count{Target: target}
			calls[target] = cnt
		}
		return cnt
	}
	inf := newInference(t)
	walkCalls(t.Nodes, func(c *trace.Call) bool {
		if inf.on {
			// Nothing recorded what the calls did: infer it from the
			// calls that may have side effects, as the audit does.
			if !inf.sideEffecting(c) {
				return true
			}
			for _, a := range c.Attempts {
				switch took, maybe := inferred(a); {
				case took:
					count(c.Tool).N++
				case maybe:
					count(c.Tool).Possible++
				}
			}
			return true
		}
		for _, a := range c.Attempts {
			for _, fx := range a.Effects {
				switch fx.Service {
				case "mail":
					mail[fx.Target]++
				case "crm":
					e.CRMWrites++
					rows[fx.ID] = true
				default:
					count(fx.Service).N++
				}
			}
		}
		return true
	})
	e.Inferred = inf.on && len(calls) > 0
	e.CRMRows = len(rows)
	e.Mail = sorted(mail)
	for _, c := range calls {
		e.Calls = append(e.Calls, *c)
	}
	sort.Slice(e.Calls, func(i, j int) bool { return e.Calls[i].Target < e.Calls[j].Target })
	return e
}

func sorted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Target: k, N: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// EffectLines say what each side did to the world, one line per recipient,
// CRM or tool: "naive: 2 messages to jordan@acme.dev; safe: 1".
func EffectLines(a, b Side) []string {
	var lines []string
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	get := func(cs []Count, target string) Count {
		for _, c := range cs {
			if c.Target == target {
				return c
			}
		}
		return Count{Target: target}
	}
	for _, target := range union(a.Effects.Mail, b.Effects.Mail) {
		x, y := get(a.Effects.Mail, target).N, get(b.Effects.Mail, target).N
		lines = append(lines, fmt.Sprintf("%s: %d %s to %s; %s: %d", a.Label, x, plural(x, "message", "messages"),
			target, b.Label, y))
	}
	if a.Effects.CRMWrites+b.Effects.CRMWrites > 0 {
		lines = append(lines, fmt.Sprintf("%s: %d %s (%d %s); %s: %d (%d)", a.Label, a.Effects.CRMRows,
			plural(a.Effects.CRMRows, "CRM row", "CRM rows"), a.Effects.CRMWrites, plural(a.Effects.CRMWrites, "write", "writes"),
			b.Label, b.Effects.CRMRows, b.Effects.CRMWrites))
	}
	for _, tool := range union(a.Effects.Calls, b.Effects.Calls) {
		x, y := get(a.Effects.Calls, tool), get(b.Effects.Calls, tool)
		what := "calls took effect"
		if x.N == 1 {
			what = "call took effect"
		}
		if a.Effects.Inferred || b.Effects.Inferred {
			what += " (inferred)"
		}
		line := fmt.Sprintf("%s: %d %s %s; %s: %d", a.Label, x.N, tool, what, b.Label, y.N)
		if x.Possible+y.Possible > 0 {
			line += fmt.Sprintf(" (outcome unknown: %d vs %d)", x.Possible, y.Possible)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("%s: no effects; %s: none", a.Label, b.Label))
	}
	return lines
}

func union(a, b []Count) []string {
	seen := map[string]bool{}
	var out []string
	for _, cs := range [][]Count{a, b} {
		for _, c := range cs {
			if !seen[c.Target] {
				seen[c.Target] = true
				out = append(out, c.Target)
			}
		}
	}
	sort.Strings(out)
	return out
}
