package check

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// CheckDB checks every execution of a database. Open the database read-only
// (store.Options{ReadOnly: true}): the check never writes. Undecodable
// entries are durability violations, not errors; an error means the
// database could not be read.
func CheckDB(db *store.DB, opts Options) (*Report, error) { return checkDB(db, opts, keepAttempts) }

// checkDB is CheckDB keeping at most keep attempts of an execution in memory.
//
// Everything is read in one transaction: the ledger first, into an index
// of where each effect is (ledgerIndex), then the executions one at a
// time, each with its effects read again from the ledger just before its
// check. Memory holds the index (16 bytes an effect), the checks of the
// few hundred short histories in the pipeline (or of one long one) and
// the report, never the ledger's effects of every execution nor a list of
// every id, so a database of a million executions checks in the heap of
// a few.
func checkDB(db *store.DB, opts Options, keep int) (*Report, error) {
	c := New(opts)
	c.keep = keep
	var bad []Violation
	idx := newLedgerIndex()
	var stage string // what failed, for the error
	err := db.View(func(tx *store.Tx) error {
		stage = "read the ledger"
		// The ledgers' entries are decoded into values of their own (the
		// decoders copy): read in place.
		if err := tx.ScanInPlace(world.BucketOutbox, func(k, v []byte) bool {
			m, err := world.DecodeMessage(k, v)
			if err != nil {
				bad = append(bad, Violation{Kind: "durability", Detail: fmt.Sprintf("outbox entry %d does not decode: %v", store.DecodeU64(k), err)})
				return true
			}
			e := MessageEffect(m)
			c.count(e)
			if !idx.add(e, k, false) {
				c.hold(e)
			}
			return true
		}); err != nil {
			return err
		}
		if err := tx.ScanInPlace(world.BucketCRMWrites, func(k, v []byte) bool {
			wr, err := world.DecodeCRMWrite(k, v)
			if err != nil {
				bad = append(bad, Violation{Kind: "durability", Detail: fmt.Sprintf("CRM write %d does not decode: %v", store.DecodeU64(k), err)})
				return true
			}
			e := WriteEffect(wr)
			c.count(e)
			if !idx.add(e, k, true) {
				c.hold(e)
			}
			return true
		}); err != nil {
			return err
		}
		idx.sort()

		// Executions are read one at a time, in creation order (their
		// records and history numbers looked up a window at a time in
		// key order: store.Tx.ExecutionsInOrder). Short
		// histories are decoded and checked by a worker per core while
		// the next ones are read (pipeline); their verdicts join the
		// report in creation order, as if checked one by one. A long
		// history streams through the check an event at a time, so
		// memory holds the check's record of its attempts, never its
		// events.
		stage = "list executions"
		p := newPipeline(c, &bad)
		defer p.stop()
		var failed error
		if err := tx.ExecutionsInOrder(func(id string, rec []byte) bool {
			if err := checkStored(tx, c, idx, p, id, rec, &bad); err != nil {
				stage, failed = "read "+id, err
				return false
			}
			return true
		}); err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
		p.drain()
		// Effects of executions the database does not hold (or that are
		// not checked: imported ones, undecodable ones) go to the report.
		stage = "read the ledger"
		return idx.rest(tx, c.hold)
	})
	if err != nil {
		return nil, fmt.Errorf("check %s: %s: %w", db.Path(), stage, err)
	}
	r := c.Report()
	r.Violations = append(bad, r.Violations...)
	return r, nil
}

// checkStored checks the execution id, whose record is rec, in tx: a
// short history goes to the pipeline, a long one streams through the
// check here, once the pipeline has drained.
func checkStored(tx *store.Tx, c *Checker, idx *ledgerIndex, p *pipeline, id string, rec []byte, bad *[]Violation) error {
	x, err := history.DecodeExecution(rec)
	if err != nil {
		p.drain()
		*bad = append(*bad, Violation{Execution: id, Kind: "durability", Detail: fmt.Sprintf("execution record does not decode: %v", err)})
		return nil
	}
	if x.ID == "" || x.Imported != "" {
		return nil // imported traces have no ledger to hold them to: 'retrylab audit' is theirs
	}
	if err := idx.take(tx, x.ID, c.hold); err != nil {
		return err
	}
	if queued, err := p.read(tx, x); err != nil || queued {
		return err
	}
	// A long history: checked here, an event at a time, after every
	// execution before it.
	p.drain()
	// A second pass, when one is needed, reads the history in the same
	// transaction; an event that does not decode was reported by the
	// first.
	reread := func(fn func(history.Event)) error {
		return tx.Events(id, 0, func(_ uint64, data []byte) bool {
			if ev, err := history.Decode(data); err == nil {
				fn(ev)
			}
			return true
		})
	}
	s := c.Stream(x, reread)
	if err := tx.Events(id, 0, func(seq uint64, data []byte) bool {
		ev, err := history.Decode(data)
		if err != nil {
			*bad = append(*bad, Violation{Execution: id, Kind: "durability", Detail: fmt.Sprintf("event %d does not decode: %v", seq, err)})
			return true
		}
		s.Apply(ev)
		return true
	}); err != nil {
		return err
	}
	s.Done()
	return nil
}

// pipelineEvents and pipelineBytes bound a history the pipeline takes:
// longer ones stream through the check on their own, so memory stays
// flat however long a history is. Histories go to the workers in batches
// of up to batchHistories (or batchBytes of events), so a worker is
// woken once per batch, not per history.
const (
	pipelineEvents = 1024
	pipelineBytes  = 256 << 10
	pipelineDepth  = 4 // batches read ahead of the oldest not yet in the report
	batchHistories = 64
	batchBytes     = 256 << 10
)

// pipeline checks short histories on workers, one per core, while the
// transaction's goroutine reads the next ones, and adds their verdicts to
// the report in the order they were read.
type pipeline struct {
	c       *Checker
	bad     *[]Violation
	jobs    chan *batch
	next    *batch // being filled
	pending []*batch
	// free holds batches whose verdicts joined the report, emptied, for
	// the next ones: a million short histories fill some 16 000 batches.
	free    []*batch
	workers sync.WaitGroup
	stopped bool
}

// batch is consecutive short histories, checked by one worker.
type batch struct {
	jobs []job
	// The events of its histories, one after another in buf: the i-th
	// ends at ends[i] and has sequence number seqs[i].
	buf  []byte
	ends []int
	seqs []uint64
	done chan struct{}
}

// job is one short history: read by the pipeline, checked by a worker.
type job struct {
	x       history.Execution
	effects []Effect
	// Its events are events[from:to] of its batch.
	from, to int
	// Set by the worker.
	tot walkTotals
	res ExecResult
	bad []Violation
}

func newPipeline(c *Checker, bad *[]Violation) *pipeline {
	p := &pipeline{c: c, bad: bad, jobs: make(chan *batch, pipelineDepth)}
	for range runtime.GOMAXPROCS(0) {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			var space walkSpace // this worker's, one history after another
			for b := range p.jobs {
				for i := range b.jobs {
					b.jobs[i].check(c.opts, b, &space)
				}
				close(b.done)
			}
		}()
	}
	return p
}

// read reads x's history for a worker and queues it; it answers false
// when the history is too long for the pipeline (the caller checks it) or
// does not fit in what the check keeps of one execution.
func (p *pipeline) read(tx *store.Tx, x history.Execution) (bool, error) {
	if p.next == nil {
		if k := len(p.free); k > 0 {
			p.next, p.free = p.free[k-1], p.free[:k-1]
			p.next.done = make(chan struct{})
		} else {
			p.next = &batch{buf: make([]byte, 0, 64<<10), jobs: make([]job, 0, batchHistories), done: make(chan struct{})}
		}
	}
	b := p.next
	limit := min(pipelineEvents, p.c.keep)
	j := job{x: x, from: len(b.ends)}
	start := len(b.buf)
	long := false
	if err := tx.EventsInPlace(x.ID, 0, func(seq uint64, data []byte) bool {
		if len(b.ends)-j.from >= limit || len(b.buf)-start+len(data) > pipelineBytes {
			long = true
			return false
		}
		b.buf = append(b.buf, data...)
		b.ends = append(b.ends, len(b.buf))
		b.seqs = append(b.seqs, seq)
		return true
	}); err != nil {
		return false, err
	}
	if long {
		b.buf, b.ends, b.seqs = b.buf[:start], b.ends[:j.from], b.seqs[:j.from]
		return false, nil
	}
	j.to = len(b.ends)
	j.effects = p.c.effects[x.ID]
	delete(p.c.effects, x.ID)
	b.jobs = append(b.jobs, j)
	if len(b.jobs) >= batchHistories || len(b.buf) >= batchBytes {
		p.send()
	}
	return true, nil
}

// send hands the batch being filled to the workers.
func (p *pipeline) send() {
	if p.next == nil || len(p.next.jobs) == 0 {
		return
	}
	b := p.next
	p.next = nil
	p.pending = append(p.pending, b)
	p.jobs <- b
	for len(p.pending) > pipelineDepth {
		p.merge()
	}
}

// check decodes the job's events and checks them, as Stream, Apply and
// Done do, short of adding the verdict to the report.
func (j *job) check(opts Options, b *batch, space *walkSpace) {
	w := space.walk(j.x, opts, j.to-j.from+1, j.effects)
	w.reread = func(func(history.Event)) error { return fmt.Errorf("a short history is not read twice") }
	from := 0
	if j.from > 0 {
		from = b.ends[j.from-1]
	}
	for i := j.from; i < j.to; i++ {
		ev, err := history.Decode(b.buf[from:b.ends[i]])
		from = b.ends[i]
		if err != nil {
			j.bad = append(j.bad, Violation{Execution: j.x.ID, Kind: "durability", Detail: fmt.Sprintf("event %d does not decode: %v", b.seqs[i], err)})
			continue
		}
		w.apply(ev)
	}
	w.done()
	j.res = w.finish(j.effects)
	j.tot = w.totals()
	space.release(w)
}

// merge waits for the oldest pending batch and adds its verdicts.
func (p *pipeline) merge() {
	b := p.pending[0]
	<-b.done
	p.pending[0] = nil
	p.pending = p.pending[1:]
	for i := range b.jobs {
		j := &b.jobs[i]
		*p.bad = append(*p.bad, j.bad...)
		p.c.report.add(j.x, j.tot, j.res)
	}
	// The report copied what it keeps of the jobs (history.Decode copied
	// what the checks kept of the events): the batch's space is reused.
	clear(b.jobs)
	b.jobs, b.buf, b.ends, b.seqs, b.done = b.jobs[:0], b.buf[:0], b.ends[:0], b.seqs[:0], nil
	p.free = append(p.free, b)
}

// drain adds every verdict not yet in the report.
func (p *pipeline) drain() {
	p.send()
	for len(p.pending) > 0 {
		p.merge()
	}
}

// stop ends the workers (after an error, what is pending is dropped).
func (p *pipeline) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.jobs)
	p.workers.Wait()
}

// ledgerIndex finds the ledger's effects of an execution without holding
// them: 16 bytes per effect (a hash of its execution's id, and where it
// is), sorted by the hash; an execution's effects are read again, by key,
// when it is checked. Hashes that collide are told apart by the effect's
// own attribution, once read.
type ledgerIndex struct {
	seed maphash.Seed
	refs []ledgerRef
	// starts[b] is the first ref whose hash's top bits are b (a bucket
	// table over the sorted refs: a lookup reads one or two refs, where
	// a binary search of a million misses the cache twenty times).
	starts []uint32
	bits   uint
}

// ledgerRef is one effect in the index. at is the CRM flag in its top
// bit, the entry's sequence number (its key) shifted left by one, and the
// taken flag in its lowest bit: sorted, an execution's effects come
// outbox first, then the CRM's, each in sequence order, as they were
// read.
type ledgerRef struct {
	hash uint64
	at   uint64
}

const (
	refCRM   = 1 << 63
	refTaken = 1
	refSeqs  = 1 << 62 // sequence numbers the index can hold
)

func newLedgerIndex() *ledgerIndex { return &ledgerIndex{seed: maphash.MakeSeed()} }

// add indexes e, the entry under key k; it reports false when e is not
// for the index (unattributed, or under a key that is not a sequence
// number), for the caller to hold.
func (l *ledgerIndex) add(e Effect, k []byte, crm bool) bool {
	seq := store.DecodeU64(k)
	if e.Attr.Execution == "" || len(k) != 8 || seq >= refSeqs {
		return false
	}
	at := seq << 1
	if crm {
		at |= refCRM
	}
	l.refs = append(l.refs, ledgerRef{hash: maphash.String(l.seed, e.Attr.Execution), at: at})
	return true
}

func (l *ledgerIndex) sort() {
	slices.SortFunc(l.refs, func(a, b ledgerRef) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.at, b.at)
	})
	l.bits = uint(min(max(bits.Len(uint(len(l.refs)))-1, 0), 24))
	l.starts = make([]uint32, 1<<l.bits+1)
	i := 0
	for b := range l.starts {
		for i < len(l.refs) && l.refs[i].hash>>(64-l.bits) < uint64(b) {
			i++
		}
		l.starts[b] = uint32(i)
	}
}

// lookup returns where the refs of hash h begin.
func (l *ledgerIndex) lookup(h uint64) int {
	b := h >> (64 - l.bits)
	if l.bits == 0 {
		b = 0
	}
	i, end := int(l.starts[b]), int(l.starts[b+1])
	for i < end && l.refs[i].hash < h {
		i++
	}
	return i
}

// read reads the effect ref points at.
func (l *ledgerIndex) read(tx *store.Tx, ref ledgerRef) (Effect, error) {
	key := store.U64((ref.at &^ refCRM) >> 1)
	if ref.at&refCRM != 0 {
		wr, err := world.DecodeCRMWrite(key, tx.GetInPlace(world.BucketCRMWrites, key))
		return WriteEffect(wr), err
	}
	m, err := world.DecodeMessage(key, tx.GetInPlace(world.BucketOutbox, key))
	return MessageEffect(m), err
}

// take hands fn the effects attributed to the execution id, in the order
// they were indexed, and marks them taken.
func (l *ledgerIndex) take(tx *store.Tx, id string, fn func(Effect)) error {
	h := maphash.String(l.seed, id)
	i := l.lookup(h)
	for ; i < len(l.refs) && l.refs[i].hash == h; i++ {
		ref := &l.refs[i]
		if ref.at&refTaken != 0 {
			continue
		}
		e, err := l.read(tx, *ref)
		if err != nil {
			return fmt.Errorf("ledger entry %d no longer decodes: %w", (ref.at&^refCRM)>>1, err)
		}
		if e.Attr.Execution != id {
			continue // another execution's, under the same hash
		}
		ref.at |= refTaken
		fn(e)
	}
	return nil
}

// rest hands fn every effect not taken, and forgets the index.
func (l *ledgerIndex) rest(tx *store.Tx, fn func(Effect)) error {
	for _, ref := range l.refs {
		if ref.at&refTaken != 0 {
			continue
		}
		e, err := l.read(tx, ref)
		if err != nil {
			return fmt.Errorf("ledger entry %d no longer decodes: %w", (ref.at&^refCRM)>>1, err)
		}
		fn(e)
	}
	l.refs = nil
	return nil
}

// Live checks executions of a running host one by one, reading the ledger
// incrementally: a chaos host uses it to count violations as it goes.
type Live struct {
	mu       sync.Mutex
	c        *Checker
	mailFrom uint64
	crmFrom  uint64
}

// NewLive returns a live checker.
func NewLive(opts Options) *Live { return &Live{c: New(opts), mailFrom: 1, crmFrom: 1} }

// LiveSource is what a live check reads of a running host: its ledgers,
// incrementally, and an execution's history. *engine.Host is one.
type LiveSource interface {
	OutboxFrom(from uint64, limit int) ([]world.Message, error)
	CRMWrites(from uint64, limit int) ([]world.CRMWrite, error)
	Execution(id string) (history.Execution, error)
	Events(id string, from uint64, limit int) ([]history.Event, error)
}

// Execution checks one finished execution of h.
func (l *Live) Execution(h LiveSource, id string) (ExecResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs, err := h.OutboxFrom(l.mailFrom, 0)
	if err != nil {
		return ExecResult{}, err
	}
	for _, m := range msgs {
		l.c.AddEffects(MessageEffect(m))
		l.mailFrom = m.Seq + 1
	}
	writes, err := h.CRMWrites(l.crmFrom, 0)
	if err != nil {
		return ExecResult{}, err
	}
	for _, wr := range writes {
		l.c.AddEffects(WriteEffect(wr))
		l.crmFrom = wr.Seq + 1
	}
	x, err := h.Execution(id)
	if err != nil {
		return ExecResult{}, err
	}
	events, err := h.Events(id, 0, 0)
	if err != nil {
		return ExecResult{}, err
	}
	return l.c.Execution(x, events), nil
}
