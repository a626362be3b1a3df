package check

import (
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
)

// --- one execution ------------------------------------------------------

type reach int

const (
	reachNo reach = iota
	reachMaybe
	reachYes
)

type attempt struct {
	step    string
	n       int
	run     int
	key     string
	args    string
	points  []fault.Point
	outcome history.Outcome // "" until AttemptFinished
	// crash is set when the worker died with this attempt open.
	crashed    bool
	crashPoint fault.Point
	external   bool
	// op is the operation its request names, when it had a request (req).
	op       string
	req      bool
	finished bool
}

func (a *attempt) point() fault.Point {
	if len(a.points) == 0 {
		return ""
	}
	return a.points[0]
}

func (a *attempt) has(p fault.Point) bool {
	for _, x := range a.points {
		if x == p {
			return true
		}
	}
	return false
}

// noRequest reports whether the attempt's request never took effect: the
// worker died before sending it, or the service dropped it or failed before
// acting.
func (a *attempt) noRequest() bool {
	return a.has(fault.CrashBeforeCall) || a.has(fault.TimeoutBeforeEffect) || a.has(fault.ServerError)
}

// reach says whether the attempt's request took effect at the provider.
func (a *attempt) reach() reach {
	switch {
	case a.noRequest():
		return reachNo
	case a.outcome == history.OutcomeOK:
		return reachYes
	case a.outcome == history.OutcomeTimeout && a.has(fault.TimeoutAfterEffect):
		return reachYes
	case a.outcome == history.OutcomeRejected || a.outcome == history.OutcomeMismatch || a.outcome == history.OutcomeConflict:
		return reachNo
	case a.outcome == "" && a.crashed && !a.external && a.crashPoint == fault.CrashAfterEffect && a.has(fault.CrashAfterEffect):
		return reachYes
	}
	return reachMaybe // an unplanned timeout or error, or a kill with the request in flight
}

// explained reports whether the attempt ended the way its planned fault
// (or the lack of one) says it must: then the exact model applies.
func (a *attempt) explained() bool {
	if len(a.points) > 1 {
		return false
	}
	switch a.point() {
	case "", fault.SlowResponse, fault.CrashAfterRecord:
		return a.outcome == history.OutcomeOK
	case fault.TimeoutBeforeEffect, fault.TimeoutAfterEffect:
		return a.outcome == history.OutcomeTimeout
	case fault.ServerError:
		return a.outcome == history.OutcomeError
	case fault.CrashBeforeCall, fault.CrashAfterEffect:
		return a.outcome == "" && a.crashed && !a.external && a.crashPoint == a.point()
	}
	return false
}

type intent struct {
	steps   []string
	tool    string
	kind    scenario.Kind
	op      string // send, upsert, create, get ("" if never attempted)
	opAt    int    // 1 + the index of the attempt op is from
	done    bool
	unknown bool
	effects []Effect
	agg     intentAgg
}

// intentAgg is what the check keeps of an intent's attempts, gathered in
// their order (aggregate): their number and faults, whether its key was
// forgotten, and the slots of the range model.
type intentAgg struct {
	attempts int
	faults   map[fault.Point]int
	// first is each key's first effect, by the world clock; expired is set
	// once a later effect under it came after the retention.
	first   map[string]time.Time
	expired bool
	// slots are the range model's distinct effects that may have happened
	// (true: certainly happened); attempts that are their own slot (no
	// key, not an upsert) are only counted, in unique.
	slots          map[slot]bool
	uniqueHi       int
	uniqueLo       int
	keyTime        map[string]time.Time
	epoch          map[string]int
	dedupe, ranged bool
}

// callKey is a call's tool and canonical arguments: calls that agree on
// both are one intent.
type callKey struct{ tool, args string }

// slot is one of the range model's distinct effects: a key in one of its
// epochs (the times the provider forgot it), an upsert's fields, or an
// attempt started more than once.
type slot struct {
	kind slotKind
	s    string // the key, the fields, or the step
	n    int    // the key's epoch, or the attempt's number
}

type slotKind uint8

const (
	slotKey slotKind = iota
	slotFields
	slotAttempt
)

// stepAgg is what the check keeps of a step's attempts before the
// intents are final: the flags and operation they give their intent.
type stepAgg struct {
	done, unknown bool
	op            string
	opAt          int
}

func (i *intent) read() bool { return i.kind == scenario.KindRead || i.op == "get" }
