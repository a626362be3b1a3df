package otlp

import (
	"slices"

	"github.com/retrylab/retrylab/store"
)

// heldRuns are the runs a file import holds back instead of storing them
// write by write, once its traces interleave across lines (writer.spread:
// a BatchSpanProcessor exports the spans of concurrent traces as they end).
// Each write would otherwise store a run and an index entry for most of
// the file's traces, at random places of the index, whose pages every
// commit then rewrites; held, a trace's spans are stored as one run when
// the holding is full or the import's writes are done (BENCHMARKS.md, 8g).
//
// Nothing reads an import's spans before its end (readers skip a pending
// import), but the writer itself does when a span comes again: write
// stores the trace's held spans first (storeTrace).
//
// The spans are held as copies of their stored forms in pages (which hold
// no pointers, outside the collector's heap), let go once stored.
type heldRuns struct {
	budget int // bytes of stored forms held at most (full)
	pages  pages
	runs   map[string]*[][]byte // run key (execution, 0, trace id) -> its spans' stored forms
	bytes  int                  // the stored forms' bytes held
}

// heldBudget is how many bytes of spans an import holds at most: at it,
// the import stores them all after the write. 24 MiB is some 70 000
// agent-shaped spans, under the import's soft memory limit
// (ImportMemoryLimit).
const heldBudget = 24 << 20

// newHeldRuns holds up to budget bytes of spans' stored forms.
func newHeldRuns(budget int) *heldRuns {
	return &heldRuns{budget: budget, runs: map[string]*[][]byte{}}
}

// hold adds a run's spans to those held of its trace.
func (h *heldRuns) hold(key []byte, vals [][]byte) {
	run := h.runs[string(key)] // a look-up by a []byte key: no string made
	if run == nil {
		run = new([][]byte)
		h.runs[string(key)] = run
	}
	for _, v := range vals {
		*run = append(*run, h.copy(v))
	}
}

// copy copies v into the last page, or a new one when it is full.
func (h *heldRuns) copy(v []byte) []byte {
	h.bytes += len(v)
	return h.pages.add(v)
}

// full says whether the held spans have reached the budget.
func (h *heldRuns) full() bool { return h.bytes >= h.budget }

// heldTxBytes bounds the spans one of storeAll's transactions stores. A
// transaction that grows the file past bbolt's map remaps it, copying
// every key and value the transaction has put out of the old map first:
// one transaction of all a file's held spans did that at each doubling of
// the file, for all of them.
const heldTxBytes = 4 << 20

// storeAll stores every held run, in key order, each as one run (putRun),
// in transactions of about heldTxBytes, and lets them go. A run of the
// import is visible to no reader before the import's end (a pending
// import), so its runs need not be stored in one transaction.
func (h *heldRuns) storeAll(db *store.DB, w *writer) error {
	if len(h.runs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(h.runs))
	for k := range h.runs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// The blocks and index entries bbolt holds until a commit; each
	// transaction's are done with once it commits, and the next one's
	// are cut from the same bytes.
	var blocks, index []byte
	for len(keys) > 0 {
		// size is what the blocks storeRun cuts take at most (blockRoom).
		n, size := 0, 0
		// A holding smaller than 4 heldTxBytes (a test's) is stored in
		// quarters of it.
		for n < len(keys) && (n == 0 || size < min(heldTxBytes, h.budget/4)) {
			for _, v := range *h.runs[keys[n]] {
				size += blockRoom(v)
			}
			n++
		}
		if err := db.Update(func(tx *store.Tx) error {
			blocks = slices.Grow(blocks[:0], size)
			index = slices.Grow(index[:0], n*(len(keys[0])+40))
			for _, k := range keys[:n] {
				run := blockRun{trace: []byte(k), vals: *h.runs[k], pre: -1}
				if err := w.putRun(tx, &run, &blocks, &index); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		keys = keys[n:]
	}
	clear(h.runs)
	h.pages.free()
	h.bytes = 0
	return nil
}

// storeTrace stores the spans held of the run key (execution, 0, trace
// id), if any, as one run.
func (h *heldRuns) storeTrace(tx *store.Tx, w *writer, key []byte) error {
	held := h.runs[string(key)]
	if held == nil {
		return nil
	}
	vals := *held
	delete(h.runs, string(key))
	for _, v := range vals {
		h.bytes -= len(v)
	}
	var blocks, index []byte
	run := blockRun{trace: key, vals: vals, pre: -1}
	return w.putRun(tx, &run, &blocks, &index)
}
