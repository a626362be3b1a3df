package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// FileResult is what importing one file did.
type FileResult struct {
	Path   string
	Format Format
	Stats
	// audits counts the duplicate flag's audits of executions, readBacks
	// those of them that read the execution's spans back from the database
	// (the others ran on spans in hand). An execution is read back at most
	// once an import, however many chunks its spans came in, and one whose
	// spans go on in the next chunk is not audited on the first's.
	audits, readBacks int
}

// chunkSpans is how many spans a file import commits at once: enough to
// share an fsync among many, few enough to keep memory flat. Under the
// import's heap limit, what the chunks hold is room the collector does not
// have: chunks of 8192 cost a million-span import a fifth more CPU than
// 4096, which cost 7% more than 2048; 1024 costs less CPU again but its
// fsyncs make it slower (BENCHMARKS.md, 8a).
const chunkSpans = 2048

// chunkBytes bounds a chunk's spans in their stored form: 2048 of the
// usual agent's spans take some 800 KB, of spans that carry 1 KB
// arguments and results (8i) 4 MB, and what memory holds of them (their
// attributes decoded) several times that.
const chunkBytes = 1 << 20

// ImportMemoryLimit is the soft heap limit 'retrylab import' runs with
// (runtime/debug.SetMemoryLimit; the GOMEMLIMIT environment variable
// overrides it). The import streams, but what it keeps per trace grows
// with the file, and Go's collector lets the heap reach twice what is
// live before it runs; the limit makes it run sooner, keeping a
// million-span file under 150 MB (BENCHMARKS.md, 8b). An import that needs
// more still gets it.
const ImportMemoryLimit = 100 << 20

// ImportFile streams path into the database: spans are committed in
// chunks as they are decoded, marked as belonging to a pending import that
// readers skip, and the execution records are written with the import's
// end in one last transaction. A file that fails (or an import cut short
// by a crash, cleaned up on the next import) leaves nothing behind. The
// error names the file, the line (JSON Lines) and the span where it can.
func ImportFile(db *store.DB, path string) (FileResult, error) {
	return importFrom(db, path, nil, defaultLimits)
}

// ImportReader is ImportFile on a stream (standard input, a pipe) that
// can be read once; name stands for it in the result and in errors.
func ImportReader(db *store.DB, name string, r io.Reader) (FileResult, error) {
	return importFrom(db, name, r, defaultLimits)
}

// importFile is ImportFile in chunks of chunkSpans, each committed alone.
func importFile(db *store.DB, path string, chunkSpans int) (FileResult, error) {
	return importFrom(db, path, nil, limits{chunkSpans: chunkSpans, mergeChunks: 1, keptBytes: keptBudget})
}

// limits are a file import's bounds on memory: how many spans a chunk
// holds, how many chunks a commit may take at most (mergeChunks), how
// many bytes of spans it keeps for the audit (keptSpans), and how many it
// holds back while its traces interleave (heldRuns; 0: none).
type limits struct {
	chunkSpans, mergeChunks, keptBytes, heldBytes int
}

// defaultLimits are an import's.
var defaultLimits = limits{chunkSpans: chunkSpans, mergeChunks: mergeChunks, keptBytes: keptBudget, heldBytes: heldBudget}

// mergeChunks is how many chunks a commit takes, of a file whose traces
// interleave across lines (writer.spread): a write then holds spans of
// most of the file's traces, each a few, and a write of more chunks does
// its work for each trace (its state, its execution, the runs it holds
// back: heldRuns) for more of its spans. With runs held back, 1, 2, 4 and
// 8 chunks gave the same rate within the noise (BENCHMARKS.md, 8g); with
// 4, 8 chunks at most are in memory (one commit's being written, the
// next's being decoded).
const mergeChunks = 4

// importFrom imports r, or the file at path when r is nil.
func importFrom(db *store.DB, path string, r io.Reader, lim limits) (FileResult, error) {
	read := func(fn func(Batch) error) (Format, error) { return ReadFile(path, fn) }
	if r != nil {
		read = func(fn func(Batch) error) (Format, error) {
			format, err := Read(r, fn)
			if err != nil {
				err = fmt.Errorf("%s: %w", path, err)
			}
			return format, err
		}
	}
	return importWith(db, path, read, lim)
}

// importWith imports what read decodes, path naming it: read calls fn
// with each batch of spans, in order, and says what format it read.
func importWith(db *store.DB, path string, read func(fn func(Batch) error) (Format, error), lim limits) (FileResult, error) {
	chunkSpans := lim.chunkSpans
	res := FileResult{Path: path}
	defer followLiveHeap()()
	if err := CleanPending(db); err != nil {
		return res, err
	}
	var id uint64
	if err := db.Update(func(tx *store.Tx) error {
		var err error
		id, err = tx.Append(BucketImports, func(uint64) ([]byte, error) {
			return json.Marshal(map[string]string{"file": path})
		})
		return err
	}); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	w := newWriter(path, id)
	if lim.keptBytes > 0 {
		w.kept = newKeptSpans(lim.keptBytes)
	}
	if lim.heldBytes > 0 {
		w.held = newHeldRuns(lim.heldBytes)
	}
	// The pages of what is held and kept are let go explicitly (pages),
	// also when the import fails: every goroutine below is done before
	// importWith returns.
	defer func() {
		if w.held != nil {
			w.held.pages.free()
		}
		w.kept.release()
	}()
	// Decoding and storing overlap: a goroutine commits chunks while the
	// next ones are decoded. Two chunks go round between them, and, while
	// the file interleaves its traces (a commit then takes merge chunks),
	// more as the decoding side finds none free (made), up to two commits'
	// worth: one being written, the next being decoded.
	merge := max(lim.mergeChunks, 1)
	full := make(chan *fileChunk, merge)
	free := make(chan *fileChunk, 2*merge)
	newChunk := func() *fileChunk {
		return &fileChunk{spans: make([]Span, 0, chunkSpans), lines: make([]int, 0, chunkSpans),
			encoded: make([][]byte, 0, chunkSpans), arena: make([]byte, 0, 256*chunkSpans),
			facts: make([]spanFacts, 0, chunkSpans)}
	}
	made := 2
	for range made {
		free <- newChunk()
	}
	// spread is writer.spread, for the decoding side: only then do commits
	// take several chunks. In a file whose traces come together the
	// chunks' spans are mostly whole traces already, and more chunks in
	// memory only make the collector work harder under the import's soft
	// limit (BENCHMARKS.md, 8a).
	var spread atomic.Bool
	var failed atomic.Bool
	stored := make(chan error, 1)
	// A third goroutine audits, from the spans in hand, the executions a
	// chunk holds whole (writer.handJob).
	jobs := make(chan *handJob, 1)
	// Jobs done with go back to the committer, whose next job uses their
	// memory again: a chunk's spans in hand are most of a chunk.
	doneJobs := make(chan *handJob, 2)
	audited := make(chan struct{})
	handAudits := 0
	go func() {
		scratch := newFlagScratch()
		for j := range jobs {
			handAudits += j.run(scratch)
			select {
			case doneJobs <- j.done():
			default:
			}
		}
		close(audited)
	}()
	// The committer says when its writes are done, and how, before it
	// stores the runs it held: the audits that need no spans read back
	// go beside that.
	writesDone := make(chan error, 1)
	go func() {
		var err error
		// A chunk's audits wait for the next chunk to be written: an
		// execution that goes on in it (a trace cut at the chunk's end, one
		// long trace over many chunks) is audited once, read back at the
		// end, instead of once on its first chunk's spans for nothing.
		var waiting *handJob
		var batch []*fileChunk
		var merged fileChunk // the batch's chunks one after the other
		for more := true; more; {
			c, ok := <-full
			if !ok {
				break
			}
			// While the file interleaves its traces, a commit waits for
			// merge chunks: what a write costs beyond its spans is for
			// each trace it holds spans of, which is most of them.
			batch = append(batch[:0], c)
			for len(batch) < merge && spread.Load() {
				c, ok := <-full
				if !ok {
					more = false
					break
				}
				batch = append(batch, c)
			}
			if len(batch) > 1 {
				c = merged.join(batch)
			}
			if err == nil {
				if err = db.Update(func(tx *store.Tx) error { return w.write(tx, c.spans, c.encoded, c.facts) }); err != nil {
					err = c.atLine(err)
					failed.Store(true)
				} else if w.held != nil && w.held.full() {
					if err = w.held.storeAll(db, w); err != nil {
						failed.Store(true)
					}
				}
				if err == nil {
					spread.Store(w.spread)
					if waiting != nil {
						jobs <- w.stillWhole(waiting)
					}
					var reuse *handJob
					select {
					case reuse = <-doneJobs:
					default:
					}
					waiting = w.handJob(reuse)
				}
			}
			merged.let()
			for _, c := range batch {
				c.reset()
				free <- c
			}
			clear(batch)
		}
		if err == nil && waiting != nil {
			jobs <- waiting
		}
		close(jobs)
		writesDone <- err
		if err == nil && w.held != nil {
			if err = w.held.storeAll(db, w); err != nil {
				failed.Store(true)
			}
		}
		stored <- err
	}()
	chunk := <-free
	seen := 0
	effect := effects{} // the decoding side's: a map is not for two goroutines
	format, err := read(func(b Batch) error {
		seen += len(b.Spans)
		for i := range b.Spans {
			chunk.add(&b.Spans[i], b.Line, effect)
			// A batch larger than a chunk (a line of many spans) is cut:
			// a chunk is what memory holds a few times over and a commit
			// writes. Large spans make smaller chunks.
			if len(chunk.spans) >= chunkSpans || len(chunk.arena) >= chunkBytes {
				full <- chunk
				select {
				case chunk = <-free:
				default:
					if made < 2*merge && spread.Load() {
						made++
						chunk = newChunk()
					} else {
						chunk = <-free
					}
				}
				if failed.Load() {
					return errStoreFailed
				}
			}
		}
		return nil
	})
	if err == nil && len(chunk.spans) > 0 {
		full <- chunk
	}
	close(full)
	werr := <-writesDone
	<-audited
	// While the held runs are stored (heldRuns), the executions are summed
	// up and those whose kept spans are enough audited.
	var execs []string
	var early error
	if werr == nil && err == nil {
		execs = w.toPublish()
		early = w.auditAhead(db, execs, true)
	}
	if serr := <-stored; serr != nil && (err == nil || errors.Is(err, errStoreFailed)) {
		err = fmt.Errorf("%s: %w", path, serr)
	}
	res.Format = format
	// A document with no spans ({"resourceSpans": []}) is imported as the
	// receiver takes it: nothing to store, and no error.
	if err == nil {
		// The records go in batches too; the last one drops the pending
		// mark, which makes the spans visible. A batch is two chunks' worth
		// (4096 records by default, as when chunks were 4096 spans): each
		// batch's records are created in id order, so the batch size is the
		// executions' creation order, which the explorer lists by.
		err = early
		if err == nil {
			err = w.auditAhead(db, execs, false)
		}
		recordBatch := 2 * chunkSpans
		for i := 0; err == nil && (i == 0 || i < len(execs)); i += recordBatch {
			batch := execs[i:min(i+recordBatch, len(execs))]
			last := i+recordBatch >= len(execs)
			err = db.Update(func(tx *store.Tx) error {
				if err := w.publish(tx, batch, i == 0); err != nil {
					return err
				}
				if last {
					return tx.Delete(BucketImports, store.U64(id))
				}
				return nil
			})
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	res.Stats = w.stats
	res.audits, res.readBacks = handAudits+w.keptAudits+w.readBacks, w.readBacks
	if err != nil {
		if cerr := discard(db, id); cerr != nil {
			err = errors.Join(err, fmt.Errorf("remove what the failed import wrote: %w", cerr))
		}
		return res, err
	}
	return res, nil
}

// auditAhead audits the executions whose records will carry the audit's
// grading before the records are written, on up to two cores. Those that
// receive a moved trace are audited on their kept spans when those are
// all of them, else left to publish, which moves it first.
//
// With keptOnly it audits those it can on their kept spans alone, reading
// only whether each had a record before the import, which it can do while
// the import's last spans are still being stored; without, the rest, by
// reading their spans back, which must all be committed: read
// transactions then go side by side.
func (w *writer) auditAhead(db *store.DB, execs []string, keptOnly bool) error {
	if w.ahead == nil {
		w.ahead = map[string]audit.Grade{}
	}
	if w.moved == nil { // the first of the two calls
		w.moved = map[string]bool{}
		for i := range w.traces.len() {
			if st := w.traces.at(i); st.from.n != 0 {
				w.moved[w.traces.str(st.exec)] = true
			}
		}
	}
	var todo []string
	for _, exec := range execs {
		if _, done := w.ahead[exec]; done {
			continue
		}
		if m := w.perExec[exec]; m.weighing > 0 && m.hand == notAudited && (keptOnly || !w.moved[exec]) {
			todo = append(todo, exec)
		}
	}
	// How each was audited: not (0), on its kept spans (1), read back (2).
	audited, verdicts := make([]int8, len(todo)), make([]audit.Grade, len(todo))
	workers := min(runtime.GOMAXPROCS(0), 2)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := newFlagScratch() // one each: its maps are not for two goroutines
			var kept []flagSpan         // and the kept spans decoded
			errs[k] = db.View(func(tx *store.Tx) error {
				for i := k; i < len(todo); i += workers {
					m := w.perExec[todo[i]]
					earlier := tx.Execution(todo[i]) != nil
					if !needsAudit(m, earlier) {
						continue
					}
					// Without a record, the execution's spans are this
					// import's (or a pending import's, which load skips
					// too): the kept ones are all the fast path reads
					// when they came from every write that stored some.
					var whole bool
					if kept, whole = w.kept.whole(todo[i], m.n, kept); whole && !earlier {
						if v, sure := scratch.verdictOf(kept); sure {
							verdicts[i], audited[i] = v, 1
							continue
						}
					}
					if keptOnly {
						continue
					}
					var err error
					if verdicts[i], err = graded(tx, todo[i], w.importID, scratch); err != nil {
						return err
					}
					audited[i] = 2
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if !keptOnly {
		w.kept.release() // let the spans go before the records are written
		w.kept = nil
	}
	for i, exec := range todo {
		switch audited[i] {
		case 1:
			w.ahead[exec] = verdicts[i]
			w.keptAudits++
		case 2:
			w.ahead[exec] = verdicts[i]
			w.readBacks++
		}
	}
	return errors.Join(errs...)
}

// errStoreFailed stops decoding once storing a chunk failed; the error
// reported is the store's.
var errStoreFailed = errors.New("storing an earlier chunk failed")

// fileChunk is spans on their way to the store, with the line (JSON
// Lines) each came from, their stored form and their facts: working those
// out here, on the decoding side, takes them off the committer's
// goroutine, whose transactions and fsyncs are the import's longest path.
type fileChunk struct {
	spans   []Span
	lines   []int
	encoded [][]byte
	arena   []byte // holds encoded
	facts   []spanFacts
}

// add puts s in the chunk, with its line, facts and stored form. The chunk
// holds s without its attributes and events, which are most of its
// memory: the writer reads them only through the facts and the stored form
// made here, and a root span's error text (summary), kept in Message. Up to
// 2*mergeChunks chunks go round, under the import's soft memory limit.
func (c *fileChunk) add(s *Span, line int, effect effects) {
	c.lines = append(c.lines, line)
	c.facts = append(c.facts, effect.factsOf(s))
	n := len(c.arena)
	c.arena = encodeSpan(c.arena, s)
	c.encoded = append(c.encoded, c.arena[n:len(c.arena):len(c.arena)])
	slim := *s
	slim.Attrs, slim.Events = nil, nil
	if s.ParentID == "" && s.Status == "error" {
		slim.Message = s.ErrorText()
	}
	c.spans = append(c.spans, slim)
}

// atLine names the line of the span an error is about, when it is known.
func (c *fileChunk) atLine(err error) error {
	var se *SpanError
	if !errors.As(err, &se) {
		return err
	}
	for i := len(c.spans) - 1; i >= 0; i-- {
		if c.spans[i].SpanID == se.SpanID {
			return atLine(c.lines[i], err)
		}
	}
	return err
}

// join makes c the chunks of batch one after the other, their spans
// copied (their stored forms stay in the chunks' arenas), and returns it.
func (c *fileChunk) join(batch []*fileChunk) *fileChunk {
	for _, b := range batch {
		c.spans = append(c.spans, b.spans...)
		c.lines = append(c.lines, b.lines...)
		c.encoded = append(c.encoded, b.encoded...)
		c.facts = append(c.facts, b.facts...)
	}
	return c
}

// let lets go of what join put in c, keeping its memory.
func (c *fileChunk) let() {
	clear(c.spans)
	clear(c.encoded)
	clear(c.facts)
	c.spans, c.lines, c.encoded, c.facts = c.spans[:0], c.lines[:0], c.encoded[:0], c.facts[:0]
}

func (c *fileChunk) reset() {
	clear(c.spans) // let the spans go while the chunk waits
	clear(c.encoded)
	clear(c.facts)
	c.spans, c.lines, c.encoded, c.facts = c.spans[:0], c.lines[:0], c.encoded[:0], c.facts[:0]
	if cap(c.arena) > 512*chunkSpans {
		c.arena = nil // a chunk of unusually large spans: do not keep its buffer
	}
	c.arena = c.arena[:0]
}

// CleanPending removes what imports cut short (by a crash) wrote.
func CleanPending(db *store.DB) error {
	var ids []uint64
	if err := db.View(func(tx *store.Tx) error {
		return tx.Scan(BucketImports, nil, false, func(k, _ []byte) bool {
			ids = append(ids, store.DecodeU64(k))
			return true
		})
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := discard(db, id); err != nil {
			return fmt.Errorf("clean up an unfinished import: %w", err)
		}
	}
	return nil
}

// discard deletes the spans a pending import wrote, a chunk per
// transaction, and the records it published of executions that are left
// with no span (a crash while the records were being written), then
// forgets the import.
func discard(db *store.DB, id uint64) error {
	var from []byte
	execs := map[string]bool{}
	for {
		var keys [][]byte
		var seqs []uint64
		var counts []int
		if err := db.View(func(tx *store.Tx) error {
			return tx.Scan(BucketIndex, from, false, func(k, v []byte) bool {
				from = append(k, 0)
				if seq, imp, n := decodeIndex(v); imp == id {
					keys, seqs, counts = append(keys, k), append(seqs, seq), append(counts, n)
					if i := bytes.IndexByte(k, 0); i > 0 {
						execs[string(k[:i])] = true
					}
				}
				return len(keys) < chunkSpans
			})
		}); err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		if err := db.Update(func(tx *store.Tx) error {
			for i, k := range keys {
				if err := tx.Delete(BucketIndex, k); err != nil {
					return err
				}
				for seq, last := seqs[i], lastRunValue(tx, seqs[i], counts[i]); seq <= last; seq++ {
					if err := tx.Delete(BucketSpans, store.U64(seq)); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return db.Update(func(tx *store.Tx) error {
		for exec := range execs {
			rec := tx.Execution(exec)
			if rec == nil || hasSpans(tx, exec) {
				continue
			}
			if x, err := history.DecodeExecution(rec); err == nil && x.Imported == ImportedFormat {
				if err := tx.DeleteExecution(exec); err != nil {
					return err
				}
			}
		}
		return tx.Delete(BucketImports, store.U64(id))
	})
}

// hasSpans reports whether any span is indexed under exec.
func hasSpans(tx *store.Tx, exec string) bool { return hasPrefix(tx, spanKey(exec, "", "")) }

// hasTraceSpans reports whether any span of trace is indexed under exec.
func hasTraceSpans(tx *store.Tx, exec, trace string) bool {
	return hasPrefix(tx, spanKey(exec, trace, ""))
}

func hasPrefix(tx *store.Tx, prefix []byte) bool { return tx.HasPrefix(BucketIndex, prefix) }

// pendingImports are the imports whose spans readers must not see yet.
func pendingImports(tx *store.Tx) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	err := tx.Scan(BucketImports, nil, false, func(k, _ []byte) bool {
		out[store.DecodeU64(k)] = true
		return true
	})
	return out, err
}

// LoadSpans reads an imported execution's spans.
func LoadSpans(db *store.DB, exec string) ([]Span, error) {
	var spans []Span
	err := db.View(func(tx *store.Tx) error {
		var err error
		spans, err = Load(tx, exec)
		return err
	})
	return spans, err
}
