package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
)

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

// marker is the glyph a learner tells outcomes apart by.
type marker int

const (
	markNone marker = iota
	markOK
	markTimeout
	markDedup
	markReplay
	markKilled
	markEscalated
	markAmbiguous
	markFailed
	markRecorded
	markFault
	markRetry
	markRunning
)

var markerGlyph = map[marker]string{
	markOK: "✓", markTimeout: "⏱", markDedup: "↺", markReplay: "⟲", markKilled: "☠",
	markEscalated: "⚑", markAmbiguous: "◆", markFailed: "✖", markRecorded: "✎", markFault: "⚡",
	markRetry: "↻", markRunning: "…",
}

// node is one row of the trace tree.
type node struct {
	kind     nodeKind
	id       string // stable, for the expanded state
	mark     marker
	text     string
	children []*node

	// For attempts: the events and the provider's deliveries they caused.
	start, finish *history.Event
	faults        []string
	retry         time.Duration
	delivered     []world.Message
	crashed       bool
	// For replays and notes: the event behind the row.
	event *history.Event
	step  string
}

// link names the attempt a row or a message belongs to, for cross-highlighting.
type link struct {
	step    string
	attempt int
}

func (n *node) link() (link, bool) {
	if n.kind == kindAttempt && n.start != nil {
		return link{n.start.Step, n.start.Attempt}, true
	}
	return link{}, false
}

// trace is an execution's history arranged as a tree.
type trace struct {
	exec  history.Execution
	roots []*node
	// steps maps a step id to its latest step node, to find attempts.
	lastSeq uint64
	events  []history.Event
}

// buildTrace arranges events into runs, turns, steps and attempts, and joins
// each attempt with the provider's deliveries it caused.
func buildTrace(x history.Execution, events []history.Event, msgs []world.Message) *trace {
	t := &trace{exec: x, events: events}
	byAttempt := map[link][]world.Message{}
	for _, m := range msgs {
		if m.Attribution.Execution == x.ID {
			k := link{m.Attribution.Step, m.Attribution.Attempt}
			byAttempt[k] = append(byAttempt[k], m)
		}
	}
	var run, turn, step *node
	steps := map[string]*node{}
	attempts := map[link]*node{}
	var prevTime time.Time
	var prevKilled bool
	add := func(parent *node, n *node) *node {
		if parent == nil {
			t.roots = append(t.roots, n)
		} else {
			parent.children = append(parent.children, n)
		}
		return n
	}
	note := func(ev *history.Event, m marker, text string) {
		parent := run
		if turn != nil && (ev.Type == history.StepRecorded) {
			parent = turn
		}
		add(parent, &node{kind: kindNote, id: fmt.Sprintf("note%d", ev.Seq), mark: m, text: text, event: ev, step: ev.Step})
	}
	for i := range events {
		ev := &events[i]
		t.lastSeq = ev.Seq
		switch ev.Type {
		case history.WorkerStarted:
			if prevKilled && !prevTime.IsZero() {
				add(nil, &node{kind: kindGap, id: fmt.Sprintf("gap%d", ev.Seq), text: fmt.Sprintf("┆ %s with no worker running", roundDur(ev.Time.Sub(prevTime)))})
			}
			run = add(nil, &node{kind: kindRun, id: fmt.Sprintf("run%d", ev.Run), text: fmt.Sprintf("run %d · worker pid %d", ev.Run, ev.PID), event: ev})
			turn, step = nil, nil
			steps = map[string]*node{}
			prevKilled = false
		case history.TurnStarted:
			turn = add(run, &node{kind: kindTurn, id: fmt.Sprintf("run%d/turn%d", ev.Run, ev.Turn), text: fmt.Sprintf("turn %d  %q", ev.Turn, ev.Text), event: ev})
		case history.ToolCallScheduled:
			parent := turn
			if parent == nil {
				parent = run
			}
			step = add(parent, &node{kind: kindStep, id: fmt.Sprintf("run%d/%s", ev.Run, ev.Step), text: ev.Tool + "  " + ev.Step, event: ev, step: ev.Step})
			steps[ev.Step] = step
		case history.AttemptStarted:
			parent := steps[ev.Step]
			if parent == nil {
				parent = step
			}
			a := add(parent, &node{kind: kindAttempt, id: fmt.Sprintf("seq%d", ev.Seq), start: ev, step: ev.Step, mark: markRunning})
			k := link{ev.Step, ev.Attempt}
			a.delivered = byAttempt[k]
			attempts[k] = a
		case history.FaultInjected:
			if a := attempts[link{ev.Step, ev.Attempt}]; a != nil {
				a.faults = append(a.faults, ev.Fault)
			}
		case history.AttemptFinished:
			if a := attempts[link{ev.Step, ev.Attempt}]; a != nil {
				a.finish = ev
			}
		case history.RetryScheduled:
			if a := attempts[link{ev.Step, ev.Attempt}]; a != nil {
				a.retry = ev.Delay
			}
		case history.StepRecorded:
			parent := steps[ev.Step]
			add(parent, &node{kind: kindNote, id: fmt.Sprintf("note%d", ev.Seq), mark: markRecorded,
				text: "journaled → " + resultRef(ev.Result), event: ev, step: ev.Step})
		case history.StepReplayed:
			parent := turn
			if parent == nil {
				parent = run
			}
			add(parent, &node{kind: kindReplay, id: fmt.Sprintf("seq%d", ev.Seq), mark: markReplay,
				text:  fmt.Sprintf("%s  %s  replayed from journal (run %d) → %s", ev.Tool, ev.Step, ev.ResultRun, resultRef(ev.Result)),
				event: ev, step: ev.Step})
		case history.WorkerCrashed:
			for _, a := range attempts {
				if a.finish == nil && a.start != nil && a.start.Run == ev.Run {
					a.crashed = true
				}
			}
			why := ev.Error
			if ev.Fault != "" {
				why = fault.Point(ev.Fault).Describe()
			}
			note(ev, markKilled, fmt.Sprintf("worker killed (exit %d) — %s", ev.ExitCode, why))
			prevKilled = true
		case history.Escalated:
			note(ev, markEscalated, "escalated — "+ev.Error)
		case history.JournalDeleted:
			add(nil, &node{kind: kindNote, id: fmt.Sprintf("note%d", ev.Seq), mark: markFault, text: fmt.Sprintf("journal record of %s deleted by hand", ev.Step), event: ev})
		case history.ExecutionCompleted:
			note(ev, markOK, "execution completed")
		case history.ExecutionFailed:
			note(ev, markFailed, "execution failed — "+ev.Error)
		}
		prevTime = ev.Time
	}
	for _, a := range attempts {
		a.mark, a.text = attemptLine(a)
	}
	return t
}

// attemptLine picks an attempt's marker and words. The ambiguous outcome —
// the caller saw a timeout or died, the provider delivered — is decided by
// joining the outbox.
func attemptLine(a *node) (marker, string) {
	s := a.start
	key := ""
	if s.Key != "" {
		key = "  " + s.Key
	}
	delivered := ""
	if len(a.delivered) > 0 {
		ids := make([]string, len(a.delivered))
		for i, m := range a.delivered {
			ids[i] = m.ID
		}
		delivered = strings.Join(ids, ",")
	}
	faults := ""
	if len(a.faults) > 0 {
		faults = "  ⚡" + strings.Join(a.faults, ",")
	}
	retry := ""
	if a.retry > 0 {
		retry = fmt.Sprintf("  ↻ retry in %s", a.retry)
	}
	head := fmt.Sprintf("#%d ", s.Attempt)
	f := a.finish
	switch {
	case f == nil && a.crashed:
		if delivered != "" {
			return markAmbiguous, head + "◆ worker died · ambiguous: provider delivered " + delivered + key + faults
		}
		return markKilled, head + "☠ worker died before an answer" + key + faults
	case f == nil:
		return markRunning, head + "… in flight" + key + faults
	case f.Outcome == history.OutcomeTimeout:
		if delivered != "" {
			return markAmbiguous, fmt.Sprintf("%s◆ timeout %s · ambiguous: provider delivered %s%s%s%s", head, roundDur(f.Duration), delivered, key, faults, retry)
		}
		return markTimeout, fmt.Sprintf("%s⏱ timeout %s%s%s%s", head, roundDur(f.Duration), key, faults, retry)
	case f.Outcome == history.OutcomeOK && f.Deduplicated:
		return markDedup, fmt.Sprintf("%s↺ deduplicated by key → %s  %s%s%s", head, responseRef(f), roundDur(f.Duration), key, faults)
	case f.Outcome == history.OutcomeOK:
		return markOK, fmt.Sprintf("%s✓ %d → %s  %s%s%s", head, f.Response.Status, responseRef(f), roundDur(f.Duration), key, faults)
	}
	status := 0
	if f.Response != nil {
		status = f.Response.Status
	}
	return markFailed, fmt.Sprintf("%s✖ %s %d  %s%s%s%s", head, f.Outcome, status, roundDur(f.Duration), key, faults, retry)
}

func responseRef(f *history.Event) string {
	if f.Response == nil {
		return ""
	}
	return resultRef(f.Response.Body)
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

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Millisecond:
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}

// row is one visible line of the flattened tree.
type row struct {
	n     *node
	depth int
}

// flatten lists the rows to show: collapsed nodes hide their children, and
// finalOnly keeps only each step's last attempt, the way many engines
// record history.
func (t *trace) flatten(collapsed map[string]bool, finalOnly bool) []row {
	var out []row
	var walk func(ns []*node, depth int)
	walk = func(ns []*node, depth int) {
		lastAttempt := -1
		if finalOnly {
			for i, n := range ns {
				if n.kind == kindAttempt {
					lastAttempt = i
				}
			}
		}
		for i, n := range ns {
			if finalOnly && n.kind == kindAttempt && i != lastAttempt {
				continue
			}
			out = append(out, row{n: n, depth: depth})
			if len(n.children) > 0 && !collapsed[n.id] {
				walk(n.children, depth+1)
			}
		}
	}
	walk(t.roots, 0)
	return out
}
