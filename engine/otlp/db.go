package otlp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/safeid"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// The collections engine/otlp owns; the store creates each on its first
// write.
const (
	// BucketSpans holds the spans of executions imported from
	// OpenTelemetry, in the order they arrived (8-byte sequence -> span).
	BucketSpans store.Bucket = "otlp_spans"
	// BucketIndex finds them by execution and trace. The spans a write
	// stores of a trace the database did not hold are one run, at
	// consecutive sequences, with one entry: execution id, 0, trace id, 0,
	// first sequence -> first sequence, import, count (20 bytes). A span
	// added to a trace it held has an entry of its own, so that it is
	// found again with one look-up: execution id, 0, trace id, span id ->
	// sequence, import (16 bytes), the only kind databases written before
	// runs hold.
	BucketIndex store.Bucket = "otlp_index"
	// BucketTraces maps an imported trace id to its execution.
	BucketTraces store.Bucket = "otlp_traces"
	// BucketImports holds the file imports still in progress (or cut short
	// by a crash), whose spans readers skip.
	BucketImports store.Bucket = "otlp_imports"
)

// ImportedFormat marks an execution record as imported from OpenTelemetry.
const ImportedFormat = "otlp"

// Stats says what one Save did.
type Stats struct {
	Spans      int      // spans stored
	Repeated   int      // spans already stored, identical (a re-sent batch)
	Executions []string // executions created or extended, in order of first mention
}

// decodeIndex reads an index value: the first span's sequence in
// BucketSpans, the import that wrote the spans (0: the receiver) and how
// many there are at consecutive sequences (1 in an entry of one span, the
// layout before runs).
func decodeIndex(v []byte) (seq, importID uint64, n int) {
	switch len(v) {
	case 16:
		return store.DecodeU64(v[:8]), store.DecodeU64(v[8:]), 1
	case 20:
		return store.DecodeU64(v[:8]), store.DecodeU64(v[8:16]), int(binary.BigEndian.Uint32(v[16:]))
	}
	return 0, 0, 1 // its span will not decode: the reader says so
}

// runPrefix is the start of the keys of a trace's runs under exec: they
// sort before its entries of one span (a 0 byte before any span id).
func runPrefix(exec, trace string) []byte { return append(spanKey(exec, trace, ""), 0) }

// storedSpans maps the span ids of a trace's stored spans under prefix
// (runPrefix(exec, trace): its runs) to their stored form, for write to
// recognise a span sent again. The values are valid in tx only.
func storedSpans(tx *store.Tx, prefix []byte, into map[string][]byte) error {
	var entries [][2][]byte
	if err := tx.Scan(BucketIndex, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		entries = append(entries, [2][]byte{k, v})
		return true
	}); err != nil {
		return err
	}
	for _, e := range entries {
		k, v := e[0], e[1]
		seq, _, n := decodeIndex(v)
		if len(v) != 20 {
			// An entry of one span names it in its key.
			id := string(k[len(prefix):])
			if _, ok := into[id]; !ok {
				b := tx.Get(BucketSpans, store.U64(seq))
				if b == nil {
					b = []byte{} // an index entry without its span: not the same
				}
				into[id] = b
			}
			continue
		}
		if err := runSpans(tx, seq, n, func(seq uint64, b []byte) error {
			id, err := storedSpanID(b)
			if err != nil {
				return spanDamaged(tx, k, seq, b, err)
			}
			if _, ok := into[id]; !ok {
				into[id] = b
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// spanKey is the index key of a stored span: execution, NUL, trace id, span id.
func spanKey(exec, trace, span string) []byte {
	return appendSpanKey(make([]byte, 0, len(exec)+1+len(trace)+len(span)), exec, trace, span)
}

func appendSpanKey(dst []byte, exec, trace, span string) []byte {
	dst = append(dst, exec...)
	dst = append(dst, 0)
	dst = append(dst, trace...)
	return append(dst, span...)
}

// ExecutionID is the execution a trace belongs to: its conversation when it
// has one (gen_ai.conversation.id), else the trace itself.
func ExecutionID(trace, conversation string) string {
	if conversation != "" {
		return "otlp-conv-" + safeid.Part(conversation, 64)
	}
	return "otlp-" + trace
}

// Save stores spans in one transaction, the caller's (the receiver commits
// each request in one). A span already stored, identical, is skipped, so
// a re-sent batch changes nothing; a span id seen twice with other content
// is refused. source says where the spans came from.
func Save(tx *store.Tx, spans []Span, source string) (Stats, error) {
	return save(tx, spans, madeAhead{}, source)
}

// madeAhead is what the receivers make of a request's spans on its own
// goroutine, before the group commit's transaction, for save; each part
// may be missing (nil), and is then made in the transaction.
type madeAhead struct {
	// encoded and facts are each span's stored form and facts (as
	// writer.write takes them).
	encoded [][]byte
	facts   []spanFacts
	// prepared is how encoded was laid out (prepareBlocks).
	prepared *preparedBlocks
	// scratch is memory of an earlier save's to take again (and give
	// back): its transaction must have ended.
	scratch *writeScratch
	// audits are the executions' audits on the spans (auditAhead), and
	// grouped the spans grouped by trace, which auditAhead made.
	audits  aheadAudits
	grouped *traceGroups
}

// save is Save with what the receiver made ahead.
func save(tx *store.Tx, spans []Span, ahead madeAhead, source string) (Stats, error) {
	w := newWriter(source, 0)
	w.prepared, w.grouped = ahead.prepared, ahead.grouped
	if ahead.scratch != nil {
		w.scratch = *ahead.scratch
		defer func() { *ahead.scratch = w.scratch }()
	}
	// A request's traces are fewer than its spans, and mostly many fewer.
	w.traces.per = min(stateBlock, max(16, len(spans)/4))
	w.written = nil // one write: no later one asks what this one stored
	w.oneTx = true
	if err := w.write(tx, spans, ahead.encoded, ahead.facts); err != nil {
		return w.stats, err
	}
	w.useAhead(ahead.audits)
	w.handJob(nil).run(nil)
	if err := w.finish(tx); err != nil {
		return w.stats, err
	}
	return w.stats, nil
}

// summary is what an execution record says of some spans.
type summary struct {
	n, runs        int
	started, ended int64
	rootStart      int64
	// lastRoot is when the latest root span started: failed and errText
	// are its (a run that failed and was rerun successfully under the
	// same conversation did not fail).
	lastRoot int64
	rootName string
	failed   bool
	// hand is the record's verdict when the audit ran on spans in hand
	// (writer.handJob), notAudited when it did not. chunk is the write the
	// spans came in. Both are set per trace and checked across an
	// execution's traces by toPublish.
	hand     handVerdict
	chunk    int32
	errText  string
	fallback string
	effects  int // side-effecting tool spans (audit's default effects)
	// weighing counts the spans that can make or unmake a duplicate
	// (weighs): a side-effecting call's attempts are tool spans, though
	// not always of a side-effecting tool (a read may share its call id).
	weighing int
}

func (m *summary) add(s *Span) {
	if m.n == 0 || s.Start < m.started {
		m.started = s.Start
	}
	if s.End > m.ended {
		m.ended = s.End
	}
	m.n++
	if s.ParentID == "" {
		m.runs++ // one run per trace: its root span
		if m.rootName == "" || s.Start < m.rootStart {
			m.rootName, m.rootStart = s.Name, s.Start
		}
		if failed := s.Status == "error"; m.runs == 1 || laterRoot(s.Start, failed, m.lastRoot) {
			m.lastRoot, m.failed, m.errText = s.Start, failed, ""
			if failed {
				m.errText = s.ErrorText()
			}
		}
	}
	if m.fallback == "" {
		m.fallback = firstNonEmpty(s.Service, s.Scope, "spans") // shares the span's string
	}
}

func (m *summary) merge(o *summary) {
	if o == nil || o.n == 0 {
		return
	}
	if m.n == 0 || o.started < m.started {
		m.started = o.started
	}
	m.ended = max(m.ended, o.ended)
	if o.runs > 0 && (m.runs == 0 || laterRoot(o.lastRoot, o.failed, m.lastRoot)) {
		m.lastRoot, m.failed, m.errText = o.lastRoot, o.failed, o.errText
	}
	m.n += o.n
	m.runs += o.runs
	m.effects += o.effects
	m.weighing += o.weighing
	if o.rootName != "" && (m.rootName == "" || o.rootStart < m.rootStart) {
		m.rootName, m.rootStart = o.rootName, o.rootStart
	}
	if m.fallback == "" {
		m.fallback = o.fallback
	}
}

// laterRoot says whether a root span starting at start (failed or not)
// decides the execution's outcome over one that started at last: it
// started later, or (a tie) it failed.
func laterRoot(start int64, failed bool, last int64) bool {
	return start > last || (start == last && failed)
}

// writer stores spans, in one transaction or (a file import) in several,
// and then writes the execution records in one last transaction.
type writer struct {
	importID uint64
	source   string
	traces   traceStates         // what this writer knows of each trace, in order of first mention
	perExec  map[string]*summary // execution -> what its new spans say, once toPublish ran
	stats    Stats
	effect   effects
	ahead    map[string]audit.Grade // executions audited before publish: their verdict
	writes   int32                  // calls of write so far
	// moved are the executions that receive a moved trace, which
	// auditAhead leaves to publish (worked out on its first call).
	moved map[string]bool
	// spread says many traces the last write stored spans of (an eighth:
	// the traces a chunk cuts are a few) had spans in an earlier write:
	// the file interleaves its traces across lines. spreadOnce says a
	// write so far found a sixteenth of its traces seen before: the
	// kept spans then take every execution from its first write.
	spread, spreadOnce bool
	// readBacks counts the executions audited from their stored spans.
	readBacks int
	hand      []*handExec // what the last write leaves handJob to audit
	// lastHand holds the executions the last write stored spans of.
	lastHand map[string]*handExec
	// scratch is write's memory, kept for its next call (and, for
	// save, given by the receiver's request memory).
	scratch writeScratch
	// written holds a hash of the trace and span id of each span stored by
	// this writer, seeded by seed: a span of a trace that was new to the
	// database (traceState.own) whose hash is not in it was not stored
	// before, so write looks nothing up for it. A trace whose spans come
	// in many chunks (a BatchSpanProcessor interleaves concurrent traces)
	// is otherwise read back on each. A collision costs a look-up only.
	// nil for a writer that writes once (save): it has no later write.
	written *hashSet
	seed    maphash.Seed
	hashes  []uint64 // write's, kept for its next call
	// prepared, when not nil, is how the spans of the next write were
	// laid out ahead (prepareBlocks): a run that is a prepared block is
	// stored as it is.
	prepared *preparedBlocks
	// grouped, when not nil, is the next write's spans grouped by trace
	// ahead (groupByTrace), which the write takes instead of grouping them.
	grouped *traceGroups
	// held, for a file import, holds back the runs of its writes while
	// its traces interleave (nil: a writer that stores each write's).
	held *heldRuns
	// kept holds, for a file import, the spans the audit at the end reads
	// of executions whose spans came in several writes (nil: none kept).
	kept *keptSpans
	// keptAudits counts the executions auditAhead audited on kept spans.
	keptAudits int
	// oneTx says the write and the records' (finish) run in one
	// transaction (save): an execution write found without a record
	// (handExec.record) has none at finish either, and is not looked up
	// again.
	oneTx bool
}

// spanHash is the hash of a span's trace and span ids in written.
func (w *writer) spanHash(s *Span) uint64 {
	return maphash.String(w.seed, s.TraceID)*0x9e3779b97f4a7c15 ^ maphash.String(w.seed, s.SpanID)
}

// noneWritten says whether no span of a trace's spans (indexes in the
// write's spans, whose hashes are hashes) was stored by this writer
// before, as written tells.
func (w *writer) noneWritten(hashes []uint64, of []int) bool {
	for _, i := range of {
		if w.written.has(hashes[i]) {
			return false
		}
	}
	return true
}

// handExec is an execution whose spans a write stored are all it has so
// far (it has no record, and its traces are new to the database and to
// this writer): its audit can run on those spans, without reading them
// back, and stands if no later write adds to it.
type handExec struct {
	exec   string
	traces []*traceState
	// kept is what the fast path reads of the spans it needs
	// (flagSpanOf), of an execution not foreign; unsure says a span it
	// reads (flagReads) leaves the answer to the fold.
	kept   []flagSpan
	unsure bool
	// keptFrom and keptN are kept's place in its write's slab until the
	// write is done.
	keptFrom, keptN int
	// vals are its spans' stored forms this write stored (an execution
	// not dead and not foreign), valid while the write's spans are:
	// handJob copies them for the full audit of an execution the fast
	// path is not sure of (unsure), which then needs no read back.
	vals          [][]byte
	valFrom, valN int
	// effects and weighing count its side-effecting and weighing spans
	// (summary's), of an execution not dead.
	effects, weighing int
	dead              bool // a trace of it was seen before: read it back instead
	// foreign says the execution has, or may have, spans that are not
	// this writer's: a record, or a trace the database held when the
	// writer first saw it (keptSpans lets go of it).
	foreign bool
	// movedFrom are the executions its traces left in this write, their
	// conversation known at last (each a trace's execution without one):
	// what keptSpans kept of them is the execution's too.
	movedFrom []string
	stored    int  // spans of it this write stored
	record    bool // it had a record when write looked
}

// effects remembers which tools the audit counts as side effects by
// default, by name: a file holds few tool names and many spans.
type effects map[string]bool

// of says whether span s is an attempt of a side-effecting tool.
func (e effects) of(s *Span) bool {
	_, is := e.roleOf(s)
	return is
}

// roleOf is s's role, and whether it is an attempt of a side-effecting tool.
func (e effects) roleOf(s *Span) (Role, bool) {
	role := s.Role()
	return role, role == RoleTool && e.tool(s.Tool())
}

// spanFacts is what a writer reads of a span beyond its fields: its role,
// whether it is an attempt of a side-effecting tool, and whether it weighs
// in the duplicate flag (weighs). A file import works them out on the
// decoding side (fileChunk.add), while the span's attributes are fresh in
// the cache and off the committing goroutine, which is the import's
// longest (BENCHMARKS.md, 8a).
//
// For a span the duplicate flag's fast path reads (flagReads), they hold
// what it reads of it (flagSpanOf): flagUse says flag is a span it needs
// (a tool span it groups into calls, a root span that numbers its run or
// records its worker's death), flagUnsure that the span leaves the answer
// to the fold.
//
// conv is its conversation (Span.Conversation): a file import's chunks
// hold their spans without their attributes (fileChunk.add).
type spanFacts struct {
	role                       Role
	effect, weighs             bool
	flagUse, flagUnsure, reads bool
	flag                       flagSpan
	conv                       string
}

// factsOf works out s's facts.
func (e effects) factsOf(s *Span) spanFacts {
	role, effect := e.roleOf(s)
	f := spanFacts{role: role, effect: effect, weighs: weighs(s, role), reads: flagReads(s, role), conv: s.Conversation()}
	if f.reads {
		var sure bool
		f.flag, f.flagUse, sure = flagSpanOf(s, role)
		f.flagUnsure = !sure
	}
	return f
}

func newWriter(source string, importID uint64) *writer {
	return &writer{importID: importID, source: source, effect: effects{}, written: &hashSet{}, seed: maphash.MakeSeed()}
}

type pendingPut struct {
	key, val []byte
	span     *Span
	index    int               // the span's in write's spans
	tlen     int               // key[:tlen] is the execution, 0 and the trace id
	stored   map[string][]byte // the trace's runs stored before (storedSpans); nil for a fresh trace
	old      []byte            // the span's own index key under the execution its trace moves from
	// fresh: only this write can hold a copy of the span: the database
	// holds nothing of its trace and this writer has not seen it, or the
	// trace was new to the database and written holds none of its spans
	// here. Nothing is looked up for it, and its trace's spans here are
	// stored as a run (one index entry, as storedSpans and load read).
	fresh bool
	hand  *handExec
	state *traceState // the span's trace's
}

// writeScratch is the memory a write's bookkeeping takes, which a later
// write takes again: a file import's writer keeps its puts and keys from
// one chunk to the next, and the receiver keeps all of it with a
// request's memory (requestMemory), for a later request once the
// transaction that stored this one's spans has committed (bbolt holds
// the keys until then).
type writeScratch struct {
	puts  []pendingPut
	keys  []byte
	flags []flagSpan // the hand's flag spans (handSlabs), for a writer that writes once
	vals  [][]byte   // the hand's stored forms, likewise
}

// release clears what s holds of the write that used it, and drops what
// has grown past what a request of pooledSpans spans needs.
func (s *writeScratch) release() {
	clear(s.flags[:cap(s.flags)])
	clear(s.vals[:cap(s.vals)])
	if cap(s.puts) > pooledSpans {
		s.puts = nil
	}
	if cap(s.keys) > 128*pooledSpans {
		s.keys = nil
	}
	if cap(s.flags) > pooledSpans {
		s.flags = nil
	}
	if cap(s.vals) > pooledSpans {
		s.vals = nil
	}
	s.flags, s.vals = s.flags[:0], s.vals[:0]
}

// handSlabs gives the slabs a write lays the flag spans and stored forms
// of its executions in hand out in. A writer that writes once (save)
// takes them from its scratch: its hand is audited before it returns. A
// file import's writer audits a write's hand beside the next write
// (handJob), so each write has slabs of its own.
func (w *writer) handSlabs(flags, vals int) ([]flagSpan, [][]byte) {
	if !w.oneTx {
		return make([]flagSpan, 0, flags), make([][]byte, 0, vals)
	}
	w.scratch.flags = slices.Grow(w.scratch.flags[:0], flags)
	w.scratch.vals = slices.Grow(w.scratch.vals[:0], vals)
	return w.scratch.flags, w.scratch.vals
}

// write stores spans. Puts go in key order, which keeps bbolt's pages from
// being rewritten on every insert.
//
// encoded and facts, when not nil, hold each span's stored form
// (encodeSpan) and facts, made ahead by a file import's decoding side.
func (w *writer) write(tx *store.Tx, spans []Span, encoded [][]byte, facts []spanFacts) error {
	var order []string
	var byTrace [][]int
	if w.grouped != nil {
		order, byTrace, w.grouped = w.grouped.order, w.grouped.byTrace, nil
	} else {
		order, byTrace = groupByTrace(spans)
	}
	w.writes++
	w.hand = nil
	hand := make(map[string]*handExec, len(order)) // an execution has a trace at least
	w.lastHand = hand
	var handOrder []*handExec
	// The executions' handExecs, one slab (an execution has a trace at
	// least): its capacity is never exceeded, so the pointers hold.
	hands := make([]handExec, 0, len(order))
	// The puts and the slab are used again by the next write (a file
	// import's next chunk): they are done with once the transaction has
	// committed, which it has before the next write starts.
	puts := slices.Grow(w.scratch.puts[:0], len(spans))
	defer func() {
		clear(puts) // let the spans and the stored runs go
		if cap(puts) <= 2*mergeChunks*chunkSpans {
			w.scratch.puts = puts[:0]
		}
	}()
	var maps [][2]string
	var arena []byte
	if encoded == nil {
		arena = make([]byte, 0, 256*len(spans))
	}
	// The index keys and entries are cut from one slab: bbolt copies a
	// key, and keeps an entry until the commit, which the slab outlives.
	keys := slices.Grow(w.scratch.keys[:0], 128*len(spans))
	defer func() {
		if cap(keys) <= 256*mergeChunks*chunkSpans {
			w.scratch.keys = keys[:0]
		}
	}()
	// Each span's hash in written, worked out once.
	var hashes []uint64
	if w.written != nil {
		hashes = slices.Grow(w.hashes[:0], len(spans))
		for i := range spans {
			hashes = append(hashes, w.spanHash(&spans[i]))
		}
		w.hashes = hashes
	}
	// A file import whose traces interleave holds its runs back
	// (heldRuns) from the write after the one that found it out.
	hold := w.held != nil && w.spread
	seenBefore := 0
	defer func() { w.spread = 8*seenBefore > len(order) }()
	for k, t := range order {
		conv := traceConversation(spans, facts, byTrace[k])
		st, known := w.traces.get(t)
		if known {
			seenBefore++
		}
		committed, cur, from := "", "", ""
		if known {
			cur, from = w.traces.str(st.exec), w.traces.str(st.from)
		} else {
			committed = string(tx.Get(BucketTraces, []byte(t)))
			cur = committed
			st = w.traces.add(t)
		}
		exec := cur
		movedNow := "" // the execution the trace leaves in this write
		if exec == "" {
			exec = ExecutionID(t, conv)
		} else if conv != "" && cur == ExecutionID(t, "") {
			// The trace's conversation became known: it joins the
			// conversation's execution, its earlier spans with it.
			exec = ExecutionID(t, conv)
			if from == "" {
				from, movedNow = cur, cur
				st.from = w.traces.names.add(from)
			}
		}
		if exec != cur || !known {
			st.exec = w.traces.names.add(exec)
		}
		if !known && committed != exec && from == "" {
			maps = append(maps, [2]string{t, exec})
		}
		// A trace the database does not map has no spans stored, but
		// check where this write would look for them, in case a database
		// holds spans of a trace it does not map: one seek for the trace
		// instead of one look-up for each of its spans.
		fresh := !known && committed == "" && !hasTraceSpans(tx, exec, t)
		if !known {
			st.own = fresh
		}
		// A trace that was new to the database, none of whose spans here
		// this writer stored before: nothing of them to read back.
		unseen := known && st.own && w.noneWritten(hashes, byTrace[k])
		if !known {
			st.sum.chunk = w.writes
		} else if st.sum.chunk != w.writes {
			st.split = true
		}
		h := hand[exec]
		if h == nil {
			rec := tx.Execution(exec) != nil
			hands = append(hands, handExec{exec: exec, dead: rec, foreign: rec, record: rec})
			h = &hands[len(hands)-1]
			hand[exec] = h
			handOrder = append(handOrder, h)
		}
		if !fresh {
			h.dead = true
		}
		if !st.own {
			h.foreign = true
		}
		if movedNow != "" {
			h.movedFrom = append(h.movedFrom, movedNow)
		}
		h.traces = append(h.traces, st)
		var before map[string][]byte
		if !fresh && !unseen {
			// A span comes again: what is held of the trace is looked
			// for where the others are.
			if w.held != nil {
				if err := w.held.storeTrace(tx, w, spanKey(exec, t, "")); err != nil {
					return err
				}
				if from != "" {
					if err := w.held.storeTrace(tx, w, spanKey(from, t, "")); err != nil {
						return err
					}
				}
			}
			// The runs stored when the database first saw the trace; spans
			// added since have an entry each, looked up one by one.
			before = map[string][]byte{}
			if err := storedSpans(tx, runPrefix(exec, t), before); err != nil {
				return fmt.Errorf("execution %s: %w", exec, err)
			}
			if from != "" {
				if err := storedSpans(tx, runPrefix(from, t), before); err != nil {
					return fmt.Errorf("execution %s: %w", from, err)
				}
			}
		}
		for _, i := range byTrace[k] {
			s := &spans[i]
			var val []byte
			if encoded != nil {
				val = encoded[i]
			} else {
				n := len(arena)
				arena = encodeSpan(arena, s)
				val = arena[n:len(arena):len(arena)]
			}
			n := len(keys)
			keys = appendSpanKey(keys, exec, s.TraceID, s.SpanID)
			p := pendingPut{key: keys[n:len(keys):len(keys)], val: val, span: s, index: i, fresh: fresh || unseen, hand: h,
				tlen: len(exec) + 1 + len(s.TraceID), stored: before, state: st}
			if from != "" {
				p.old = spanKey(from, s.TraceID, s.SpanID)
			}
			puts = append(puts, p)
		}
	}
	slices.SortFunc(puts, func(a, b pendingPut) int { return bytes.Compare(a.key, b.key) })
	// What the audit reads of the spans stored (handExec.kept), an
	// execution's side by side (puts are in key order, the execution's
	// id first): one slab for the write instead of a slice that grows for
	// each execution.
	nFlag := len(spans)
	if facts != nil {
		nFlag = 0
		for i := range facts {
			if facts[i].flagUse {
				nFlag++
			}
		}
	}
	// The stored forms of the spans of executions in hand, side by side
	// as their flag spans are (handExec.vals).
	slab, vals := w.handSlabs(nFlag, len(puts))
	var stored []byte // the key of the last span stored
	var storedVal []byte
	// A trace's spans stored here (puts are in key order, so a trace's are
	// together) of a trace the database did not hold (fresh) are a run:
	// blocks of them at consecutive sequences (spanBlock), and one index
	// entry that says where the first is and how many spans there are.
	var run blockRun
	var blocks []byte // the slab blocks are cut from (storeRun)
	flush := func() error {
		if run.n() == 0 {
			return nil
		}
		if hold {
			w.held.hold(run.trace, run.vals)
			run.vals = run.vals[:0]
			return nil
		}
		if blocks == nil && !run.prepared(w.prepared) {
			blocks = make([]byte, 0, blockSlab(puts))
		}
		return w.putRun(tx, &run, &blocks, &keys)
	}
	for i := range puts {
		p := &puts[i]
		// A copy sent twice in this write is the span stored just before,
		// the keys being in order; one stored before is in a run
		// (p.stored) or has an entry of its own.
		var old []byte
		if bytes.Equal(stored, p.key) {
			old = storedVal
		} else if b, ok := p.stored[p.span.SpanID]; ok {
			old = b
		} else if !p.fresh {
			ent := tx.Get(BucketIndex, p.key)
			if ent == nil && p.old != nil {
				ent = tx.Get(BucketIndex, p.old)
			}
			if ent != nil {
				seq, _, _ := decodeIndex(ent)
				if old = tx.Get(BucketSpans, store.U64(seq)); old == nil {
					old = []byte{} // an index entry without its span: not the same
				}
			}
		}
		if old != nil {
			if sameSpan(old, p.val) {
				w.stats.Repeated++
				continue
			}
			return &SpanError{SpanID: p.span.SpanID, Reason: "appears twice with different content (duplicate span id)"}
		}
		if run.n() > 0 && (!p.fresh || !bytes.Equal(run.trace, p.key[:p.tlen])) {
			if err := flush(); err != nil {
				return err
			}
		}
		if p.fresh {
			run.add(p, w.prepared)
		} else {
			// A span added to a trace stored before is a value of its own
			// with an entry of its own, so that the next look-up for it is
			// one Get, however many batches the trace grows by.
			seq, err := tx.Append(BucketSpans, func(uint64) ([]byte, error) { return p.val, nil })
			if err != nil {
				return err
			}
			n := len(keys)
			keys = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(keys, seq), w.importID)
			if err := tx.Put(BucketIndex, p.key, keys[n:len(keys):len(keys)]); err != nil {
				return err
			}
		}
		stored, storedVal = p.key, p.val
		w.stats.Spans++
		sum := &p.state.sum
		sum.add(p.span, &w.traces.names)
		var f spanFacts
		if facts != nil {
			f = facts[p.index]
		} else {
			f = w.effect.factsOf(p.span)
		}
		if f.effect {
			sum.effects++
		}
		if f.weighs {
			sum.weighing++
		}
		h := p.hand
		h.stored++
		if !h.foreign && !h.dead {
			vals = appendRun(vals, &h.valFrom, &h.valN, p.val)
		}
		if !h.foreign && f.reads {
			if f.flagUse {
				slab = appendRun(slab, &h.keptFrom, &h.keptN, f.flag)
			}
			h.unsure = h.unsure || f.flagUnsure
			if !h.dead {
				if f.effect {
					h.effects++
				}
				if f.weighs {
					h.weighing++
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// The write's spans are all stored or stored before: a later write
	// that asks about one of them looks it up.
	if w.written != nil {
		w.written.add(hashes)
	}
	for _, h := range handOrder {
		h.kept = slab[h.keptFrom : h.keptFrom+h.keptN : h.keptFrom+h.keptN]
		h.vals = vals[h.valFrom : h.valFrom+h.valN : h.valFrom+h.valN]
	}
	// The file spreads its traces once many a write stored spans of had
	// spans in an earlier one (a sixteenth: the second write of a file
	// shuffled end to end has a few more): a later write then adds to
	// most executions, further on than the writes remembered.
	spread := w.spreadOnce || 16*seenBefore > len(order)
	if w.kept != nil {
		w.kept.wrote(hand, len(spans), w.spread)
	}
	for _, h := range handOrder {
		// An execution this write holds whole is kept (for the audit at
		// the end) only once a later write adds to it (keptSpans.wrote),
		// unless the file spreads its traces.
		if w.kept != nil && (h.dead || spread && !h.foreign) {
			w.kept.add(h, w.writes)
		}
		// Without a side-effecting tool span and two attempts there is
		// no duplicate: the execution is not audited at all (needsAudit).
		if !h.dead && needsAudit(&summary{effects: h.effects, weighing: h.weighing}, false) {
			w.hand = append(w.hand, h)
		}
	}
	if w.kept != nil && spread && !w.spreadOnce {
		// Found out in this write: what the writes remembered held of
		// executions they were the first to store is kept too.
		w.kept.keepFirsts(w.writes)
	}
	w.spreadOnce = spread
	sort.Slice(maps, func(i, j int) bool { return maps[i][0] < maps[j][0] })
	for _, m := range maps {
		if err := tx.Put(BucketTraces, []byte(m[0]), []byte(m[1])); err != nil {
			return err
		}
	}
	return nil
}

// traceConversation is the conversation of a trace whose spans (in
// spans, facts: their facts when not nil) are idx: the first of them that
// names one. The write and the receivers' audit ahead (auditAhead) find a
// trace's execution with it, and must agree.
func traceConversation(spans []Span, facts []spanFacts, idx []int) string {
	for _, i := range idx {
		c := ""
		if facts != nil {
			c = facts[i].conv
		} else {
			c = spans[i].Conversation()
		}
		if c != "" {
			return c
		}
	}
	return ""
}

// traceGroups are spans grouped by trace (groupByTrace).
type traceGroups struct {
	order   []string
	byTrace [][]int
}

// groupByTrace groups the indexes of spans by trace: the traces in order
// of first mention, and each one's indexes in order (byTrace[k] are
// order[k]'s), all of them cut from one slice, not a slice grown for each
// trace in a map.
func groupByTrace(spans []Span) (order []string, byTrace [][]int) {
	place := make(map[string]int, max(1, len(spans)/4)) // trace -> its place in order
	var counts []int
	slot := make([]int, 2*len(spans)) // each span's trace's place, then the indexes
	for i := range spans {
		k, ok := place[spans[i].TraceID]
		if !ok {
			k = len(order)
			place[spans[i].TraceID] = k
			order = append(order, spans[i].TraceID)
			counts = append(counts, 0)
		}
		counts[k]++
		slot[i] = k
	}
	all := slot[len(spans):]
	from := 0
	for k, n := range counts {
		counts[k] = from // where the trace's next index goes
		from += n
	}
	for i := range spans {
		k := slot[i]
		all[counts[k]] = i
		counts[k]++
	}
	byTrace = make([][]int, len(order))
	from = 0
	for k := range order {
		byTrace[k] = all[from:counts[k]:counts[k]]
		from = counts[k]
	}
	return order, byTrace
}

// appendRun appends v to slab's run that starts at *from and holds *n
// elements (an execution's, side by side), moving the run to slab's end
// first when something else was appended after it (puts are in key order,
// but for an execution id with a NUL).
func appendRun[T any](slab []T, from, n *int, v T) []T {
	if *n > 0 && *from+*n != len(slab) {
		slab = append(slab, slab[*from:*from+*n]...)
		*from = len(slab) - *n
	}
	if *n == 0 {
		*from = len(slab)
	}
	*n++
	return append(slab, v)
}

// handJob copies out of the last write's spans what the audit of the
// executions it left in w.hand reads, so that the audit can run (handJob.run)
// while the spans' chunk is used again.
//
// reuse, when not nil, is a job done with, whose memory is used again.
func (w *writer) handJob(reuse *handJob) *handJob {
	n, m := 0, 0
	for _, h := range w.hand {
		n += len(h.kept)
		if h.unsure {
			for _, v := range h.vals {
				m += len(v)
			}
		}
	}
	j := reuse
	if j == nil {
		j = &handJob{}
	}
	j.execs, j.spans = slices.Grow(j.execs[:0], len(w.hand)), slices.Grow(j.spans[:0], n)
	j.arena = slices.Grow(j.arena[:0], m)
	for _, h := range w.hand {
		from := len(j.spans)
		j.spans = append(j.spans, h.kept...)
		x := handAudit{exec: h.exec, traces: h.traces, from: from, to: len(j.spans), unsure: h.unsure}
		if h.unsure {
			// The fast path is not sure of it: the full audit runs on its
			// spans' stored forms, copied, as a read back would decode them.
			x.encFrom = len(j.encoded)
			for _, v := range h.vals {
				at := len(j.arena)
				j.arena = append(j.arena, v...)
				j.encoded = append(j.encoded, j.arena[at:len(j.arena):len(j.arena)])
			}
			x.encTo = len(j.encoded)
		}
		j.execs = append(j.execs, x)
	}
	w.hand = nil
	return j
}

// stillWhole drops from j the executions the last write added spans to:
// their audit on j's spans would not stand (toPublish), they are read back
// at the end instead. It runs where write does (the traces' split flags
// and the last write's executions are write's).
func (w *writer) stillWhole(j *handJob) *handJob {
	kept := j.execs[:0]
	for _, x := range j.execs {
		_, again := w.lastHand[x.exec]
		whole := !again
		for _, st := range x.traces {
			whole = whole && !st.split
		}
		if whole {
			kept = append(kept, x)
		}
	}
	j.execs = kept
	return j
}

// handJob is the audits of executions whose spans are all in hand.
type handJob struct {
	execs []handAudit
	spans []flagSpan
	// encoded are the stored forms of the spans of the executions the
	// fast path is not sure of, cut from arena.
	encoded [][]byte
	arena   []byte
	decoded []Span // run's scratch
}

// done lets go of what j refers to, keeping its memory for the next job.
func (j *handJob) done() *handJob {
	clear(j.execs)
	clear(j.spans)
	clear(j.encoded)
	clear(j.decoded)
	j.execs, j.spans, j.encoded, j.arena, j.decoded = j.execs[:0], j.spans[:0], j.encoded[:0], j.arena[:0], j.decoded[:0]
	return j
}

type handAudit struct {
	exec     string
	traces   []*traceState
	from, to int  // its spans in handJob.spans
	unsure   bool // a span of it leaves the answer to the fold
	// encFrom and encTo are its spans' stored forms in handJob.encoded,
	// of an execution unsure.
	encFrom, encTo int
}

// run audits each execution and notes the answer on its traces (their
// field sum.hand, which nothing else writes); toPublish keeps it for an
// execution no other write added to. It audits without the fold
// (flagScratch.duplicate), and leaves an execution the fast path is not
// sure of to be read back and audited in full at the end, since it holds
// only the spans the fast path reads. It returns how many it audited.
// scratch, when not nil, is memory to use again.
func (j *handJob) run(scratch *flagScratch) int {
	if scratch == nil {
		scratch = newFlagScratch()
	}
	n := 0
	for _, x := range j.execs {
		var g audit.Grade
		var sure bool
		if x.unsure {
			g, sure = j.fullAudit(x, scratch)
		} else {
			g, sure = scratch.verdictOf(j.spans[x.from:x.to])
		}
		if !sure {
			continue
		}
		n++
		v := handVerdictOf(g)
		for _, st := range x.traces {
			st.sum.hand = v
		}
	}
	return n
}

// handVerdict is a verdict (audit.Verdict) as the audit on spans in hand
// notes it on a trace's summary, in a byte: notAudited when it did not run.
type handVerdict int8

const (
	notAudited handVerdict = iota
	handNone
	handPossible
	handDuplicate
)

func handVerdictOf(g audit.Grade) handVerdict {
	switch g {
	case audit.Duplicate:
		return handDuplicate
	case audit.Possible:
		return handPossible
	}
	return handNone
}

// grade is the verdict v notes; v is not notAudited.
func (v handVerdict) grade() audit.Grade {
	switch v {
	case handDuplicate:
		return audit.Duplicate
	case handPossible:
		return audit.Possible
	}
	return ""
}

// fullAudit audits x, an execution the fast path is not sure of, on its
// spans' stored forms (verdictOn, as graded does once it has read them
// back). It is not sure when it has none, or one does not decode: the
// read back at the end finds out.
func (j *handJob) fullAudit(x handAudit, scratch *flagScratch) (v audit.Grade, sure bool) {
	if x.encTo == x.encFrom {
		return "", false
	}
	spans := slices.Grow(j.decoded[:0], x.encTo-x.encFrom)[:x.encTo-x.encFrom]
	j.decoded = spans
	for i, b := range j.encoded[x.encFrom:x.encTo] {
		spans[i] = Span{}
		if err := decodeSpan(b, &spans[i]); err != nil {
			return "", false
		}
	}
	return verdictOn(x.exec, spans, scratch), true
}

// finish moves the traces whose conversation became known and writes the
// records of every execution that changed, in one transaction.
func (w *writer) finish(tx *store.Tx) error {
	return w.publish(tx, w.toPublish(), true)
}

// toPublish sums up, per execution, what the new spans say, and lists the
// executions whose records must be written: those that receive a moved
// trace first (their records go with the move), then in order of first
// mention. It lets go of the per-trace sums.
func (w *writer) toPublish() []string {
	// A request's executions are at most its traces: the map is made
	// their size, up to a bound (a file's traces are many more than its
	// executions, mostly).
	w.perExec = make(map[string]*summary, min(w.traces.len(), 4096))
	var targets, rest []string
	var sums []summary // the summaries, cut from slabs of summarySlab
	for i := range w.traces.len() {
		st := w.traces.at(i)
		exec := w.traces.str(st.exec)
		m := w.perExec[exec]
		if m == nil {
			if len(sums) == cap(sums) {
				sums = make([]summary, 0, summarySlab)
			}
			sums = append(sums, summary{hand: st.sum.hand, chunk: st.sum.chunk})
			m = &sums[len(sums)-1]
			w.perExec[exec] = m
			if st.from.n != 0 {
				targets = append(targets, exec)
			} else {
				rest = append(rest, exec)
			}
		}
		// The audit on spans in hand stands when all of the execution's
		// spans came in the write it ran after.
		if st.split || st.from.n != 0 || st.sum.chunk != m.chunk || st.sum.hand != m.hand {
			m.hand = notAudited
		}
		sum := st.sum.summary(&w.traces.names)
		m.merge(&sum)
		st.sum = traceSum{}
	}
	w.stats.Executions = append(append([]string(nil), targets...), rest...)
	return w.stats.Executions
}

// summarySlab is how many summaries toPublish allocates at once: a
// request's executions in one or two allocations, not one each.
const summarySlab = 64

// publish writes the records of execs (the first batch also moves the
// traces whose conversation became known: their targets lead toPublish's
// list, so they are in it).
func (w *writer) publish(tx *store.Tx, execs []string, moves bool) error {
	if moves {
		for i := range w.traces.len() {
			st := w.traces.at(i)
			if st.from.n == 0 {
				continue
			}
			t, from, exec := w.traces.str(st.trace), w.traces.str(st.from), w.traces.str(st.exec)
			moved, err := moveTrace(tx, t, from, exec, w.importID, w.effect)
			if err != nil {
				return err
			}
			w.perExec[exec].merge(moved)
			if err := tx.Put(BucketTraces, []byte(t), []byte(exec)); err != nil {
				return err
			}
		}
	}
	sorted := append([]string(nil), execs...)
	sort.Strings(sorted)
	for _, exec := range sorted {
		if err := w.updateRecord(tx, exec, w.perExec[exec]); err != nil {
			return err
		}
	}
	return nil
}

// moveTrace re-keys a trace's spans from one execution to another, removes
// the old execution if nothing is left in it, and summarises the moved
// spans that an earlier import or request stored (this import's own are
// summarised already).
func moveTrace(tx *store.Tx, trace, from, to string, importID uint64, effect effects) (*summary, error) {
	prefix := spanKey(from, trace, "")
	var keys, entries [][]byte
	if err := tx.Scan(BucketIndex, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		keys, entries = append(keys, k), append(entries, v)
		return true
	}); err != nil {
		return nil, err
	}
	m := &summary{}
	for i, k := range keys {
		seq, imp, n := decodeIndex(entries[i])
		if imp == importID && importID != 0 {
			n = 0
		}
		if err := runSpans(tx, seq, n, func(seq uint64, b []byte) error {
			var s Span
			if err := decodeSpan(b, &s); err != nil {
				return spanDamaged(tx, k, seq, b, fmt.Errorf("a span of execution %s: %w", from, err))
			}
			if s.TraceID != trace {
				return tx.Damaged(BucketIndex, nil, k, fmt.Errorf("it names span %d, of another trace (%s)", seq, s.TraceID))
			}
			m.add(&s)
			role, is := effect.roleOf(&s)
			if is {
				m.effects++
			}
			if weighs(&s, role) {
				m.weighing++
			}
			return nil
		}); err != nil {
			return nil, err
		}
		if err := tx.Delete(BucketIndex, k); err != nil {
			return nil, err
		}
		if err := tx.Put(BucketIndex, spanKey(to, trace, string(k[len(prefix):])), entries[i]); err != nil {
			return nil, err
		}
	}
	rest := false
	fromAll := spanKey(from, "", "")
	if err := tx.Scan(BucketIndex, fromAll, false, func(k, _ []byte) bool {
		rest = bytes.HasPrefix(k, fromAll)
		return false
	}); err != nil {
		return nil, err
	}
	if !rest && tx.Execution(from) != nil {
		if err := tx.DeleteExecution(from); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// updateRecord folds a summary of new spans into the execution's record:
// its time span, its name (the first root span's), failed when its latest
// root span failed, and whether the audit finds a duplicate in it (read from
// auditAhead's answers, else audited here).
func (w *writer) updateRecord(tx *store.Tx, exec string, m *summary) error {
	oldEnded := time.Time{}
	source := w.source
	x := history.Execution{ID: exec, Imported: ImportedFormat, Source: source, Status: history.StatusCompleted}
	earlier := false
	var rec []byte
	if h := w.lastHand[exec]; !w.oneTx || h == nil || h.record {
		rec = tx.Execution(exec)
	}
	if rec != nil {
		earlier = true
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return fmt.Errorf("execution %s: %w", exec, err)
		}
		if old.Imported == "" {
			return fmt.Errorf("execution %s exists and was not imported", exec)
		}
		x = old
		oldEnded = old.Ended
		if source != "" && !strings.Contains(x.Source, source) {
			x.Source += ", " + source
		}
	}
	if m.n > 0 {
		start, end := time.Unix(0, m.started).UTC(), time.Unix(0, m.ended).UTC()
		if x.Started.IsZero() || start.Before(x.Started) {
			x.Started = start
		}
		if end.After(x.Ended) {
			x.Ended = end
		}
	}
	x.Runs += m.runs
	if m.rootName != "" && (x.Scenario == "" || strings.HasPrefix(x.Scenario, "(")) {
		x.Scenario = m.rootName
	}
	if x.Scenario == "" {
		x.Scenario = "(" + firstNonEmpty(m.fallback, "spans") + ")"
	}
	switch {
	case m.failed && x.Status != history.StatusFailed:
		x.Status, x.Error = history.StatusFailed, m.errText
	case !m.failed && m.runs > 0 && x.Status == history.StatusFailed && !time.Unix(0, m.lastRoot).Before(oldEnded):
		// A rerun that started once every earlier span had ended, and
		// succeeded: the execution succeeded.
		x.Status, x.Error = history.StatusCompleted, ""
	}
	// An imported execution was last updated when its last span ended,
	// not when it was imported: lists show how long it took.
	x.Updated = x.Ended
	// A duplicate, possible or not, takes two side-effecting attempts,
	// one of them new: only then is the execution read back and audited
	// (its list shows ⚠ or ◇).
	if needsAudit(m, earlier) {
		g, ok := w.ahead[exec]
		if m.hand != notAudited && !earlier {
			g, ok = m.hand.grade(), true
		}
		if !ok {
			var err error
			if g, err = graded(tx, exec, w.importID, nil); err != nil {
				return err
			}
			w.readBacks++
		}
		x.Duplicates, x.Possible = g.Flags()
	}
	return putRecord(tx, x, earlier)
}

// putRecord stores an imported execution's record, as history.Put does.
// A record new to the database (earlier false) is only put: an imported
// execution has no history to seal and no place among the active ones,
// which history.Put would look up for it.
func putRecord(tx *store.Tx, x history.Execution, earlier bool) error {
	if earlier || !x.Status.Finished() {
		return history.Put(tx, x)
	}
	enc, err := history.EncodeExecution(x)
	if err != nil {
		return err
	}
	return tx.PutExecution(x.ID, enc)
}

// needsAudit says whether new spans (m) may make or unmake a duplicate
// (earlier: the execution had spans before): two attempts of a
// side-effecting call, one of them new. Such a call is scheduled by a
// side-effecting tool span, and its attempts are tool spans of any tool
// (a read may share its call id), so an execution without earlier spans
// needs one side-effecting span and two weighing ones; with earlier
// spans, which may hold the rest, one new weighing span.
func needsAudit(m *summary, earlier bool) bool {
	if earlier {
		return m.weighing > 0
	}
	return m.effects > 0 && m.weighing >= 2
}

// weighs says whether span s (role: its role) can make or unmake a
// duplicate in its execution: a tool span, or a root span that numbers its
// run or records its worker's death (retrylab's own export), which the
// fold reads.
func weighs(s *Span, role Role) bool {
	if role == RoleTool {
		return true
	}
	if s.ParentID != "" {
		return false
	}
	numbered := s.Attrs.Has("retrylab.run")
	return numbered || s.Attrs.Get("retrylab.run.crashed") == "true"
}

// Verdict is audit.Verdict of an imported execution's stored spans,
// audited alone with the default effects: the record's Duplicates and
// Possible flags, for a record imported before the importer set them.
func Verdict(tx *store.Tx, exec string) (audit.Grade, error) {
	return graded(tx, exec, 0, nil)
}

// graded audits one execution's stored spans alone, with the default
// effects, as `retrylab audit` grades them: its verdict.
//
// scratch, when not nil, is memory to use again.
func graded(tx *store.Tx, exec string, importID uint64, scratch *flagScratch) (audit.Grade, error) {
	spans, err := load(tx, exec, importID)
	if err != nil {
		return "", err
	}
	if scratch == nil {
		scratch = newFlagScratch()
	}
	return verdictOn(exec, spans, scratch), nil
}

// verdictOn audits one execution's spans (all of them; the slice is
// sorted in place): the record's verdict. It asks the fast path
// (flagScratch.verdict) first, and translates and folds the spans only
// when that is not sure.
func verdictOn(exec string, spans []Span, scratch *flagScratch) audit.Grade {
	if v, sure := scratch.verdict(spans); sure {
		return v
	}
	return audit.VerdictCanonical(trace.Fold(exec, auditEvents(spans, nil)))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// Load returns an imported execution's spans, ordered by start time then
// span id; spans of an import still in progress are not seen.
func Load(tx *store.Tx, exec string) ([]Span, error) { return load(tx, exec, 0) }

// load is Load that also sees the spans of import own, still in progress.
func load(tx *store.Tx, exec string, own uint64) ([]Span, error) {
	prefix := spanKey(exec, "", "")
	pending, err := pendingImports(tx)
	if err != nil {
		return nil, err
	}
	delete(pending, own)
	var spans []Span
	var bad error
	err = tx.Scan(BucketIndex, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		seq, imp, n := decodeIndex(v)
		if pending[imp] {
			return true
		}
		bad = runSpans(tx, seq, n, func(seq uint64, b []byte) error {
			var s Span
			if err := decodeSpan(b, &s); err != nil {
				return spanDamaged(tx, k, seq, b, fmt.Errorf("a span of execution %s: %w", exec, err))
			}
			if !bytes.HasPrefix(k[len(prefix):], []byte(s.TraceID)) {
				return tx.Damaged(BucketIndex, nil, k, fmt.Errorf("it names span %d, of another trace (%s)", seq, s.TraceID))
			}
			s.Import = imp
			spans = append(spans, s)
			return nil
		})
		return bad == nil
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	if len(spans) == 0 && own == 0 && len(pending) == 0 {
		// Every imported execution was made from its spans: one with
		// none lost its entries of the index.
		if rec := tx.Execution(exec); rec != nil {
			if x, err := history.DecodeExecution(rec); err == nil && x.Imported == ImportedFormat {
				return nil, tx.Damaged(BucketIndex, nil, prefix, fmt.Errorf("imported execution %s has no span in the index", exec))
			}
		}
	}
	SortSpans(spans)
	return spans, nil
}

// SortSpans orders spans by start time, then end time, then span id.
func SortSpans(spans []Span) {
	sort.SliceStable(spans, func(i, j int) bool {
		a, b := &spans[i], &spans[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End // a parent before a child that starts with it
		}
		return a.SpanID < b.SpanID
	})
}

// spanDamaged is the error for span seq, named by the index entry at key
// index, which does not decode (err): the span's record when it is
// stored (span holds it), else the index entry that names it.
func spanDamaged(tx *store.Tx, index []byte, seq uint64, span []byte, err error) error {
	if span == nil {
		return tx.Damaged(BucketIndex, nil, index, fmt.Errorf("it names span %d, which is not stored", seq))
	}
	return tx.Damaged(BucketSpans, nil, store.U64(seq), err)
}
