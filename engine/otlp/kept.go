package otlp

import (
	"encoding/binary"
	"maps"
	"slices"
	"unsafe"
)

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

// keptBudget is how many bytes of encoded spans a file import keeps for
// the audit (keptEncode): the tool spans of a 50 000-span file of the usual
// agent's traces interleaved take some 5 MB, and of retrylab's own export
// of 200 000 spans with its traces spread, kept from their first write,
// about 30. An execution let go is read back at the end, into the heap:
// 16 MB read 6 156 of that export's executions back and took its RSS to
// 198-201 MB, 32 MB one, at 176 MB (BENCHMARKS.md, 8j′).
const keptBudget = 32 << 20

// keptBackSpans is how far back, beyond the write before, an interleaved
// file's writes are remembered (keptSpans.recent) for an execution a write
// held whole to be found again when a later write adds to it: a
// BatchSpanProcessor spreads a trace over the few batches it exported
// while the trace ran, a write or two apart; one further back is read back
// at the end. Remembering eight writes of an import's 8 192 spans kept their
// spans in hand reachable, and the heap of a long shuffled file over the
// import's soft limit (BENCHMARKS.md, 8g′). In a file whose traces come
// together, a write's executions go on in the next one at most: only the
// write before is remembered.
const keptBackSpans = 8 << 10

// keptSpans is a writer's spans kept for the audit, by execution.
//
// The spans are kept encoded (keptEncode) in pages that hold no pointers,
// outside the collector's heap (pages): kept as flagSpans, with their
// strings, they were most of what it marked in a large interleaved
// import, and twice the memory.
type keptSpans struct {
	budget, bytes int
	byExec        map[string]*keptExec
	// pages hold the encoded spans; used is their bytes, those let go
	// included, until compact copies what is kept to new pages.
	pages pages
	used  int
	// recent are the executions the last writes stored spans
	// of, the last write's last, with what each stored (handExec).
	recent []keptWrite
	// touched lists the executions in the order writes added to them, the
	// write with each: the front is let go first. An entry whose execution
	// was added to again later, or let go, is stale, and skipped.
	touched []keptTouch
}

// keptExec is what is kept of one execution.
type keptExec struct {
	exec string
	// segs are its spans, encoded (keptEncode), a write's in each, cut
	// from the pages.
	segs [][]byte
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

// keptWrite is a write remembered: the executions it stored spans of, and
// how many spans it stored.
type keptWrite struct {
	hand  map[string]*handExec
	spans int
}

// wrote notes what a write stored (spans, by execution), before add is
// called for the executions it added to. The write before it is
// remembered, and while spread (a file whose traces interleave) those
// before that too, as long as they and the write before hold no more than
// keptBackSpans spans.
func (k *keptSpans) wrote(hand map[string]*handExec, spans int, spread bool) {
	k.recent = append(k.recent, keptWrite{hand, spans})
	keep, back := min(len(k.recent), 2), 0 // this write, the one before
	if keep == 2 {
		back = k.recent[len(k.recent)-2].spans
	}
	for keep < len(k.recent) && spread {
		w := k.recent[len(k.recent)-keep-1]
		if back += max(w.spans, 1); back > keptBackSpans { // at least one: the list is bounded
			break
		}
		keep++
	}
	if n := len(k.recent); keep < n {
		copy(k.recent, k.recent[n-keep:])
		clear(k.recent[keep:])
		k.recent = k.recent[:keep]
	}
}

// add keeps what write number write stored of h's execution (h.kept, of
// h.stored spans stored), which an earlier write stored some of: with what
// is kept of it, or else with what one of the writes remembered before it
// stored of it, if that write held all of it. Then it lets go of the
// executions touched longest ago while the budget is exceeded.
//
// A trace that joins h's execution in this write (its conversation known
// at last: h.movedFrom) brings what is kept of the execution it leaves;
// when nothing is, h's execution is read back.
func (k *keptSpans) add(h *handExec, write int32) {
	e := k.byExec[h.exec]
	if e == nil {
		var first *handExec
		if h.dead { // some of it was stored before
			first = k.remembered(h.exec)
			if (first == nil && len(h.movedFrom) == 0) || (first != nil && first.dead) {
				return // what was stored of it before is not kept: read it back
			}
		}
		e = &keptExec{exec: h.exec}
		k.byExec[e.exec] = e
		if first != nil {
			k.keep(e, first)
		}
	}
	for _, from := range h.movedFrom {
		switch old, first := k.byExec[from], k.remembered(from); {
		case old != nil:
			k.join(e, old)
		case first != nil && !first.dead:
			k.keep(e, first)
		default:
			k.keep(e, &handExec{foreign: true})
		}
	}
	e.last = write
	k.touched = append(k.touched, keptTouch{e.exec, write})
	k.keep(e, h)
	k.trim()
}

// trim lets go of the executions touched longest ago while the budget is
// exceeded.
func (k *keptSpans) trim() {
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

// keepFirsts keeps what the writes remembered before the last stored of
// the executions they were the first to store (and held whole), but for
// those kept already: once a file is found to spread its traces, a later
// write adds to most of them.
func (k *keptSpans) keepFirsts(write int32) {
	for i := len(k.recent) - 2; i >= 0; i-- {
		hand := k.recent[i].hand
		for _, exec := range slices.Sorted(maps.Keys(hand)) { // in an order that does not change
			if h := hand[exec]; !h.dead && !h.foreign && k.byExec[exec] == nil {
				k.add(h, write)
			}
		}
	}
}

// remembered is what the writes remembered before the last stored of
// exec, the latest first found; nil if none did.
func (k *keptSpans) remembered(exec string) *handExec {
	for i := len(k.recent) - 2; i >= 0; i-- { // the last is this write's
		if h := k.recent[i].hand[exec]; h != nil {
			return h
		}
	}
	return nil
}

// join moves what is kept of old's execution, which a trace left for e's,
// into e.
func (k *keptSpans) join(e, old *keptExec) {
	delete(k.byExec, old.exec)
	e.n += old.n
	e.unsure = e.unsure || old.unsure
	if old.foreign || e.foreign {
		k.bytes -= e.bytes + old.bytes
		e.foreign, e.segs, e.bytes = true, nil, 0
		return
	}
	e.segs = append(e.segs, old.segs...)
	e.bytes += old.bytes
}

// keep adds to e what a write stored of its execution (h).
func (k *keptSpans) keep(e *keptExec, h *handExec) {
	e.n += h.stored
	if h.foreign || e.foreign {
		k.bytes -= e.bytes
		e.foreign, e.segs, e.bytes = true, nil, 0
		return
	}
	e.unsure = e.unsure || h.unsure
	if len(h.kept) == 0 {
		return
	}
	seg := k.encode(h.kept)
	e.segs = append(e.segs, seg)
	e.bytes += len(seg)
	k.bytes += len(seg)
}

// encode appends spans, encoded, to the last page (a new one when it has
// no room) and returns them there. Once the pages hold twice the budget,
// most of it let go, what is kept is copied to new pages first.
func (k *keptSpans) encode(spans []flagSpan) []byte {
	size := 0
	for i := range spans {
		size += keptSize(&spans[i])
	}
	if k.used+size > 2*max(k.budget, pageBytes) && k.used > 2*k.bytes {
		k.compact()
	}
	p := k.pages.last(size)
	at := len(p)
	for i := range spans {
		p = keptEncode(p, &spans[i])
	}
	k.used += size
	return k.pages.grown(p, at)
}

// compact copies the kept executions' spans to new pages and lets the old
// ones go, with the spans of the executions let go before.
func (k *keptSpans) compact() {
	old := k.pages
	k.pages, k.used = nil, 0
	for _, e := range k.byExec {
		for i, seg := range e.segs {
			e.segs[i] = k.pages.add(seg)
			k.used += len(seg)
		}
	}
	old.free()
}

// release lets everything kept go: the spans whole decoded must no
// longer be in use.
func (k *keptSpans) release() {
	if k == nil {
		return
	}
	k.pages.free()
	k.byExec, k.recent, k.touched = nil, nil, nil
}

// whole returns exec's kept spans, decoded into buf, when they are all the
// flag's fast path reads of its n stored spans, the writer's count of
// them. Their strings are the pages' bytes: valid while k is.
func (k *keptSpans) whole(exec string, n int, buf []flagSpan) ([]flagSpan, bool) {
	if k == nil {
		return buf, false
	}
	e := k.byExec[exec]
	if e == nil || e.foreign || e.unsure || e.n != n {
		return buf, false
	}
	spans := buf[:0]
	for _, seg := range e.segs {
		spans = keptDecode(seg, spans)
	}
	return spans, true
}

// keptSize is the length of f's encoding (keptEncode).
func keptSize(f *flagSpan) int {
	n := 2 // flags, state
	for _, s := range f.strings() {
		n += uvarintLen(uint64(len(s))) + len(s)
	}
	for _, v := range f.ints() {
		n += varintLen(v)
	}
	return n
}

// strings are f's strings in the order keptEncode writes them.
func (f *flagSpan) strings() [8]string {
	return [8]string{f.trace, f.span, f.parent, f.tool, f.args.key, f.args.val, f.callID, f.key}
}

// ints are f's numbers in the order keptEncode writes them.
func (f *flagSpan) ints() [4]int64 {
	return [4]int64{f.start, f.end, int64(f.number), int64(f.run)}
}

// keptEncode appends f to dst: its strings, each its length and bytes,
// its numbers as varints, its flags and state.
func keptEncode(dst []byte, f *flagSpan) []byte {
	for _, s := range f.strings() {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	for _, v := range f.ints() {
		dst = binary.AppendVarint(dst, v)
	}
	return append(dst, f.flags, byte(f.state))
}

// keptDecode appends the spans seg encodes to dst. Their strings point
// into seg, which must not change while they are in use.
func keptDecode(seg []byte, dst []flagSpan) []flagSpan {
	for len(seg) > 0 {
		var f flagSpan
		var strs [8]string
		for i := range strs {
			n, k := binary.Uvarint(seg)
			seg = seg[k:]
			if n > 0 {
				strs[i] = unsafe.String(&seg[0], int(n))
			}
			seg = seg[n:]
		}
		f.trace, f.span, f.parent, f.tool, f.args.key, f.args.val, f.callID, f.key =
			strs[0], strs[1], strs[2], strs[3], strs[4], strs[5], strs[6], strs[7]
		var ints [4]int64
		for i := range ints {
			v, k := binary.Varint(seg)
			ints[i] = v
			seg = seg[k:]
		}
		f.start, f.end, f.number, f.run = ints[0], ints[1], int32(ints[2]), int32(ints[3])
		f.flags, f.state = seg[0], attemptState(seg[1])
		seg = seg[2:]
		dst = append(dst, f)
	}
	return dst
}

// varintLen is the length of v as a varint (binary.AppendVarint).
func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}
