package check

import (
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
)

// walkSpace is the space of a worker's walks, reused from one short
// history to the next: the fold's trace and the walk's maps and lists are
// cleared instead of made again for each of a million executions. Only
// what no verdict keeps is reused: the intents, attempts and violations a
// walk makes are its own.
type walkSpace struct {
	w       walk
	t       *trace.Trace
	byStep  map[string]*intent
	byCall  map[callKey]*intent
	strs    map[string]string
	steps   map[string]stepAgg
	intents []*intent
	order   []*attempt
	queue   []*trace.Attempt
	// The maps of the ledger's effects, made for the first history that
	// has some and kept from then on (empty).
	wanted  map[attemptID]bool
	kept    map[attemptID]*attempt
	effects map[*attempt][]Effect
	// The maps aggregate gives intents (intentAgg), which nothing keeps
	// past finish (an intent's faults, which its operation keeps, are
	// its own).
	times  mapPool[string, time.Time]
	epochs mapPool[string, int]
	slots  mapPool[slot, bool]
	// finish's and aggregate's maps of one call.
	seen      map[attemptID]int
	predicted map[*intent]int
	scheduled map[string]bool
	ids       map[effectID]bool
}

// spaceEvents bounds the histories whose walks give their space back: a
// map keeps the size its longest history grew it to, and clearing a large
// one for each short history after it would cost more than making small
// ones.
const spaceEvents = 64

// walk starts the walk of a short history in the space.
func (s *walkSpace) walk(x history.Execution, opts Options, keep int, effects []Effect) *walk {
	if s.t == nil {
		*s = walkSpace{t: trace.New(x.ID), byStep: map[string]*intent{}, byCall: map[callKey]*intent{},
			strs: map[string]string{}, steps: map[string]stepAgg{}, seen: map[attemptID]int{},
			predicted: map[*intent]int{}, scheduled: map[string]bool{}, ids: map[effectID]bool{}}
		s.t.Stream()
	} else {
		s.t.Reset(x.ID)
	}
	w := &s.w
	*w = walk{x: x, opts: opts, policy: x.Policy, byStep: s.byStep, byCall: s.byCall, t: s.t, strs: s.strs,
		keep: keep, steps: s.steps, explainedAll: true, intents: s.intents, order: s.order, queue: s.queue, space: s}
	w.want(effects)
	return w
}

// release gives w's space back for the next walk, emptied, or drops it
// after a long history. w is not used after.
func (s *walkSpace) release(w *walk) {
	if w.events > spaceEvents || len(w.order) > spaceEvents {
		*s = walkSpace{}
		return
	}
	clear(s.byStep)
	clear(s.byCall)
	clear(s.strs)
	clear(s.steps)
	clear(s.seen)
	clear(s.predicted)
	clear(s.scheduled)
	clear(s.ids)
	clear(s.wanted)
	s.times.reset()
	s.epochs.reset()
	s.slots.reset()
	if w.kept != nil {
		clear(w.kept)
		s.kept = w.kept
	}
	if w.effects != nil {
		clear(w.effects)
		s.effects = w.effects
	}
	clear(w.intents)
	clear(w.order)
	s.intents, s.order = w.intents[:0], w.order[:0]
	*w = walk{} // nothing of the history stays reachable
}

// mapPool hands out maps of one walk and empties them for the next.
type mapPool[K comparable, V any] struct {
	maps []map[K]V
	used int
}

func (p *mapPool[K, V]) get() map[K]V {
	if p.used == len(p.maps) {
		p.maps = append(p.maps, map[K]V{})
	}
	p.used++
	return p.maps[p.used-1]
}

func (p *mapPool[K, V]) reset() {
	for _, m := range p.maps[:p.used] {
		clear(m)
	}
	p.used = 0
}

// fromPool is a map from the pool of w's space, or a new one for a walk
// of its own.
func fromPool[K comparable, V any](w *walk, pool func(*walkSpace) *mapPool[K, V]) map[K]V {
	if w.space == nil {
		return map[K]V{}
	}
	return pool(w.space).get()
}

// orMade is m, or a new map when m is nil.
func orMade[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// scratch returns m emptied when it is the space's, else a new map: a map
// of one call of finish or aggregate.
func scratch[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}
