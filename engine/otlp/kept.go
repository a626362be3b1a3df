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
// what the duplicate flag's fast path reads of its spans (flagSpan), from
// the write that first held some to the last, within a budget of bytes:
// the audit at the end runs on that. An execution a write holds whole
// (audited in hand, or with nothing to audit) is kept only if one of the
// next few writes adds to it, and over the budget those touched longest
// ago are let go; one whose spans go on later than that is read back, as
// before.

// keptBudget is how many bytes of memory a file import keeps for the audit
// (flagSpans and the strings they hold): the tool spans of a 50 000-span
// file of the usual agent's traces interleaved take some 12 MB.
const keptBudget = 16 << 20

// keptWrites is how many writes back an execution that a write held whole
// is found again when a later write adds to it: in a file whose traces are
// interleaved across lines, a trace's spans come a write or two apart; in
// one whose traces come together, most executions a write holds are whole
// and done with, and keeping each would fill the budget for nothing,
// holding that much more memory under the import's soft limit
// (BENCHMARKS.md, 8a, 8b).
const keptWrites = 8

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
	// recent are the executions the last keptWrites writes stored spans
	// of, the last write's last, with what each stored (handExec).
	recent []map[string]*handExec
	// touched lists the executions in the order writes added to them, the
	// write with each: the front is let go first. An entry whose execution
	// was added to again later, or let go, is stale, and skipped.
	touched []keptTouch
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
}

type keptTouch struct {
	exec  string
	write int32
}

func newKeptSpans(budget int) *keptSpans {
	return &keptSpans{budget: budget, byExec: map[string]*keptExec{}}
}

// wrote notes what a write stored, by execution, before add is called for
// the executions it added to: the last keptWrites writes' are kept, or
// with spread false (a file whose traces come together: the executions a
// write cuts go on in the next) only the last one's.
func (k *keptSpans) wrote(hand map[string]*handExec, spread bool) {
	keep := keptWrites
	if !spread {
		keep = 2
	}
	if n := len(k.recent); n >= keep {
		copy(k.recent, k.recent[n-keep+1:])
		clear(k.recent[keep-1:])
		k.recent = k.recent[:keep-1]
	}
	k.recent = append(k.recent, hand)
}

// add keeps what write number write stored of h's execution (h.kept, of
// h.stored spans stored), which an earlier write stored some of: with what
// is kept of it, or else with what one of the last keptWrites writes
// stored of it, if that write held all of it. Then it lets go of the
// executions touched longest ago while the budget is exceeded.
func (k *keptSpans) add(h *handExec, write int32) {
	e := k.byExec[h.exec]
	if e == nil {
		var first *handExec
		for i := len(k.recent) - 2; i >= 0 && first == nil; i-- { // the last is this write's
			first = k.recent[i][h.exec]
		}
		if first == nil || first.dead {
			return // what was stored of it before is not kept: read it back
		}
		e = &keptExec{exec: h.exec}
		k.byExec[e.exec] = e
		k.keep(e, first)
	}
	e.last = write
	k.touched = append(k.touched, keptTouch{e.exec, write})
	k.keep(e, h)
	for k.bytes > k.budget && len(k.touched) > 0 {
		t := k.touched[0]
		k.touched[0] = keptTouch{}
		k.touched = k.touched[1:]
		if e := k.byExec[t.exec]; e != nil && e.last == t.write {
			k.bytes -= e.bytes
			delete(k.byExec, t.exec)
		}
	}
}

// keep adds to e what a write stored of its execution (h).
func (k *keptSpans) keep(e *keptExec, h *handExec) {
	e.n += h.stored
	if h.foreign || e.foreign {
		k.bytes -= e.bytes
		e.foreign, e.spans, e.bytes = true, nil, 0
		return
	}
	if e.spans == nil {
		// An execution cut across chunks comes a few spans a chunk:
		// room for the usual trace's tool spans at once.
		e.spans = make([]flagSpan, 0, max(2*len(h.kept), 8))
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
