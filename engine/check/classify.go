package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/plural"
)

// finish attaches the ledger's effects, classes every intent, and holds it
// to the model.
func (w *walk) finish(effects []Effect) ExecResult {
	var res ExecResult
	// Service and Seq name one ledger entry; stable all the same, as
	// sort.Slice was on the few effects of an execution.
	slices.SortStableFunc(effects, func(a, b Effect) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	for _, e := range effects {
		in := w.byStep[e.Attr.Step]
		a := w.kept[attemptID{e.Attr.Step, e.Attr.Attempt}]
		var why string
		switch {
		case in == nil:
			why = fmt.Sprintf("%s effect %s attributed to step %q, which this execution never scheduled", e.Service, e, e.Attr.Step)
		case a == nil:
			why = fmt.Sprintf("%s effect %s attributed to attempt %d of %s, which never started", e.Service, e, e.Attr.Attempt, e.Attr.Step)
		case a.noRequest():
			why = fmt.Sprintf("%s effect %s from attempt %d of %s, whose request never took effect (%s)", e.Service, e, a.n, a.step, a.point())
		case in.read():
			why = fmt.Sprintf("%s effect %s from a read", e.Service, e)
		}
		if why != "" {
			res.Operations = append(res.Operations, Operation{Execution: w.x.ID, Scenario: w.x.Scenario, Policy: w.policy,
				Steps: []string{e.Attr.Step}, Effects: 1, Refs: []string{e.String()}, Class: Unexpected})
			w.violate("unexpected", e.Attr.Step, why)
			continue
		}
		if w.effects == nil {
			if w.space != nil {
				w.effects, w.space.effects = orMade(w.space.effects), nil
			} else {
				w.effects = map[*attempt][]Effect{}
			}
		}
		w.effects[a] = append(w.effects[a], e)
		in.effects = append(in.effects, e)
	}
	if err := w.aggregate(); err != nil {
		w.violate("durability", "", fmt.Sprintf("history could not be read again: %v", err))
	}

	pred, exact := w.predict()
	var predicted map[*intent]int
	var seen map[string]bool
	if w.space != nil {
		predicted, seen = w.space.predicted, w.space.scheduled
	}
	predicted = scratch(predicted)
	if exact {
		seen = scratch(seen)
		for _, in := range w.intents {
			for _, s := range in.steps {
				predicted[in] += pred.Effects[s]
				seen[s] = true
			}
		}
		for _, s := range sortedSteps(pred.Effects) {
			if !seen[s] && pred.Effects[s] > 0 {
				w.violate("model", s, fmt.Sprintf("the model expects %s of %s, which the history never scheduled", plural.Count(pred.Effects[s], "effect"), s))
			}
		}
		if pred.Status != w.x.Status {
			w.violate("status", "", fmt.Sprintf("ended %s; the model expects %s", w.x.Status, pred.Status))
		}
	}
	for _, in := range w.intents {
		op := w.classify(in)
		if exact {
			op.Model, op.Predicted = ModelExact, Range{predicted[in], predicted[in]}
		} else {
			op.Model, op.Predicted = ModelRange, w.rangeOf(in)
		}
		if op.Effects < op.Predicted.Lo || op.Effects > op.Predicted.Hi {
			op.Departure = fmt.Sprintf("%s; the %s model expects %s", plural.Count(op.Effects, "effect"), op.Model, op.Predicted)
			w.violate("model", strings.Join(op.Steps, ","), op.Departure+effectList(op.Refs))
		}
		step := strings.Join(op.Steps, ",")
		if w.policy.Keys && w.policy.Journal {
			switch op.Class {
			case Lost:
				w.violate("lost", step, "recorded as done, but the ledger holds no effect")
			case Duplicated:
				if !(op.KeyExpired && op.Departure == "") {
					w.violate("duplicated", step, fmt.Sprintf("%d effects for one intent%s", op.Effects, effectList(op.Refs)))
				}
			}
		}
		res.Operations = append(res.Operations, op)
	}
	res.Violations = w.vio
	res.LastSeq = w.lastSeq
	res.Kills = w.kills.planned + w.kills.external + w.kills.host
	return res
}

func effectList(refs []string) string {
	if len(refs) == 0 {
		return ""
	}
	return " (" + strings.Join(refs, ", ") + ")"
}

// classify counts an intent's distinct effects and classes it.
func (w *walk) classify(in *intent) Operation {
	op := Operation{Execution: w.x.ID, Scenario: w.x.Scenario, Policy: w.policy, Steps: in.steps, Tool: in.tool,
		Kind: in.kind, Attempts: in.agg.attempts, Done: in.done, Unknown: in.unknown}
	var ids map[effectID]bool
	if w.space != nil {
		ids = w.space.ids
	}
	ids = scratch(ids)
	for _, e := range in.effects {
		if !ids[e.identity()] {
			ids[e.identity()] = true
			op.Refs = append(op.Refs, e.String())
		}
	}
	op.Effects = len(ids)
	op.Faults = in.agg.faults
	op.KeyExpired = in.agg.expired
	switch {
	case in.read():
		if in.done {
			op.Class = OK
		} else {
			op.Class = Failed
		}
	case op.Effects > 1:
		op.Class = Duplicated
	case op.Effects == 1 && (in.unknown || !in.done):
		op.Class = Recovered
	case op.Effects == 1:
		op.Class = OK
	case in.done:
		op.Class = Lost
	default:
		op.Class = Failed
	}
	return op
}

// retention is the key retention of the execution's scenario.
func (w *walk) retention() time.Duration {
	if w.opts.Resolve != nil {
		if p, ok := w.opts.Resolve(w.x.Scenario); ok && p.Scenario != nil && p.Scenario.Policy.Retention > 0 {
			return p.Scenario.Policy.Retention.D()
		}
	}
	return world.DefaultRetention
}

// predict runs the exact model when it applies: the scenario is known and
// modelled, the execution finished, and nothing but its planned faults
// disturbed it.
func (w *walk) predict() (Prediction, bool) {
	if w.opts.Resolve == nil || len(w.disturbed) > 0 || !w.x.Status.Finished() {
		return Prediction{}, false
	}
	if !w.explainedAll {
		return Prediction{}, false
	}
	plan, ok := w.opts.Resolve(w.x.Scenario)
	if !ok {
		return Prediction{}, false
	}
	pred, err := Predict(w.judgedExpiry(plan), w.policy, w.injections)
	if err != nil {
		return Prediction{}, false
	}
	return pred, true
}

// rangeOf bounds an intent's effects from its history (aggregate
// gathered it): each attempt that certainly took effect adds one unless an
// earlier one with the same key (still remembered) or, for an upsert, the
// same fields already did; each attempt whose outcome is unknown may add
// one.
func (w *walk) rangeOf(in *intent) Range {
	if in.read() {
		return Range{}
	}
	rg := Range{Lo: in.agg.uniqueLo, Hi: in.agg.uniqueHi}
	for _, yes := range in.agg.slots {
		rg.Hi++
		if yes {
			rg.Lo++
		}
	}
	return rg
}

// dedupes reports whether the scenario's mail tool honours keys.
func (w *walk) dedupes() bool {
	if w.opts.Resolve != nil {
		if p, ok := w.opts.Resolve(w.x.Scenario); ok && p.Scenario != nil {
			for _, t := range p.Scenario.Tools {
				if t.Service == "mail" && !t.Deduplicates() {
					return false
				}
			}
		}
	}
	return true
}

// aggregate goes over the attempts once more, in Seq order, now that every
// intent, its operation and the ledger's effects are known, and gathers
// what classify and rangeOf need of them (intentAgg). The attempts are in
// memory (order) unless there were more than keep: then the history is
// read again, its attempts taken as they settle and let go.
func (w *walk) aggregate() error {
	dedupe, ret := w.dedupes(), w.retention()
	var seen map[attemptID]int
	if w.space != nil {
		seen = w.space.seen
	}
	seen = scratch(seen)
	add := func(a *attempt) {
		in := w.byStep[a.step]
		if in == nil {
			return
		}
		ag := &in.agg
		ag.attempts++
		for _, p := range a.points {
			if ag.faults == nil {
				ag.faults = map[fault.Point]int{}
			}
			ag.faults[p]++
		}
		id := attemptID{a.step, a.n}
		var fx []Effect
		if k := w.kept[id]; k != nil {
			// The effects went to the last attempt of the id, as the
			// index of finish has it.
			seen[id]++
			if k == a || seen[id] == max(w.occurs[id], 1) {
				fx = w.effects[k]
			}
		}
		if a.key != "" {
			for _, e := range fx {
				if ag.first == nil {
					ag.first = fromPool(w, func(s *walkSpace) *mapPool[string, time.Time] { return &s.times })
				}
				t, ok := ag.first[a.key]
				if !ok {
					ag.first[a.key] = e.Time
					continue
				}
				if e.Time.Sub(t) > ret {
					ag.expired = true
				}
			}
		}
		if in.read() {
			return
		}
		r := a.reach()
		if r == reachNo {
			return
		}
		var sl slot
		switch {
		case a.key != "" && dedupe:
			if ag.epoch == nil {
				ag.epoch = fromPool(w, func(s *walkSpace) *mapPool[string, int] { return &s.epochs })
				ag.keyTime = fromPool(w, func(s *walkSpace) *mapPool[string, time.Time] { return &s.times })
			}
			for _, e := range fx {
				if t, ok := ag.keyTime[a.key]; ok && e.Time.Sub(t) > ret {
					ag.epoch[a.key]++
				}
				ag.keyTime[a.key] = e.Time
			}
			sl = slot{slotKey, a.key, ag.epoch[a.key]}
		case in.op == "upsert":
			sl = slot{slotFields, a.args, 0}
		case w.occurs[id] == 0:
			// An attempt started once is a slot of its own.
			ag.uniqueHi++
			if r == reachYes {
				ag.uniqueLo++
			}
			return
		default:
			sl = slot{slotAttempt, a.step, a.n}
		}
		if ag.slots == nil {
			ag.slots = fromPool(w, func(s *walkSpace) *mapPool[slot, bool] { return &s.slots })
		}
		ag.slots[sl] = ag.slots[sl] || r == reachYes
	}
	if !w.capped {
		for _, a := range w.order {
			add(a)
		}
		return nil
	}
	return w.replay(add)
}

// replay reads the history again and hands each attempt, in Seq order, to
// fn once it has settled (all that are left at the end), keeping only the
// attempts not yet settled.
func (w *walk) replay(fn func(*attempt)) error {
	t := trace.New(w.x.ID)
	t.Stream()
	crashes := map[int]*trace.Note{}
	var queue []*trace.Attempt
	same := func(s string) string { return s }
	take := func(all bool) {
		i := 0
		for ; i < len(queue); i++ {
			ta := queue[i]
			if !all && !ta.Finished && !ta.Crashed {
				break
			}
			fn(recordOf(ta, crashes, same))
			t.Forget(ta)
		}
		queue = append(queue[:0], queue[i:]...)
	}
	err := w.reread(func(ev history.Event) {
		prev := t.Attempt(ev.Step, ev.Attempt)
		history.Apply(t, ev)
		switch ev.Type {
		case history.AttemptStarted:
			if a := t.Attempt(ev.Step, ev.Attempt); a != nil && a != prev {
				queue = append(queue, a)
			}
		case history.WorkerCrashed:
			for _, r := range t.Runs {
				if n := r.End; n != nil && n.Seq == ev.Seq && n.Kind == trace.RunCrashed {
					crashes[r.Number] = n
				}
			}
		}
		take(false)
	})
	take(true)
	return err
}
