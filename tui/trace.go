package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/dur"
	"github.com/retrylab/retrylab/internal/plural"
)

// The trace pane shows the one model of a trace (engine/trace), kept live:
// this file only flattens it into rows and words.

// nodeKind is what a trace row stands for.
type nodeKind int

const (
	kindRun nodeKind = iota
	kindTurn
	kindStep
	kindReplay
	kindAttempt
	kindNote
	kindGap
)

// marker is the glyph a learner tells outcomes apart by: the fold's marks.
type marker = trace.Mark

const (
	markNone      = trace.MarkNone
	markOK        = trace.MarkOK
	markTimeout   = trace.MarkTimeout
	markDedup     = trace.MarkDedup
	markReplay    = trace.MarkReplay
	markKilled    = trace.MarkKilled
	markEscalated = trace.MarkEscalated
	markAmbiguous = trace.MarkAmbiguous
	markFailed    = trace.MarkFailed
	markRecorded  = trace.MarkRecorded
	markFault     = trace.MarkFault
	markRetry     = trace.MarkRetry
	markRunning   = trace.MarkRunning
)

// markerGlyph has the glyph of every mark that has one.
var markerGlyph = func() map[marker]string {
	out := map[marker]string{}
	for m := trace.MarkNone; m.Glyph() != "" || m == trace.MarkNone; m++ {
		if m != trace.MarkNone {
			out[m] = m.Glyph()
		}
	}
	return out
}()

// node is one row of the trace tree, made from a node of the model.
type node struct {
	kind     nodeKind
	id       string // stable, for the expanded state
	mark     marker
	text     string
	children []trace.Node
	step     string
	src      trace.Node
}

// link names the attempt a row or a message belongs to, for cross-highlighting.
type link struct {
	step    string
	attempt int
}

func (n *node) link() (link, bool) {
	if a, ok := n.src.(*trace.Attempt); ok && a.NotKept == 0 {
		return link{a.Call, a.N}, true
	}
	return link{}, false
}

// traceView is an execution's record and its folded history, with what
// the explorer needs to keep it live.
type traceView struct {
	exec history.Execution
	t    *trace.Trace
	// rows made so far, so a live update words only what changed: an
	// attempt again when its signature moved, a run every time (they are
	// few), every other node once.
	made map[trace.Node]*node
	sigs map[*trace.Attempt]attemptSig
	// effects are an imported trace's inferred effects (effects.go), as of
	// effectsAt events, drawn effectsWidth wide on effectsDay.
	effects      []inferredLine
	effectsAt    int
	effectsWidth int
	effectsDay   time.Time
	// report is the audit of an imported trace as of auditAt events.
	report  audit.Report
	auditAt int
	audited bool
}

// attemptSig is what an attempt's row says changes with.
type attemptSig struct {
	finished, crashed bool
	effects, faults   int
	retry             time.Duration
}

// newTraceView folds a first page of events.
func newTraceView(x history.Execution, events []history.Event) *traceView {
	return &traceView{exec: x, t: history.Fold(x.ID, events), made: map[trace.Node]*node{},
		sigs: map[*trace.Attempt]attemptSig{}}
}

// newImportedTraceView folds an imported execution's trace, read whole.
func newImportedTraceView(x history.Execution, events []trace.Event) *traceView {
	return &traceView{exec: x, t: trace.Fold(x.ID, events), made: map[trace.Node]*node{},
		sigs: map[*trace.Attempt]attemptSig{}}
}

// extend folds into an imported trace shown the events of a new read of it
// past those it holds, when the read only grew it (GrowingImports): the
// rows of what did not change are kept. It reports false when tv is not
// that execution's imported trace, or the read is shorter than it.
func (tv *traceView) extend(x history.Execution, events []trace.Event) bool {
	if tv == nil || tv.exec.ID != x.ID || tv.exec.Imported == "" || len(events) < tv.t.Events {
		return false
	}
	for _, e := range events[tv.t.Events:] {
		tv.t.Apply(e)
	}
	tv.exec = x
	return true
}

// row is the row of a model node, made again only when its words changed.
func (tv *traceView) row(tn trace.Node) *node {
	n := tv.made[tn]
	switch v := tn.(type) {
	case *trace.Run:
		n = nil
	case *trace.Attempt:
		sig := attemptSig{v.Finished, v.Crashed, len(v.Effects), len(v.Faults), v.Retry}
		if old, ok := tv.sigs[v]; !ok || old != sig {
			tv.sigs[v] = sig
			n = nil
		}
	}
	if n == nil {
		n = makeNode(tn, tv.t, tv.exec.Imported != "")
		tv.made[tn] = n
	}
	n.children = tn.Children()
	return n
}

// policies is the policy the execution's runs ran with, as recorded: one
// word when all runs agree, else each run's in turn ("none → keys+journal").
// Before any run is recorded it is the record's.
func (tv *traceView) policies() string {
	var out []string
	for _, r := range tv.t.Runs {
		if r.Policy != "" && (len(out) == 0 || out[len(out)-1] != r.Policy) {
			out = append(out, r.Policy)
		}
	}
	if len(out) == 0 {
		return tv.exec.Policy.String()
	}
	return strings.Join(out, " → ")
}

// events is how many events the trace holds.
func (tv *traceView) events() int { return tv.t.Events }

// lastSeq is the Seq of the latest event applied.
func (tv *traceView) lastSeq() uint64 { return tv.t.LastSeq }

// apply folds further events that continue the trace; it reports false,
// applying nothing more, at the first one that does not follow on (a gap:
// the caller reads the missing page).
func (tv *traceView) apply(events []history.Event) bool {
	for _, ev := range events {
		switch {
		case ev.Seq <= tv.t.LastSeq:
			continue // already folded (a page and a notice crossed)
		case ev.Seq != tv.t.LastSeq+1:
			return false
		}
		history.Apply(tv.t, ev)
	}
	return true
}

// makeNode describes a node of the model as a row; imported says the
// trace was imported (no worker of retrylab's ran it).
func makeNode(tn trace.Node, t *trace.Trace, imported bool) *node {
	n := &node{id: tn.ID(), children: tn.Children(), src: tn}
	switch v := tn.(type) {
	case *trace.Run:
		n.kind, n.text = kindRun, runLine(v, t, imported)
	case *trace.Gap:
		n.kind, n.text = kindGap, fmt.Sprintf("┆ %s with no worker running", roundDur(v.Duration))
	case *trace.Turn:
		n.kind, n.text = kindTurn, fmt.Sprintf("turn %d  %q", v.Number, v.Text)
	case *trace.Call:
		n.kind, n.text, n.step = kindStep, v.Tool+"  "+v.Call, v.Call
	case *trace.Attempt:
		n.kind, n.step = kindAttempt, v.Call
		if imported {
			n.mark, n.text = importedAttemptLine(v)
		} else {
			n.mark, n.text = attemptLine(v)
		}
	case *trace.Replay:
		n.kind, n.mark, n.step = kindReplay, markReplay, v.Call
		n.text = fmt.Sprintf("%s  %s  replayed from journal (run %d) → %s", v.Tool, v.Call, v.ResultRun, resultRef(v.Result))
	case *trace.Note:
		n.kind, n.mark, n.step = kindNote, v.Mark, v.Call
		n.text = noteLine(v)
	}
	return n
}

// faultNames lists faults once each, in order: a fault armed with t on the
// attempt the scenario's plan also times out is injected twice, which the
// detail says; the row read 'timeout-after-effect,timeout-after-effect'.
// armedPrefix begins the record of a fault armed by hand; a longer record
// says why it took effect (it replaced the scenario's planned fault).
const armedPrefix = "armed from the explorer"

func faultNames(faults []string) string {
	seen := make(map[string]bool, len(faults))
	names := make([]string, 0, len(faults))
	for _, f := range faults {
		if !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	return strings.Join(names, ",")
}

// runLine is a run's row: its worker (none for an imported run), its own
// policy, the faults injected during it and how it ended.
func runLine(r *trace.Run, t *trace.Trace, imported bool) string {
	s := fmt.Sprintf("run %d", r.Number)
	switch {
	case r.PID != 0:
		s += fmt.Sprintf(" · pid %d", r.PID)
	case !imported:
		s += " · worker starting"
	}
	if r.Policy != "" {
		s += " · policy " + r.Policy
	}
	if len(r.Faults) > 0 {
		s += " · " + trace.MarkFault.Glyph() + faultNames(r.Faults)
	}
	switch {
	case r.End == nil && r == t.Runs[len(t.Runs)-1]:
		s += " · " + trace.MarkRunning.Glyph() + " running"
	case r.End == nil:
		s += " · ended without a record"
	case r.End.Kind == trace.RunCrashed:
		s += " · " + trace.MarkKilled.Glyph() + " killed"
	case r.End.Kind == trace.Escalated:
		s += " · " + trace.MarkEscalated.Glyph() + " escalated"
	case r.End.Mark == trace.MarkOK:
		s += " · " + trace.MarkOK.Glyph() + " completed"
	case r.End.Kind == trace.ExecutionEnded:
		status, _ := r.End.EndWords() // as the source said it: cancelled, timed out, …
		s += " · " + trace.MarkFailed.Glyph() + " " + status
	default:
		s += " · " + trace.MarkFailed.Glyph() + " failed"
	}
	return s
}

func noteLine(v *trace.Note) string {
	switch v.Kind {
	case trace.StepRecorded:
		return "journaled → " + resultRef(v.Result)
	case trace.RunCrashed:
		why := v.Error
		if v.Fault != "" {
			why = fault.Point(v.Fault).Describe()
		}
		return fmt.Sprintf("worker killed (exit %d) — %s", v.ExitCode, why)
	case trace.Escalated:
		return "escalated — " + trace.Headline(v.Error) // whole in the detail pane
	case trace.JournalDeleted:
		return fmt.Sprintf("journal record of %s deleted by hand", v.Call)
	case trace.ExecutionEnded:
		status, why := v.EndWords()
		if why == "" {
			return "execution " + status
		}
		return "execution " + status + " — " + trace.Headline(why) // whole in the detail pane
	case trace.Noted, trace.RunEnded:
		return v.Text
	case trace.Paced:
		return narrate.Paced(v.Duration, v.Attempt)
	case trace.ClockMoved:
		return narrate.ClockMoved(v.Duration, v.Offset)
	case trace.KeyExpired:
		return narrate.KeyExpired(v.Key, v.Call, v.Duration)
	}
	return string(v.Kind)
}

// attemptLine is an attempt's marker and words. Whether the provider acted
// for an attempt whose caller never learnt the outcome is read from the
// effects its history records, not from today's outbox.
func attemptLine(a *trace.Attempt) (marker, string) {
	if a.NotKept > 0 {
		return a.Mark(), fmt.Sprintf("#%s %s not kept by the source · last error %s", trace.AttemptNumbers(a.N, a.NotKept), a.Mark().Glyph(), orNotRecorded(trace.Headline(a.Error)))
	}
	key := ""
	if a.Key != "" {
		key = "  " + a.Key
	}
	delivered := effectIDs(a)
	faults := ""
	if len(a.Faults) > 0 {
		faults = "  " + trace.MarkFault.Glyph() + faultNames(a.Faults)
	}
	retry := retryTail(a)
	head := fmt.Sprintf("#%d ", a.N)
	m := a.Mark()
	g := m.Glyph()
	switch m {
	case markAmbiguous:
		if !a.Finished {
			return m, head + g + " worker died · ambiguous: provider delivered " + delivered + key + faults
		}
		return m, fmt.Sprintf("%s%s timeout %s · ambiguous: provider delivered %s%s%s%s", head, g, roundDur(a.Duration), delivered, key, faults, retry)
	case markKilled:
		return m, head + g + " worker died before an answer" + key + faults
	case markRunning:
		return m, head + g + " in flight" + key + faults
	case markTimeout:
		return m, fmt.Sprintf("%s%s timeout %s%s%s%s", head, g, roundDur(a.Duration), key, faults, retry)
	case markDedup:
		return m, fmt.Sprintf("%s%s deduplicated by key → %s  %s%s%s", head, g, exchangeRef(a.Response), roundDur(a.Duration), key, faults)
	case markOK:
		status := "ok" // an imported span has no HTTP status
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		return m, fmt.Sprintf("%s%s %s → %s  %s%s%s", head, g, status, exchangeRef(a.Response), roundDur(a.Duration), key, faults)
	}
	outcome := string(a.Outcome)
	if a.Status != 0 {
		outcome += fmt.Sprintf(" %d", a.Status)
	}
	return m, fmt.Sprintf("%s%s %s  %s%s%s%s", head, g, outcome, roundDur(a.Duration), key, faults, retry)
}

// retryTail ends the row of an attempt the policy retries: "  ↻ retry in
// 50ms". A pane too narrow for the row drops it first (the next attempt's
// row follows it), so the faults before it show whole.
func retryTail(a *trace.Attempt) string {
	if a.Retry <= 0 {
		return ""
	}
	return fmt.Sprintf("  ↻ retry in %s", dur.Text(a.Retry))
}

// effectIDs lists what the providers did for an attempt, by id.
func effectIDs(a *trace.Attempt) string {
	ids := make([]string, len(a.Effects))
	for i, fx := range a.Effects {
		ids[i] = fx.ID
	}
	return strings.Join(ids, ",")
}

func exchangeRef(x *trace.Exchange) string {
	if x == nil {
		return ""
	}
	return resultRef(x.Body)
}

// resultRef is the id a result points at: a message or a record.
func resultRef(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return "?"
	}
	for _, k := range []string{"message_id", "id"} {
		if v, ok := m[k].(string); ok {
			return v
		}
	}
	return "result"
}

// roundDur is a duration as the screen says it (and show: dur.Short).
func roundDur(d time.Duration) string { return dur.Short(d) }

// row is one visible line of the flattened tree.
type row struct {
	n     *node
	depth int
}

// flatten lists the rows to show: collapsed nodes hide their children, and
// finalOnly keeps only each call's last attempt, the way many engines
// record history. Gaps show where a crash left no worker running.
func (tv *traceView) flatten(collapsed map[string]bool, finalOnly bool) []row {
	var out []row
	var walk func(ns []trace.Node, depth int)
	walk = func(ns []trace.Node, depth int) {
		lastAttempt := -1
		if finalOnly {
			for i, n := range ns {
				if _, ok := n.(*trace.Attempt); ok {
					lastAttempt = i
				}
			}
		}
		for i, tn := range ns {
			if _, ok := tn.(*trace.Attempt); ok && finalOnly && i != lastAttempt {
				continue
			}
			if g, ok := tn.(*trace.Gap); ok && !g.AfterCrash {
				continue
			}
			n := tv.row(tn)
			out = append(out, row{n: n, depth: depth})
			if len(n.children) > 0 && !collapsed[n.id] {
				walk(n.children, depth+1)
			}
		}
	}
	walk(tv.t.Nodes, 0)
	return out
}

// traceDetail describes the selected row of the trace.

func attemptDetail(a *trace.Attempt) []string {
	method, url := "?", ""
	var body json.RawMessage
	if a.Request != nil {
		method, url, body = a.Request.Method, a.Request.URL, a.Request.Body
	}
	req := fmt.Sprintf("#%d %s %s", a.N, method, url)
	if a.Key != "" {
		req += "  Idempotency-Key: " + a.Key
	}
	lines := []string{req + "  body " + compact(body)}
	switch {
	case a.NotKept > 0:
		lines = []string{fmt.Sprintf("%s before this one left no record in the source; the last failed: %s", plural.Count(a.NotKept, "attempt"), orNotRecorded(a.Error))}
	case a.Finished:
		resp := fmt.Sprintf("→ %s in %s", a.Outcome, roundDur(a.Duration))
		if f := a.Response; f != nil {
			resp = fmt.Sprintf("→ %d %s in %s", f.Status, a.Outcome, roundDur(a.Duration))
			keys := make([]string, 0, len(f.Headers))
			for k := range f.Headers {
				if k != "Content-Type" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				resp += "  " + k + ": " + f.Headers[k]
			}
			resp += "  " + compact(f.Body)
		} else if a.Error != "" {
			resp += "  (" + a.Error + ")"
		}
		lines = append(lines, resp)
	case a.Crashed:
		lines = append(lines, "→ no answer: the worker was killed")
	}
	if len(a.Faults) > 0 {
		lines = append(lines, "faults injected: "+strings.Join(a.Faults, ", "))
	}
	for _, in := range a.Injections {
		// An armed fault that took the attempt from the scenario's plan
		// says so (engine: one fault per attempt, the armed one wins).
		if in.Plan == 0 && strings.HasPrefix(in.Text, armedPrefix) && in.Text != armedPrefix {
			lines = append(lines, in.Fault+": "+in.Text)
		}
	}
	if len(a.Effects) > 0 {
		lines = append(lines, "provider delivered: "+strings.ReplaceAll(effectIDs(a), ",", ", "))
	} else {
		lines = append(lines, "provider delivered: nothing for this attempt")
	}
	return lines
}

// eventName is the name of the history event behind a note, as retrylab
// records it.
func eventName(v *trace.Note) string {
	switch v.Kind {
	case trace.RunCrashed:
		return string(history.WorkerCrashed)
	case trace.Escalated:
		return string(history.Escalated)
	case trace.JournalDeleted:
		return string(history.JournalDeleted)
	case trace.StepRecorded:
		return string(history.StepRecorded)
	case trace.Paced:
		return string(history.Paced)
	case trace.ClockMoved:
		return string(history.ClockMoved)
	case trace.KeyExpired:
		return string(history.KeyExpired)
	case trace.ExecutionEnded:
		if v.Mark == trace.MarkOK {
			return string(history.ExecutionCompleted)
		}
		if status, _ := v.EndWords(); status != "failed" {
			return "execution " + status // an imported workflow's own word
		}
		return string(history.ExecutionFailed)
	}
	return string(v.Kind)
}

// tracePane is the trace of the selected execution: its runs, turns, tool
// calls and attempts as rows to expand and collapse, kept live by applying
// the events notices carry, read a page at a time. The Model reads the
// pages (it holds the source); the pane holds what was read and how it is
// shown.
type tracePane struct {
	*Context
	tr *traceView
	// owner is whose runs the pane shows when not the explorer's own (a
	// room participant's, opened by enter in the room view): its title
	// names them.
	owner     string
	rows      []row
	sel, top  int
	collapsed map[string]bool
	finalOnly bool
	truncated bool // the history goes on beyond the loaded events
	paging    bool // a further page of the trace is being read
	// stale is set when live events were dropped while a page was read:
	// the trace reads on from where it stands once the page is in.
	stale bool
	// unreadable is the execution selected whose history could not be
	// read (a damaged record), while tr is nil.
	unreadable, unreadableErr string
	// linked is the attempt that caused the selected outbox message.
	linked func() *link
	// more reads the next page, when a move comes near the end of those
	// loaded.
	more          func() tea.Cmd
	width, height int
}

func newTracePane(ctx *Context, linked func() *link, more func() tea.Cmd) *tracePane {
	return &tracePane{Context: ctx, collapsed: map[string]bool{}, linked: linked, more: more}
}

// bindings are the trace's keys, declared once: the moves (a page its
// rows) and folding the selected row.
func (t *tracePane) bindings() []binding {
	k := t.keys
	page := func() int { return max(1, t.height-3) }
	fold := func(collapsed func(n *node) bool) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd {
			if n := t.selected(); n != nil {
				t.setCollapsed(collapsed(n))
			}
			return nil
		}
	}
	return append(moveBindings(k, page, func(delta int) tea.Cmd { return t.moveBy(delta, page()) }),
		binding{Binding: k.Expand, group: groupMove, action: fold(func(*node) bool { return false })},
		binding{Binding: k.Collapse, group: groupMove, action: fold(func(*node) bool { return true })},
		binding{Binding: k.Toggle, group: groupMove, action: fold(func(n *node) bool { return !t.collapsed[n.id] })})
}

// moveBy moves the selection by delta rows; within page rows of the end of
// the pages loaded, it reads the next (more).
func (t *tracePane) moveBy(delta, page int) tea.Cmd {
	if t.move(delta, page) {
		t.clampScroll()
		return t.more()
	}
	return nil
}

// ToggleFinalOnly shows each step's final attempt only, or every attempt
// again (f).
func (t *tracePane) ToggleFinalOnly() {
	t.finalOnly = !t.finalOnly
	t.reflow()
	t.clampScroll()
}

// SetSize is the pane's box, borders included.
func (t *tracePane) SetSize(width, height int) { t.width, t.height = width, height }

// Select starts showing another execution: from the top, all expanded.
func (t *tracePane) Select() {
	t.sel, t.top = 0, 0
	t.collapsed = map[string]bool{}
}

// Update takes a read of the selected history (traceMsg without an error,
// for the execution selected: a read from the start folds a new trace; a
// further page, or the events a live trace missed, is applied to the
// trace kept) and the keys that change how it shows: expand, collapse,
// toggle (when focused) and final attempts only.
func (t *tracePane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case traceMsg:
		if msg.from > 0 {
			t.paging = false
		} else {
			t.unreadable = ""
		}
		// Follow a live run's tail, but not the end of a page still to come.
		following := !t.truncated && t.sel >= len(t.rows)-1
		if msg.from > 0 {
			// A further page: it continues the trace shown, or came too late.
			if t.tr == nil || t.tr.exec.ID != msg.id || !t.tr.apply(msg.events) {
				return nil
			}
		} else if msg.x.Imported != "" {
			if !msg.grows || !t.tr.extend(msg.x, msg.imported) {
				t.tr = newImportedTraceView(msg.x, msg.imported)
			}
		} else {
			t.tr = newTraceView(msg.x, msg.events)
		}
		t.truncated = msg.truncated
		t.reflow()
		if following && len(t.rows) > 0 {
			t.sel = len(t.rows) - 1
		}
		t.clampScroll()
	}
	return nil
}

// follow reflows after live events were applied, keeping a selection on
// the last row there (the run's tail).
func (t *tracePane) follow() {
	following := t.sel >= len(t.rows)-1
	t.reflow()
	if following && len(t.rows) > 0 {
		t.sel = len(t.rows) - 1
	}
}

// reflow recomputes the visible rows after data or toggles changed.
func (t *tracePane) reflow() {
	if t.tr == nil {
		t.rows = nil
		return
	}
	var selID string
	if n := t.selected(); n != nil {
		selID = n.id
	}
	t.rows = t.tr.flatten(t.collapsed, t.finalOnly)
	for i, r := range t.rows {
		if r.n.id == selID {
			t.sel = i
			break
		}
	}
	t.sel = clamp(t.sel, 0, max(0, len(t.rows)-1))
}

// setCollapsed folds or unfolds the selected row, in the focused trace.
func (t *tracePane) setCollapsed(c bool) {
	if t.focus != paneTrace {
		return
	}
	n := t.selected()
	if n == nil || len(n.children) == 0 {
		return
	}
	if c {
		t.collapsed[n.id] = true
	} else {
		delete(t.collapsed, n.id)
	}
	t.reflow()
	t.clampScroll()
}

// move moves the selection by delta; true when it comes within page rows
// of the end of what is loaded (the next page may be due).
func (t *tracePane) move(delta, page int) bool {
	t.sel = clamp(t.sel+delta, 0, max(0, len(t.rows)-1))
	return t.sel >= len(t.rows)-page
}

// clampScroll keeps the selection in view.
func (t *tracePane) clampScroll() { t.top = scrollTo(t.sel, t.top, t.height-2, len(t.rows)) }

// selected is the row under the selection.
func (t *tracePane) selected() *node {
	if t.sel < 0 || t.sel >= len(t.rows) {
		return nil
	}
	return t.rows[t.sel].n
}

// View is the pane's box.
func (t *tracePane) View() string {
	title, lines := t.lines(t.height-2, t.width-2)
	return t.theme.pane(title, lines, t.width, t.height, t.focus == paneTrace)
}

// Shows says the trace shown is execution id's.
func (t *tracePane) Shows(id string) bool { return t.tr != nil && t.tr.exec.ID == id }

// Exec is the record of the execution shown; false when none shows.
func (t *tracePane) Exec() (history.Execution, bool) {
	if t.tr == nil {
		return history.Execution{}, false
	}
	return t.tr.exec, true
}

// Refresh takes the record of x as the list read it, when its trace is
// the one shown: no read of its own.
func (t *tracePane) Refresh(x history.Execution) {
	if t.Shows(x.ID) {
		t.tr.exec = x
	}
}

// Partial says the trace shown holds only the first pages of its history
// (or is cut at maxTraceEvents): more of it is in the source.
func (t *tracePane) Partial() bool { return t.tr != nil && t.tr.exec.Imported == "" && t.truncated }

// Held is how many events the trace shown holds.
func (t *tracePane) Held() int {
	if t.tr == nil {
		return 0
	}
	return t.tr.events()
}

// Forget shows no trace: no execution is selected.
func (t *tracePane) Forget() { t.tr, t.rows, t.unreadable = nil, nil, "" }

// ShowOwner names whose runs the pane shows in its title ("": the
// explorer's own).
func (t *tracePane) ShowOwner(name string) { t.owner = name }

// Reset forgets the trace and how it was shown (another source shows).
func (t *tracePane) Reset() {
	t.tr, t.rows, t.sel, t.top = nil, nil, 0, 0
	t.collapsed = map[string]bool{}
}

// ReadFailed takes a read of the selected history that failed: a further
// page is no longer being read; when the first read failed (a damaged
// record), the pane says execution id cannot be read, and why, rather
// than keep the trace of the one selected before beside it.
func (t *tracePane) ReadFailed(msg traceMsg) {
	if msg.from > 0 {
		t.paging = false
		return
	}
	t.tr, t.rows = nil, nil
	t.unreadable, t.unreadableErr = msg.id, oneLine(msg.err.Error())
}

// nextPage is the read of the events after those the trace holds, and
// marks it being read: the execution, the first seq and how many. ok is
// false when there is none to read now: no trace, a page being read, the
// cap reached, or (more) a history read to its end.
func (t *tracePane) nextPage(more bool) (id string, from uint64, limit int, ok bool) {
	if t.tr == nil || t.paging || t.tr.events() >= maxTraceEvents || (more && !t.truncated) {
		return "", 0, 0, false
	}
	t.paging = true
	return t.tr.exec.ID, t.tr.lastSeq() + 1, min(tracePage, maxTraceEvents-t.tr.events()), true
}

// readOnDue says live events were dropped while a page was read and the
// history is now read to its end: the trace is to read on from where it
// stands. It is said once.
func (t *tracePane) readOnDue() bool {
	if t.stale && !t.truncated {
		t.stale = false
		return true
	}
	return false
}

// liveResult is what a live event did to the trace shown.
type liveResult int

const (
	liveApplied liveResult = iota // applied to the trace kept
	liveReload                    // the trace is not read yet: read it
	liveHeld                      // a page is being read or the trace is cut: nothing now
	liveGap                       // it does not follow what is held: read on
)

// Live applies a live event of execution id, the one selected; gap says
// an event before it in the same batch did not follow already.
func (t *tracePane) Live(id string, e history.Event, gap bool) liveResult {
	switch {
	case !t.Shows(id):
		return liveReload // its first read is still to come
	case t.truncated || t.paging:
		t.stale = t.stale || t.paging // paging reads on to it
		return liveHeld
	case t.tr.events() >= maxTraceEvents:
		t.truncated = true // the cap: the view says where it cut
		return liveHeld
	case !gap && t.tr.apply([]history.Event{e}):
		return liveApplied
	}
	return liveGap
}

// SelectLast selects the last row: a run followed stays on its tail.
func (t *tracePane) SelectLast() { t.sel = max(0, len(t.rows)-1) }

// SelectAttempt selects the row of an attempt, if shown.
func (t *tracePane) SelectAttempt(step string, attempt int) {
	for i, r := range t.rows {
		if k, ok := r.n.link(); ok && k.step == step && k.attempt == attempt {
			t.sel = i
			return
		}
	}
}

// Imported says the trace shown is of an imported execution.
func (t *tracePane) Imported() bool { return t.tr != nil && t.tr.exec.Imported != "" }

// EffectLines are the effects inferred from an imported trace, width wide,
// with dates when it did not start on today's.
func (t *tracePane) EffectLines(width int, today time.Time) []inferredLine {
	return t.tr.effectLines(width, today)
}

// clickDelta is how far a click on the pane's row moves the selection.
func (t *tracePane) clickDelta(row int) int { return t.top + row - t.sel }

// FinalOnly says the pane shows each step's final attempt only (f).
func (t *tracePane) FinalOnly() bool { return t.finalOnly }

// ShortHelp is the pane's keys in the footer: the ones a presenter reaches for.
func (t *tracePane) ShortHelp() []key.Binding { return t.keys.ShortHelp() }

// FullHelp is the pane's keys: the moves, folding, final attempts only.
func (t *tracePane) FullHelp() [][]key.Binding {
	return [][]key.Binding{append(keysOf(t.bindings()), t.keys.FinalOnly)}
}

func (t *tracePane) lines(height, width int) (string, []string) {
	if t.tr == nil {
		if t.unreadable != "" {
			// The error in full: the status line cuts it short on a
			// narrow terminal.
			lines := []string{t.theme.Dim.Render("its history cannot be read:")}
			for _, l := range wrap(t.unreadableErr, width) {
				lines = append(lines, t.theme.Dim.Render(l))
			}
			return "Trace  " + t.unreadable, lines
		}
		if t.can.run == nil { // n runs nothing here
			return "Trace", []string{t.theme.Dim.Render("no execution selected")}
		}
		return "Trace", []string{t.theme.Dim.Render("no execution selected · n runs a scenario")}
	}
	x := t.tr.exec
	title := fmt.Sprintf("Trace  %s · %s · %s", x.ID, x.Scenario, t.tr.policies())
	if t.owner != "" {
		title = fmt.Sprintf("Trace  %s · %s · %s · %s", t.owner, x.ID, x.Scenario, t.tr.policies())
	}
	if t.finalOnly {
		title += " · final attempts only"
	}
	var linked *link
	if t.linked != nil {
		linked = t.linked()
	}
	var lines []string
	for i := t.top; i < len(t.rows) && len(lines) < height; i++ {
		r := t.rows[i]
		lines = append(lines, t.renderRow(r, i == t.sel, linked, width))
	}
	if t.truncated && len(lines) < height {
		more := "(more of the history below: keep scrolling)"
		if t.tr.events() >= maxTraceEvents {
			more = fmt.Sprintf("(history cut at %d events)", maxTraceEvents)
		}
		lines = append(lines, t.theme.Dim.Render(more))
	}
	return title, lines
}

func (t *tracePane) renderRow(r row, selected bool, linked *link, width int) string {
	n := r.n
	indent := strings.Repeat("  ", r.depth)
	exp := "  "
	if len(n.children) > 0 {
		exp = "▾ "
		if t.collapsed[n.id] {
			exp = "▸ "
		}
	}
	text, plain := n.text, n.plain()
	if a, ok := n.src.(*trace.Attempt); ok && n.kind == kindAttempt {
		if tail := retryTail(a); tail != "" && strings.HasSuffix(text, tail) &&
			lipgloss.Width(selMark(selected)+indent+exp+text) > width {
			text = strings.TrimSuffix(text, tail)
			plain = text
		}
	}
	switch n.kind {
	case kindRun:
		text = keepOutcome(text, width-lipgloss.Width(selMark(selected)+indent+exp))
		plain = text
		text = t.theme.Bold.Render(text)
	case kindGap:
		text = t.theme.Dim.Render(text)
	case kindTurn, kindStep:
	default:
		if g, ok := markerGlyph[n.mark]; ok && n.kind != kindAttempt {
			text = markStyle(t.theme, n.mark).Render(g) + " " + text
		} else if n.kind == kindAttempt {
			text = markStyle(t.theme, n.mark).Render(text)
		}
	}
	line := selMark(selected) + indent + exp + text
	if selected {
		return t.theme.Selected.Render(fit(selMark(true)+indent+exp+plain, width))
	}
	if k, ok := n.link(); ok && linked != nil && k == *linked {
		return t.theme.Linked.Render(fit("•"+indent+exp+plain, width))
	}
	return line
}

// keepOutcome fits a run's row to width, cutting its middle (the policy,
// the faults) rather than its end: how the run ended stays readable at 80
// columns ("✓ compl…" said nothing).
func keepOutcome(row string, width int) string {
	if lipgloss.Width(row) <= width {
		return row
	}
	at := strings.LastIndex(row, " · ")
	if at < 0 {
		return row
	}
	head, tail := row[:at], row[at:]
	room := width - lipgloss.Width(tail)
	if room < 8 {
		return row // too narrow to keep both: the box cuts it
	}
	return ansi.Truncate(head, room, "…") + tail
}
