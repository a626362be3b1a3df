// Package timeline lays a folded execution out on one time axis: a lane
// per tool call with its attempts as bars from start to answer, the
// deadline where a timeout fired, backoff as a gap, a crash as ☠ with the
// time no worker ran shaded, and a lane per provider with each effect as a
// tick linked to the attempt that caused it. It makes the article's order
// in time visible: the provider delivered, then the caller's deadline
// passed, then the retry delivered again.
//
// Build reads a trace.Trace once into lanes of items in absolute time;
// Render draws a window of it at a width as rows of text. Both are pure:
// no screen, no clock, no I/O. The explorer's Timeline view, `show
// --timeline` and the Markdown handout all draw the same rows.
package timeline

import (
	"fmt"
	"sort"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/dur"
)

// LaneKind tells lanes apart.
type LaneKind int

// The lanes, in the order they are drawn.
const (
	// LaneCall is one tool call's attempts (over every run).
	LaneCall LaneKind = iota
	// LaneProvider is one provider's effects (mail, crm, or a tool's
	// inferred effects in an imported trace).
	LaneProvider
	// LaneWorkers is the runs: when a worker ran, died, and was absent.
	LaneWorkers
)

// ItemKind is what an item on a lane stands for.
type ItemKind int

// The items.
const (
	// ItemAttempt is an attempt, a bar from its start to its answer (or to
	// the crash that ended it, or to the trace's end while in flight).
	ItemAttempt ItemKind = iota
	// ItemBackoff is the wait before a retry.
	ItemBackoff
	// ItemNotKept stands for attempts the source did not keep.
	ItemNotKept
	// ItemReplay is a call answered from the journal: no request sent.
	ItemReplay
	// ItemEffect is a provider's effect, linked to its attempt.
	ItemEffect
	// ItemRun is a worker's lifetime.
	ItemRun
	// ItemIdle is time with no worker running.
	ItemIdle
)

// Item is one thing on a lane, in absolute time. An instant has To == From.
type Item struct {
	Kind     ItemKind
	From, To time.Time
	// Mark is the glyph drawn at the item's end (✓, ◆, ⏱, ☠, ⋯, ⟲, •).
	Mark trace.Mark
	// Call and N name the attempt an item belongs to (an effect's cause);
	// N is 0 for items of no one attempt.
	Call string
	N    int
	// Outcome is an attempt's, when it was answered.
	Outcome trace.Outcome
	// Text says the item in words, for the moments list.
	Text string
}

// Lane is one row of the picture.
type Lane struct {
	Kind  LaneKind
	Label string
	// Items are in order of From.
	Items []Item
}

// Timeline is an execution laid out in time.
type Timeline struct {
	Execution string
	// Start and End bound everything on it.
	Start, End time.Time
	Lanes      []Lane
	// Attempts are the attempts (and stand-ins for attempts not kept) in
	// order of start, for a cursor to step through: each is the lane index
	// and the item index in it.
	Attempts []Ref
}

// Ref names one item: Lane is its index in Lanes, Item in that lane's Items.
type Ref struct{ Lane, Item int }

// Item is the item r names.
func (tl *Timeline) Item(r Ref) Item { return tl.Lanes[r.Lane].Items[r.Item] }

// Options say what the trace alone does not.
type Options struct {
	// Inferred are the attempts of an imported trace whose side effects
	// are inferred (no provider recorded them): each gets a tick on its
	// tool's "inferred" lane at its answer.
	Inferred []AttemptRef
}

// AttemptRef names an attempt of a call.
type AttemptRef struct {
	Call string
	N    int
}

// Build lays t out. It reads t and keeps nothing of it.
func Build(t *trace.Trace, opt Options) *Timeline {
	tl := &Timeline{Execution: t.Execution, Start: t.Started, End: t.Last}
	b := builder{tl: tl, calls: map[string]int{}, providers: map[string]int{}, attempts: map[AttemptRef]*trace.Attempt{}}
	for _, r := range t.Runs {
		b.widen(r.Started)
		b.widen(r.Last)
		for _, n := range r.Nodes {
			b.node(n)
		}
	}
	b.workers(t)
	b.inferred(opt.Inferred)
	// Provider lanes go under the calls, the workers' lane last.
	sort.SliceStable(tl.Lanes, func(i, j int) bool { return tl.Lanes[i].Kind < tl.Lanes[j].Kind })
	for li := range tl.Lanes {
		items := tl.Lanes[li].Items
		sort.SliceStable(items, func(i, j int) bool { return items[i].From.Before(items[j].From) })
		for ii, it := range items {
			if it.Kind == ItemAttempt || it.Kind == ItemNotKept {
				tl.Attempts = append(tl.Attempts, Ref{li, ii})
			}
		}
	}
	sort.SliceStable(tl.Attempts, func(i, j int) bool {
		return tl.Item(tl.Attempts[i]).From.Before(tl.Item(tl.Attempts[j]).From)
	})
	return tl
}

// builder holds what Build needs while it walks the trace.
type builder struct {
	tl        *Timeline
	calls     map[string]int // call id → lane
	providers map[string]int // service → lane
	attempts  map[AttemptRef]*trace.Attempt
}

// widen stretches the timeline's bounds to hold at.
func (b *builder) widen(at time.Time) {
	if at.IsZero() {
		return
	}
	if b.tl.Start.IsZero() || at.Before(b.tl.Start) {
		b.tl.Start = at
	}
	if at.After(b.tl.End) {
		b.tl.End = at
	}
}

// lane is the index of the lane of key, made (labelled label) if new.
func (b *builder) lane(index map[string]int, key string, kind LaneKind, label string) int {
	if i, ok := index[key]; ok {
		return i
	}
	b.tl.Lanes = append(b.tl.Lanes, Lane{Kind: kind, Label: label})
	index[key] = len(b.tl.Lanes) - 1
	return len(b.tl.Lanes) - 1
}

func (b *builder) add(lane int, it Item) {
	b.widen(it.From)
	b.widen(it.To)
	b.tl.Lanes[lane].Items = append(b.tl.Lanes[lane].Items, it)
}

// node lays out one node of a run and what it holds.
func (b *builder) node(n trace.Node) {
	switch v := n.(type) {
	case *trace.Turn:
		for _, c := range v.Nodes {
			b.node(c)
		}
	case *trace.Call:
		li := b.lane(b.calls, v.Call, LaneCall, v.Tool+" "+v.Call)
		for _, a := range v.Attempts {
			b.attempt(li, a)
		}
	case *trace.Replay:
		li := b.lane(b.calls, v.Call, LaneCall, v.Tool+" "+v.Call)
		b.add(li, Item{Kind: ItemReplay, From: v.Time, To: v.Time, Mark: trace.MarkReplay, Call: v.Call,
			Text: fmt.Sprintf("%s replayed from the journal (run %d)", v.Call, v.ResultRun)})
	}
}

// attempt lays out an attempt: its bar, its backoff, its effects.
func (b *builder) attempt(li int, a *trace.Attempt) {
	b.attempts[AttemptRef{a.Call, a.N}] = a
	if a.NotKept > 0 {
		b.add(li, Item{Kind: ItemNotKept, From: a.Started, To: a.Started, Mark: trace.MarkNotKept, Call: a.Call, N: a.N,
			Text: fmt.Sprintf("%s: %s not kept by the source", a.Call, attemptsWord(a.N-a.NotKept+1, a.N))})
		return
	}
	end := a.Ended
	switch {
	case a.Finished && end.IsZero():
		end = a.Started.Add(a.Duration)
	case !a.Finished:
		end = b.tl.End // in flight, or its worker died: cut below
	}
	b.add(li, Item{Kind: ItemAttempt, From: a.Started, To: end, Mark: a.Mark(), Call: a.Call, N: a.N,
		Outcome: a.Outcome, Text: attemptText(a)})
	if a.Retry > 0 && !a.RetryAt.IsZero() {
		b.add(li, Item{Kind: ItemBackoff, From: a.RetryAt, To: a.RetryAt.Add(a.Retry), Mark: trace.MarkRetry, Call: a.Call, N: a.N,
			Text: fmt.Sprintf("%s #%d backoff %s", a.Call, a.N, dur.Text(a.Retry))})
	}
	for _, fx := range a.Effects {
		at := fx.At
		if at.IsZero() {
			at = end
		}
		pi := b.lane(b.providers, fx.Service, LaneProvider, fx.Service)
		b.add(pi, Item{Kind: ItemEffect, From: at, To: at, Mark: trace.MarkNone, Call: a.Call, N: a.N,
			Text: fmt.Sprintf("%s %s %s (%s #%d)", fx.Service, effectWord(fx.Service), firstOf(fx.ID, fx.Target), a.Call, a.N)})
	}
}

// workers lays out the runs: each worker's lifetime, its death, and the
// time before a run when none ran. An attempt its worker's death ended is
// cut at the death.
func (b *builder) workers(t *trace.Trace) {
	if len(t.Runs) == 0 {
		return
	}
	idx := map[string]int{}
	li := b.lane(idx, "workers", LaneWorkers, "workers")
	for i, r := range t.Runs {
		end := r.Last
		mark := r.Mark()
		if r.End != nil && !r.End.Time.IsZero() {
			end = r.End.Time
		}
		text := fmt.Sprintf("run %d", r.Number)
		if r.Crashed() {
			text += fmt.Sprintf(" killed (exit %d)", r.End.ExitCode)
			b.cutCrashed(r, end)
		}
		if i > 0 && r.Idle > 0 {
			b.add(li, Item{Kind: ItemIdle, From: r.Started.Add(-r.Idle), To: r.Started, Mark: trace.MarkGap,
				Text: fmt.Sprintf("no worker running for %s", r.Idle)})
		}
		b.add(li, Item{Kind: ItemRun, From: r.Started, To: end, Mark: mark, Text: text})
	}
}

// cutCrashed ends the bars of the attempts a run's death ended at it.
func (b *builder) cutCrashed(r *trace.Run, at time.Time) {
	for _, lane := range b.tl.Lanes {
		for i := range lane.Items {
			it := &lane.Items[i]
			a := b.attempts[AttemptRef{it.Call, it.N}]
			if it.Kind == ItemAttempt && a != nil && a.Run == r.Number && a.Crashed && !a.Finished && it.To.After(at) {
				it.To = at
			}
		}
	}
}

// inferred puts the inferred effects of an imported trace's attempts on
// a lane per tool.
func (b *builder) inferred(refs []AttemptRef) {
	for _, ref := range refs {
		a := b.attempts[ref]
		if a == nil {
			continue
		}
		at := a.Ended
		if at.IsZero() {
			at = a.Started
		}
		pi := b.lane(b.providers, "inferred "+a.Tool, LaneProvider, "inferred "+a.Tool)
		b.add(pi, Item{Kind: ItemEffect, From: at, To: at, Call: a.Call, N: a.N,
			Text: fmt.Sprintf("%s: effect inferred (%s #%d)", a.Tool, a.Call, a.N)})
	}
}

// attemptText says an attempt in words: how it ended.
func attemptText(a *trace.Attempt) string {
	s := fmt.Sprintf("%s #%d %s %s", a.Call, a.N, a.Mark().Glyph(), a.Mark().Word())
	switch {
	case a.Finished && (a.Outcome == trace.OutcomeTimeout):
		s = fmt.Sprintf("%s #%d %s deadline passed after %s", a.Call, a.N, trace.MarkTimeout.Glyph(),
			dur.Text(a.Duration.Round(time.Millisecond)))
		if a.Ambiguous() {
			s += " (the provider had acted: " + trace.MarkAmbiguous.Glyph() + ")"
		}
	case a.Crashed && !a.Finished:
		s = fmt.Sprintf("%s #%d %s worker died with the request out", a.Call, a.N, trace.MarkKilled.Glyph())
	}
	return s
}

func attemptsWord(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("attempt #%d", hi)
	}
	return fmt.Sprintf("attempts #%d–#%d", lo, hi)
}

func effectWord(service string) string {
	if service == "mail" {
		return "delivered"
	}
	return "wrote"
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
