package execindex

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/retrylab/retrylab/engine/history"
)

// ErrFull means the index cannot hold a record (more distinct statuses or
// scenarios than it has room for): a reader must answer the filter another
// way (scanning the records with Query.Match).
var ErrFull = errors.New("execution index cannot hold the records")

// A row's attributes, packed in a uint32.
const (
	attrDead     = 1 << 0 // deleted; dropped at the next compaction
	attrDup      = 1 << 1 // a delivery was duplicated (the ⚠ marker)
	attrPossible = 1 << 2 // the audit found a possible duplicate (the ◇ marker)
	policyShift  = 3      // 4 bits: index into policies
	statusShift  = 7      // 4 bits: index into statuses
	scenShift    = 11     // 21 bits: index into scenarios
	maxPolicies  = 1 << (statusShift - policyShift)
	maxStatuses  = 1 << (scenShift - statusShift)
	maxScens     = 1 << (32 - scenShift)
)

// Index holds what Query.Match reads of every execution record, in creation
// order, compactly: the ids folded and back to back in one buffer, one
// packed word per execution for its scenario, status, policy and duplicate
// and possible flags, an id table, and bitmaps of the rows of each
// scenario, status, policy and id byte (about 41 bytes per execution with
// 13-byte ids). Find answers a query from it without reading the store.
//
// Changes arrive through Put, Delete and Clear, or as committed record
// bytes through the store.ExecutionWatcher methods, which only queue them
// (the committing goroutine never waits for a Find); queued changes are
// applied before the next Find, or once enough of them have piled up.
// An Index is safe for concurrent use.
type Index struct {
	mu       sync.Mutex
	ids      []byte         // each row's id, folded, followed by a 0 byte
	starts   []uint32       // row i's folded id is ids[starts[i] : starts[i+1]-1]
	upper    []uint16       // row i's id is its folded id with bytes at these bits upper case
	odd      map[int]string // ids upper cannot say: upper case past byte 16, or not ASCII
	attrs    []uint32
	scens    []string // scenario index -> name
	scenOf   map[string]uint32
	statuses []history.Status
	statusOf map[history.Status]uint32
	policies []policy // policy index -> the policy, or the import format
	policyOf map[policy]uint32
	slots    []int32 // open addressing by id hash: row+1, 0 when empty
	seed     maphash.Seed
	dead     int
	// prefix is how many bytes every folded id held (deleted or not)
	// shares with the first: generated ids share "exec_".
	prefix  int
	full    error     // set once a record did not fit
	results []*result // the last queries' answers, most recent first

	// Bitmaps over rows: the live ones, those with a duplicate, those with
	// a possible one, those of each scenario, status and policy, and those
	// whose folded id holds each byte (about 125 KB each at a million
	// rows).
	live, dup, possible bitset
	loading             bitset // rows Load gave an id and no record yet
	scenRows            []bitset
	statusRows          []bitset
	policyRows          []bitset
	byteRows            [256]bitset

	qmu     sync.Mutex
	pending []change
}

type change struct {
	kind   byte // 'p' put, 'd' delete, 'c' clear
	id     string
	record []byte
}

// applyAt is how many queued changes the committing goroutine lets pile up
// before it applies them itself (if no Find holds the index).
const applyAt = 1024

// New returns an empty index.
func New() *Index {
	ix := &Index{seed: maphash.MakeSeed()}
	ix.reset()
	return ix
}

func (ix *Index) reset() {
	ix.ids, ix.starts, ix.attrs, ix.upper, ix.odd = nil, []uint32{0}, nil, nil, map[int]string{}
	ix.scens, ix.scenOf = nil, map[string]uint32{}
	ix.statuses, ix.statusOf = nil, map[history.Status]uint32{}
	ix.policies, ix.policyOf = nil, map[policy]uint32{}
	ix.slots = make([]int32, 1024)
	ix.dead, ix.full, ix.results, ix.prefix = 0, nil, nil, 0
	ix.live, ix.dup, ix.possible, ix.scenRows, ix.statusRows, ix.policyRows, ix.byteRows = nil, nil, nil, nil, nil, nil, [256]bitset{}
}

// Len is the number of executions held (queued changes not counted).
func (ix *Index) Len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.attrs) - ix.dead
}

// record is what the index reads of a stored execution record.
type record struct {
	ID         string
	Scenario   string
	Policy     history.Policy
	Imported   string
	Status     history.Status
	Duplicates bool
	Possible   bool
}

// decodeRecord reads what the index needs of a stored record (in either
// of history.EncodeExecution's forms).
func decodeRecord(data []byte) (record, bool) {
	x, err := history.DecodeExecution(data)
	if err != nil {
		return record{}, false
	}
	return recordOf(x), true
}

// recordOf is what the index reads of x.
func recordOf(x history.Execution) record {
	return record{ID: x.ID, Scenario: x.Scenario, Policy: x.Policy, Imported: x.Imported, Status: x.Status,
		Duplicates: x.Duplicates, Possible: x.Possible}
}

// policy is what the list's policy column says of an execution: the
// policy it ran with, or the format it was imported from.
type policy struct {
	run      history.Policy
	imported string
}

// words are the column's words (history.Execution.PolicyWords).
func (p policy) words() string {
	return history.Execution{Policy: p.run, Imported: p.imported}.PolicyWords()
}

// Load fills an empty index from the store. read calls add with every
// execution's id in creation order, oldest first, then put with every
// record's bytes (history.EncodeExecution's form) in any order: the order
// the store reads fastest. An id given no record, or a record of an id not
// given, is left out. Changes queued meanwhile are applied after it, in
// order, so a watcher set before the read began leaves the index current.
func (ix *Index) Load(read func(add func(id []byte), put func(record []byte)) error) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var failed error
	add := func(id []byte) {
		if failed != nil {
			return
		}
		row, err := ix.appendRow(string(id), attrDead)
		if err != nil {
			failed = err
			return
		}
		ix.dead++
		ix.loading.set(row)
	}
	put := func(data []byte) {
		if failed != nil {
			return
		}
		r, ok := decodeRecord(data)
		if !ok {
			return // unreadable: no list shows it either
		}
		row := ix.lookup(r.ID)
		if row < 0 || !ix.loading.has(row) {
			return
		}
		attr, err := ix.attr(r)
		if err != nil {
			ix.full, failed = err, err
			return
		}
		ix.loading.clear(row)
		ix.dead--
		ix.attrs[row] = attr
		ix.mark(row, attr, true)
	}
	err := read(add, put)
	ix.loading = nil
	if err == nil {
		err = failed
	}
	if err != nil {
		return err
	}
	ix.applyPending()
	return nil
}

// Put adds or updates an execution; a new one becomes the newest.
func (ix *Index) Put(x history.Execution) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.applyPending()
	return ix.put(recordOf(x))
}

// Delete removes an execution.
func (ix *Index) Delete(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.applyPending()
	ix.delete(id)
}

// Clear removes every execution.
func (ix *Index) Clear() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.applyPending()
	ix.reset()
}

// ExecutionPut queues a committed record (store.ExecutionWatcher).
func (ix *Index) ExecutionPut(id string, data []byte) {
	ix.queue(change{kind: 'p', id: id, record: data})
}

// ExecutionDeleted queues a committed deletion (store.ExecutionWatcher).
func (ix *Index) ExecutionDeleted(id string) { ix.queue(change{kind: 'd', id: id}) }

// ExecutionsCleared queues a committed clear (store.ExecutionWatcher).
func (ix *Index) ExecutionsCleared() { ix.queue(change{kind: 'c'}) }

func (ix *Index) queue(c change) {
	ix.qmu.Lock()
	if c.kind == 'c' {
		ix.pending = ix.pending[:0] // nothing before a clear matters
	}
	ix.pending = append(ix.pending, c)
	n := len(ix.pending)
	ix.qmu.Unlock()
	if n >= applyAt && ix.mu.TryLock() {
		ix.applyPending()
		ix.mu.Unlock()
	}
}

// applyPending applies the queued changes, in order; ix.mu is held.
func (ix *Index) applyPending() {
	ix.qmu.Lock()
	list := ix.pending
	ix.pending = nil
	ix.qmu.Unlock()
	for _, c := range list {
		switch c.kind {
		case 'p':
			r, ok := decodeRecord(c.record)
			if !ok {
				ix.delete(c.id) // unreadable: no list shows it either
				continue
			}
			_ = ix.put(r) // an error stays in ix.full, for Find
		case 'd':
			ix.delete(c.id)
		case 'c':
			ix.reset()
		}
	}
}

func (ix *Index) idOf(row int) []byte { return ix.ids[ix.starts[row] : ix.starts[row+1]-1] }

// caseOf says how id differs from its folded form: the ASCII upper-case
// letters it holds, as bits; ok is false when bits cannot say (an upper
// case letter past the 16th byte, or a byte that is not ASCII). Ids made
// by retrylab are 16 bytes or less.
func caseOf(id string) (bits uint16, ok bool) {
	for k := 0; k < len(id); k++ {
		c := id[k]
		switch {
		case c >= 0x80:
			return 0, false
		case 'A' <= c && c <= 'Z':
			if k >= 16 {
				return 0, false
			}
			bits |= 1 << k
		}
	}
	return bits, true
}

// rawID is row's id as stored.
func (ix *Index) rawID(row int) string {
	if id, ok := ix.odd[row]; ok {
		return id
	}
	b := []byte(string(ix.idOf(row)))
	for bits := ix.upper[row]; bits != 0; bits &= bits - 1 {
		k := 0
		for bits>>k&1 == 0 {
			k++
		}
		b[k] -= 'a' - 'A'
	}
	return string(b)
}

// isID reports whether row holds id (folded, its fold).
func (ix *Index) isID(row int, id, folded string) bool {
	if string(ix.idOf(row)) != folded {
		return false
	}
	if odd, ok := ix.odd[row]; ok {
		return odd == id
	}
	bits, ok := caseOf(id)
	return ok && bits == ix.upper[row]
}

// lookup finds id's live row, or -1.
func (ix *Index) lookup(id string) int {
	folded := Fold(id)
	mask := uint64(len(ix.slots) - 1)
	for i := maphash.String(ix.seed, folded) & mask; ix.slots[i] != 0; i = (i + 1) & mask {
		r := int(ix.slots[i] - 1)
		if (ix.attrs[r]&attrDead == 0 || ix.loading.has(r)) && ix.isID(r, id, folded) {
			return r
		}
	}
	return -1
}

// slot files row in the id table, by its folded id.
func (ix *Index) slot(row int) {
	mask := uint64(len(ix.slots) - 1)
	i := maphash.Bytes(ix.seed, ix.idOf(row)) & mask
	for ix.slots[i] != 0 {
		i = (i + 1) & mask
	}
	ix.slots[i] = int32(row + 1)
}

func (ix *Index) put(r record) error {
	if ix.full != nil {
		return ix.full
	}
	attr, err := ix.attr(r)
	if err != nil {
		ix.full = err
		return err
	}
	if row := ix.lookup(r.ID); row >= 0 {
		ix.mark(row, ix.attrs[row], false)
		ix.attrs[row] = attr
		ix.mark(row, attr, true)
		ix.keep(row)
		return nil
	}
	row, err := ix.appendRow(r.ID, attr)
	if err != nil {
		ix.full = err
		return err
	}
	ix.keep(row)
	return nil
}

// appendRow adds id as the newest row, with attributes attr.
func (ix *Index) appendRow(id string, attr uint32) (int, error) {
	folded := Fold(id)
	if len(ix.ids)+len(folded)+1 > 1<<32-1 || len(ix.attrs) >= 1<<31-1 {
		return 0, fmt.Errorf("%w: ids hold more than 4 GB", ErrFull)
	}
	if 2*(len(ix.attrs)+1) > len(ix.slots) {
		ix.rehash(2 * len(ix.slots))
	}
	if len(ix.attrs) == 0 {
		ix.prefix = len(folded)
	}
	for n := range ix.prefix * min(len(ix.attrs), 1) {
		if n >= len(folded) || ix.ids[n] != folded[n] {
			ix.prefix = n
			break
		}
	}
	bits, ok := caseOf(id)
	if !ok {
		ix.odd[len(ix.attrs)] = id
	}
	ix.ids = append(append(ix.ids, folded...), 0)
	ix.starts = append(ix.starts, uint32(len(ix.ids)))
	ix.attrs = append(ix.attrs, attr)
	ix.upper = append(ix.upper, bits)
	row := len(ix.attrs) - 1
	ix.slot(row)
	if attr&attrDead == 0 {
		ix.mark(row, attr, true)
	}
	ix.markID(row)
	return row, nil
}

func (ix *Index) attr(r record) (uint32, error) {
	sc, err := intern(r.Scenario, ix.scenOf, &ix.scens, maxScens, "scenarios")
	if err != nil {
		return 0, err
	}
	st, err := intern(r.Status, ix.statusOf, &ix.statuses, maxStatuses, "statuses")
	if err != nil {
		return 0, err
	}
	pol, err := intern(policy{run: r.Policy, imported: r.Imported}, ix.policyOf, &ix.policies, maxPolicies, "policies")
	if err != nil {
		return 0, err
	}
	a := sc<<scenShift | st<<statusShift | pol<<policyShift
	if r.Duplicates {
		a |= attrDup
	}
	if r.Possible {
		a |= attrPossible
	}
	return a, nil
}

// intern is v's code: its index in names, looked up in codes, added to
// both when new. At most limit codes fit the attribute's bits; what names
// them in the error.
func intern[V comparable](v V, codes map[V]uint32, names *[]V, limit int, what string) (uint32, error) {
	if c, ok := codes[v]; ok {
		return c, nil
	}
	if len(*names) == limit {
		return 0, fmt.Errorf("%w: more than %d %s", ErrFull, limit, what)
	}
	c := uint32(len(*names))
	*names = append(*names, v)
	codes[v] = c
	return c, nil
}

// bitset is one bit per row; rows past its end are not set.
type bitset []uint64

func (b *bitset) set(r int) {
	for len(*b) <= r>>6 {
		*b = append(*b, 0)
	}
	(*b)[r>>6] |= 1 << (r & 63)
}

func (b bitset) has(r int) bool { return r>>6 < len(b) && b[r>>6]&(1<<(r&63)) != 0 }

func (b bitset) clear(r int) {
	if r>>6 < len(b) {
		b[r>>6] &^= 1 << (r & 63)
	}
}

// mark sets (or clears) row's bits for attributes a: live, duplicate,
// possible, scenario, status, policy.
func (ix *Index) mark(row int, a uint32, on bool) {
	for len(ix.scenRows) < len(ix.scens) {
		ix.scenRows = append(ix.scenRows, nil)
	}
	for len(ix.statusRows) < len(ix.statuses) {
		ix.statusRows = append(ix.statusRows, nil)
	}
	for len(ix.policyRows) < len(ix.policies) {
		ix.policyRows = append(ix.policyRows, nil)
	}
	sets := []*bitset{&ix.live, &ix.scenRows[a>>scenShift], &ix.statusRows[(a>>statusShift)&(maxStatuses-1)],
		&ix.policyRows[(a>>policyShift)&(maxPolicies-1)]}
	if a&attrDup != 0 {
		sets = append(sets, &ix.dup)
	}
	if a&attrPossible != 0 {
		sets = append(sets, &ix.possible)
	}
	for _, b := range sets {
		if on {
			b.set(row)
		} else {
			b.clear(row)
		}
	}
}

// markID sets row's bit for every byte of its folded id.
func (ix *Index) markID(row int) {
	for _, c := range ix.idOf(row) {
		ix.byteRows[c].set(row)
	}
}

func (ix *Index) rehash(size int) {
	ix.slots = make([]int32, size)
	for r := range ix.attrs {
		if ix.attrs[r]&attrDead == 0 || ix.loading.has(r) {
			ix.slot(r)
		}
	}
}

func (ix *Index) delete(id string) {
	row := ix.lookup(id)
	if row < 0 {
		return
	}
	ix.mark(row, ix.attrs[row], false)
	ix.attrs[row] |= attrDead
	ix.dead++
	ix.keep(row)
	if ix.dead > 1024 && ix.dead > len(ix.attrs)/4 {
		ix.compact()
	}
}

// compact drops deleted rows.
func (ix *Index) compact() {
	ids := make([]byte, 0, len(ix.ids))
	starts := make([]uint32, 1, len(ix.starts)-ix.dead)
	attrs := make([]uint32, 0, len(ix.attrs)-ix.dead)
	upper := make([]uint16, 0, len(ix.attrs)-ix.dead)
	odd := map[int]string{}
	for r, a := range ix.attrs {
		if a&attrDead == 0 {
			if id, ok := ix.odd[r]; ok {
				odd[len(attrs)] = id
			}
			ids = append(append(ids, ix.idOf(r)...), 0)
			starts = append(starts, uint32(len(ids)))
			attrs = append(attrs, a)
			upper = append(upper, ix.upper[r])
		}
	}
	ix.ids, ix.starts, ix.attrs, ix.upper, ix.odd, ix.dead = ids, starts, attrs, upper, odd, 0
	if len(attrs) == 0 {
		ix.prefix = 0
	}
	ix.rehash(len(ix.slots))
	ix.live, ix.dup, ix.possible, ix.byteRows = nil, nil, nil, [256]bitset{}
	ix.scenRows, ix.statusRows, ix.policyRows = make([]bitset, len(ix.scens)), make([]bitset, len(ix.statuses)), make([]bitset, len(ix.policies))
	for r, a := range ix.attrs {
		ix.mark(r, a, true)
		ix.markID(r)
	}
	ix.results = nil // rows are numbered anew
}

// Find answers q: the ids of the matching executions, newest first,
// skipping skip and at most limit (all when limit <= 0), and how many match
// in all. A query not asked lately reads every row once (a few
// milliseconds per million), or only the rows a query it refines matched
// (a letter typed onto a filter); the answer is kept, as one bit per row,
// for the last few queries and kept current as records change, so asking
// again (a letter taken back, a page of the same filter, a redraw while a
// run records) costs a walk of the bits.
func (ix *Index) Find(q Query, skip, limit int) ([]string, int, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.applyPending()
	if ix.full != nil {
		return nil, 0, ix.full
	}
	res := ix.answer(q)
	var out []string
	seen := 0
	for w := len(res.bits) - 1; w >= 0 && (limit <= 0 || len(out) < limit); w-- {
		word := res.bits[w]
		if word == 0 {
			continue
		}
		if n := bits.OnesCount64(word); seen+n <= skip {
			seen += n
			continue
		}
		for ; word != 0 && (limit <= 0 || len(out) < limit); word &^= 1 << (63 - bits.LeadingZeros64(word)) {
			if seen >= skip {
				out = append(out, ix.rawID(w*64+63-bits.LeadingZeros64(word)))
			}
			seen++
		}
	}
	return out, res.total, nil
}

// result is a query's answer: one bit per row, and how many are set.
type result struct {
	q     Query
	bits  []uint64
	total int
}

// keepResults is how many answers the index keeps.
const keepResults = 8

// answer finds q's result: kept, or computed (and kept).
func (ix *Index) answer(q Query) *result {
	for i, r := range ix.results {
		if r.q == q {
			copy(ix.results[1:i+1], ix.results[:i]) // most recent first
			ix.results[0] = r
			return r
		}
	}
	res := &result{q: q, bits: ix.compute(q)}
	for _, w := range res.bits {
		res.total += bits.OnesCount64(w)
	}
	if len(ix.results) < keepResults {
		ix.results = append(ix.results, nil)
	}
	copy(ix.results[1:], ix.results)
	ix.results[0] = res
	return res
}

// compute marks the live rows that answer q, from the bitmaps: the rows of
// each scenario, status and policy whose name holds the text, and the rows
// whose id holds every byte of the text, each of which is then looked at.
func (ix *Index) compute(q Query) []uint64 {
	out := make([]uint64, (len(ix.attrs)+63)/64)
	or := func(b bitset) {
		for i, w := range b {
			out[i] |= w
		}
	}
	and := func(b bitset) {
		for i := range out {
			if i < len(b) {
				out[i] &= b[i]
			} else {
				out[i] = 0
			}
		}
	}
	andNot := func(b bitset) {
		for i, w := range b {
			out[i] &^= w
		}
	}
	switch {
	case q.All():
		or(ix.live)
		return out
	case q.dups:
		or(ix.dup)
		and(ix.live)
		return out
	case q.possible:
		or(ix.possible)
		andNot(ix.dup)
		and(ix.live)
		return out
	case q.marker:
		if st, ok := ix.statusOf[q.status]; ok {
			or(ix.statusRows[st])
			andNot(ix.dup)
			andNot(ix.possible)
			and(ix.live)
		}
		return out
	}
	for i, s := range ix.scens {
		if q.matchField(s) {
			or(ix.scenRows[i])
		}
	}
	for i, s := range ix.statuses {
		if q.matchField(string(s)) {
			or(ix.statusRows[i])
		}
	}
	for i, p := range ix.policies {
		if q.matchField(p.words()) {
			or(ix.policyRows[i])
		}
	}
	and(ix.live)
	ix.matchIDs(q, out)
	return out
}

// matchIDs sets, in out, the live rows whose id contains q's text.
func (ix *Index) matchIDs(q Query, out []uint64) {
	text := []byte(q.text)
	if bytes.IndexByte(text, 0) >= 0 {
		// Text holding the byte between ids: the rule, id by id.
		for r, a := range ix.attrs {
			if a&attrDead == 0 && q.matchField(ix.rawID(r)) {
				out[r>>6] |= 1 << (r & 63)
			}
		}
		return
	}
	if ix.prefix > 0 && bytes.Contains(ix.ids[:ix.prefix], text) {
		// Every id begins with the text: no id needs a look.
		for i, w := range ix.live {
			out[i] |= w
		}
		return
	}
	// Candidates: live rows not matched yet whose id holds every byte.
	cand := make([]uint64, len(out))
	copy(cand, ix.live)
	for k, c := range text {
		if bytes.IndexByte(text[:k], c) >= 0 {
			continue
		}
		b := ix.byteRows[c]
		for i := range cand {
			if i < len(b) {
				cand[i] &= b[i]
			} else {
				cand[i] = 0
			}
		}
	}
	for w, word := range cand {
		for word &^= out[w]; word != 0; word &= word - 1 {
			r := w*64 + bits.TrailingZeros64(word)
			if len(text) == 1 || bytes.Contains(ix.idOf(r), text) {
				out[w] |= 1 << (r & 63)
			}
		}
	}
}

// execOf is what the index holds of row, as a record the rule reads.
func (ix *Index) execOf(r int) history.Execution {
	a := ix.attrs[r]
	p := ix.policies[(a>>policyShift)&(maxPolicies-1)]
	return history.Execution{ID: ix.rawID(r), Scenario: ix.scens[a>>scenShift],
		Status: ix.statuses[(a>>statusShift)&(maxStatuses-1)], Policy: p.run, Imported: p.imported,
		Duplicates: a&attrDup != 0, Possible: a&attrPossible != 0}
}

// keep brings the kept answers up to date with row, just put or deleted.
func (ix *Index) keep(r int) {
	if len(ix.results) == 0 {
		return
	}
	live := ix.attrs[r]&attrDead == 0
	var x history.Execution
	if live {
		x = ix.execOf(r)
	}
	for _, res := range ix.results {
		for len(res.bits) <= r>>6 {
			res.bits = append(res.bits, 0)
		}
		had := res.bits[r>>6]&(1<<(r&63)) != 0
		has := live && res.q.Match(x)
		switch {
		case has && !had:
			res.bits[r>>6] |= 1 << (r & 63)
			res.total++
		case had && !has:
			res.bits[r>>6] &^= 1 << (r & 63)
			res.total--
		}
	}
}
