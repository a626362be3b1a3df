package otlp

import "unsafe"

// What a file import keeps of its spans for the audit, across its writes.
//
// An execution whose spans come in several chunks (a BatchSpanProcessor
// interleaves concurrent traces: nearly every one, when lines are
// shuffled) cannot be audited on one chunk's spans in hand (handJob); it
// used to be read back from the database at the end, every span of it
// fetched and decoded again. A file import keeps instead, for each
// execution that is its own (no record, its traces new to the database),
// what the duplicate flag's fast path reads of its spans (flagSpan), within
// a budget of bytes: the audit at the end runs on that. Over the budget,
// the executions a chunk held whole (audited in hand, or with nothing to
// audit) and no later chunk added to are let go first, then those touched
// longest ago; one let go whose spans go on later is read back, as before.

// keptBudget is how many bytes of memory a file import keeps for the audit
// (flagSpans and the strings they hold): the tool spans of a 50 000-span
// file of the usual agent's traces interleaved take some 14 MB.
const keptBudget = 24 << 20

// flagSpanSize is a flagSpan's size, beside its strings'.
const flagSpanSize = int(unsafe.Sizeof(flagSpan{}))

// keptCost is the memory f holds.
func keptCost(f *flagSpan) int {
	return flagSpanSize + len(f.trace) + len(f.span) + len(f.parent) + len(f.tool) + len(f.args.key) +
		len(f.args.val) + len(f.callID) + len(f.key)
}

// keptSpans is a writer's spans kept for the audit, by execution.
type keptSpans struct {
	budget, bytes int
	byExec        map[string]*keptExec
	// touched lists the executions in the order writes added to them, the
	// write with each: the front is let go first. An entry whose execution
	// was added to again later is stale, and skipped. done lists likewise
	// those found done with (markDone), let go before any in touched.
	touched, done []keptTouch
}

// keptExec is what is kept of one execution.
type keptExec struct {
	exec  string
	spans []flagSpan
	// unsure says a span of it leaves the answer to the fold.
	unsure bool
	// n counts the spans of the execution the writer stored since the
	// entry was made: all of them, flagReads' or not. The kept spans are
	// the execution's whole when it equals the writer's count (summary.n):
	// an entry let go and made again by a later write holds less.
	n     int
	bytes int
	last  int32 // the write that last added to it
	// foreign says the execution held, or may hold, spans that are not
	// this import's (a record, a trace the database held): read it back.
	foreign bool
	// done says the write after the last that added to it did not.
	done bool
}

type keptTouch struct {
	exec  string
	write int32
}

func newKeptSpans(budget int) *keptSpans {
	return &keptSpans{budget: budget, byExec: map[string]*keptExec{}}
}

// add keeps what write number write stored of h's execution (h.kept, of
// h.stored spans stored), then lets go of executions while the budget is
// exceeded.
func (k *keptSpans) add(h *handExec, write int32) {
	e := k.byExec[h.exec]
	if e == nil {
		e = &keptExec{exec: h.exec}
		k.byExec[e.exec] = e
	}
	e.last, e.done = write, false
	e.n += h.stored
	k.touched = append(k.touched, keptTouch{e.exec, write})
	if h.foreign || e.foreign {
		k.bytes -= e.bytes
		e.foreign, e.spans, e.bytes = true, nil, 0
	} else {
		if e.spans == nil {
			// An execution cut across chunks comes a few spans a chunk:
			// room for the usual trace's tool spans at once.
			e.spans = make([]flagSpan, 0, max(len(h.kept), 8))
		}
		e.spans = append(e.spans, h.kept...)
		e.unsure = e.unsure || h.unsure
		add := 0
		for i := range h.kept {
			add += keptCost(&h.kept[i])
		}
		e.bytes += add
		k.bytes += add
	}
	for k.bytes > k.budget && len(k.done) > 0 {
		k.done = k.letGo(k.done, true)
	}
	for k.bytes > k.budget && len(k.touched) > 0 {
		k.touched = k.letGo(k.touched, false)
	}
}

// markDone notes that exec, which write number write added to last, got
// nothing from the next write: a file whose traces come together is done
// with it.
func (k *keptSpans) markDone(exec string, write int32) {
	if e := k.byExec[exec]; e != nil && e.last == write && !e.done {
		e.done = true
		k.done = append(k.done, keptTouch{e.exec, write})
	}
}

// letGo lets go of the execution at the front of q, unless the entry is
// stale (the execution was added to since, or, from done, is not done),
// and returns the rest of q.
func (k *keptSpans) letGo(q []keptTouch, done bool) []keptTouch {
	t := q[0]
	q[0] = keptTouch{}
	if e := k.byExec[t.exec]; e != nil && e.last == t.write && (e.done || !done) {
		k.bytes -= e.bytes
		delete(k.byExec, t.exec)
	}
	return q[1:]
}

// whole returns exec's kept spans when they are all the flag's fast path
// reads of its n stored spans, the writer's count of them.
func (k *keptSpans) whole(exec string, n int) ([]flagSpan, bool) {
	if k == nil {
		return nil, false
	}
	e := k.byExec[exec]
	if e == nil || e.foreign || e.unsure || e.n != n {
		return nil, false
	}
	return e.spans, true
}
