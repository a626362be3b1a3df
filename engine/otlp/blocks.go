package otlp

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/retrylab/retrylab/store"
)

// How a run's spans are stored in BucketSpans.
//
// A run (the spans one write stored of a trace the database did not hold)
// is stored in blocks: values at consecutive sequences, each holding
// several spans, and one index entry naming the first value and the number
// of spans. A block is
//
//	byte     spanBlock (2)
//	spans    each a uvarint length and its stored form (encodeSpan)
//
// One value for a trace's spans instead of one each spares the commit a
// bbolt put for each span, the longest part of its build (BENCHMARKS.md,
// 24a). Databases written before blocks hold a run's spans one a value, at
// consecutive sequences; a reader walks the values from the first until it
// has the run's spans (runSpans) and reads both.
const spanBlock = 2

// maxBlockBytes bounds a block's spans: a long trace's run is stored in
// several values of about this size, not one value of megabytes (a value
// is contiguous pages in bbolt).
const maxBlockBytes = 32 << 10

// blockRun is the run a write is storing: its index key's execution, 0
// and trace id, its spans' stored forms, and the prepared block they are,
// in order, so far (pre, -1: none).
type blockRun struct {
	trace []byte
	vals  [][]byte
	pre   int32
}

func (r *blockRun) n() int { return len(r.vals) }

// prepared says whether the run is a prepared block's spans, all of them:
// storeRun appends that block as it is.
func (r *blockRun) prepared(p *preparedBlocks) bool {
	return r.pre >= 0 && int(p.count[r.pre]) == len(r.vals)
}

// add adds put p's span to the run (the first makes it p's trace's).
func (r *blockRun) add(p *pendingPut, prepared *preparedBlocks) {
	if len(r.vals) == 0 {
		r.trace, r.pre = p.key[:p.tlen], -1
		if prepared != nil {
			if at := prepared.of[p.index]; at.pos == 0 {
				r.pre = at.block
			}
		}
	} else if r.pre >= 0 {
		if at := prepared.of[p.index]; at.block != r.pre || int(at.pos) != len(r.vals) {
			r.pre = -1
		}
	}
	r.vals = append(r.vals, p.val)
}

// putRun stores run (storeRun) and its index entry, cut from *keys, and
// empties it.
func (w *writer) putRun(tx *store.Tx, run *blockRun, slab, keys *[]byte) error {
	first, err := w.storeRun(tx, run, slab)
	if err != nil {
		return err
	}
	k := *keys
	n := len(k)
	k = append(append(k, run.trace...), 0)
	k = binary.BigEndian.AppendUint64(k, first)
	key := k[n:len(k):len(k)]
	n = len(k)
	k = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(k, first), w.importID)
	k = binary.BigEndian.AppendUint32(k, uint32(run.n()))
	*keys = k
	run.vals = run.vals[:0]
	return tx.Put(BucketIndex, key, k[n:len(k):len(k)])
}

// storeRun appends run's spans to BucketSpans and returns the first
// value's sequence: its prepared block as it is, when the run is that
// block's spans, else blocks of up to maxBlockBytes cut from *slab, which
// bbolt holds until the commit (a slab too small for them grows).
func (w *writer) storeRun(tx *store.Tx, run *blockRun, slab *[]byte) (uint64, error) {
	if run.prepared(w.prepared) {
		return tx.AppendInPlace(BucketSpans, w.prepared.blocks[run.pre])
	}
	blocks := *slab
	defer func() { *slab = blocks }()
	var first uint64
	appended := false
	from := -1 // the block being filled: its start in the slab
	appendBlock := func() error {
		end := len(blocks)
		blocks = append(blocks, make([]byte, store.SealRoom)...)
		seq, err := tx.AppendInPlace(BucketSpans, blocks[from:end:len(blocks)])
		if !appended {
			first, appended = seq, true
		}
		from = -1
		return err
	}
	for _, v := range run.vals {
		if from >= 0 && len(blocks)-from+len(v) > maxBlockBytes {
			if err := appendBlock(); err != nil {
				return 0, err
			}
		}
		if from < 0 {
			from = len(blocks)
			blocks = append(blocks, spanBlock)
		}
		blocks = binary.AppendUvarint(blocks, uint64(len(v)))
		blocks = append(blocks, v...)
	}
	return first, appendBlock()
}

// blockSlab is the size of the slab a write cuts its blocks from: its
// fresh spans' blockRoom.
func blockSlab(puts []pendingPut) int {
	n := 0
	for i := range puts {
		if puts[i].fresh {
			n += blockRoom(puts[i].val)
		}
	}
	return n
}

// blockRoom is what a stored form v takes at most in the blocks storeRun
// cuts: v, its length, and a block's first byte and checksum, in case it
// is a block of its own.
func blockRoom(v []byte) int { return len(v) + binary.MaxVarintLen32 + 1 + store.SealRoom }

// preparedBlocks are a request's spans encoded ahead, on the request's
// goroutine, as a write stores a trace new to the database
// (prepareBlocks): each trace's spans in span id order (the order of
// their index keys) as one block with room for its checksum after it.
// A write whose run of a trace is that block's spans appends the block as
// it is (storeRun), instead of copying the spans into one.
type preparedBlocks struct {
	blocks [][]byte   // each with store.SealRoom bytes of room after it
	count  []int32    // each block's spans
	of     []blockPos // each span's block (-1: none) and place in it
	order  []int      // prepareBlocks' scratch
}

// blockPos is a span's place in a prepared block.
type blockPos struct{ block, pos int32 }

// prepareBlocks encodes spans into arena, each trace's as one block of at
// most maxBlockBytes (a longer trace's spans are in no block), and sets
// encoded[i] to span i's stored form. It returns the arena.
func (pb *preparedBlocks) prepareBlocks(spans []Span, arena []byte, encoded [][]byte) []byte {
	pb.blocks, pb.count = pb.blocks[:0], pb.count[:0]
	pb.of = slices.Grow(pb.of[:0], len(spans))[:len(spans)]
	order := pb.order[:0]
	for i := range spans {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := strings.Compare(spans[a].TraceID, spans[b].TraceID); c != 0 {
			return c
		}
		return strings.Compare(spans[a].SpanID, spans[b].SpanID)
	})
	pb.order = order
	for len(order) > 0 {
		n := 1
		for n < len(order) && spans[order[n]].TraceID == spans[order[0]].TraceID {
			n++
		}
		trace := order[:n]
		order = order[n:]
		start := len(arena)
		arena = append(arena, spanBlock)
		for _, i := range trace {
			arena, encoded[i] = appendLengthAndSpan(arena, &spans[i])
		}
		end := len(arena)
		arena = append(arena, make([]byte, store.SealRoom)...)
		block := int32(-1)
		if end-start <= maxBlockBytes {
			block = int32(len(pb.blocks))
			pb.blocks = append(pb.blocks, arena[start:end:end+store.SealRoom])
			pb.count = append(pb.count, int32(len(trace)))
		}
		for k, i := range trace {
			pb.of[i] = blockPos{block: block, pos: int32(k)}
		}
	}
	return arena
}

// appendLengthAndSpan appends s's stored form to dst after its length (a
// uvarint), as a block holds it, and returns dst and the stored form.
// The span is encoded in place after room for a length of two bytes (a
// span of 128 bytes to 16 KiB) and moved when its length takes another.
func appendLengthAndSpan(dst []byte, s *Span) ([]byte, []byte) {
	at := len(dst)
	dst = encodeSpan(append(dst, 0, 0), s)
	l := len(dst) - at - 2
	k := uvarintLen(uint64(l))
	if k != 2 {
		if k > 2 {
			dst = append(dst, make([]byte, k-2)...)
		}
		copy(dst[at+k:], dst[at+2:at+2+l])
		dst = dst[:at+k+l]
	}
	binary.PutUvarint(dst[at:at+k], uint64(l))
	return dst, dst[at+k : at+k+l : at+k+l]
}

// uvarintLen is how many bytes binary.PutUvarint takes for v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// runSpans calls fn for each of the n spans of a run whose values start at
// sequence seq, with the sequence of the value that holds it and its
// stored form (nil: the value is not stored; fn says so). A value is one
// span or a block of them (spanBlock). The stored forms are valid in tx
// only. A block that does not split is damage to its value.
func runSpans(tx *store.Tx, seq uint64, n int, fn func(seq uint64, span []byte) error) error {
	for ; n > 0; seq++ {
		var err error
		if bad := eachStoredSpan(tx.Get(BucketSpans, store.U64(seq)), func(span []byte) bool {
			err = fn(seq, span)
			n--
			return err == nil && n > 0
		}); bad != nil {
			return tx.Damaged(BucketSpans, nil, store.U64(seq), bad)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lastRunValue is the sequence of the last value of a run of n spans whose
// values start at seq (runSpans): a value that does not split ends it.
func lastRunValue(tx *store.Tx, seq uint64, n int) uint64 {
	for ; ; seq++ {
		err := eachStoredSpan(tx.GetInPlace(BucketSpans, store.U64(seq)), func([]byte) bool {
			n--
			return n > 0
		})
		if err != nil || n <= 0 {
			return seq
		}
	}
}

// eachStoredSpan calls fn for each span stored in value v of BucketSpans,
// until fn returns false: v itself, or each of a block's. It says why v, a
// block, does not split.
func eachStoredSpan(v []byte, fn func(span []byte) bool) error {
	if len(v) == 0 || v[0] != spanBlock {
		fn(v)
		return nil
	}
	rest := v[1:]
	if len(rest) == 0 {
		return errors.New("an empty block of spans")
	}
	for len(rest) > 0 {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l == 0 || uint64(len(rest)-k) < l {
			return errors.New("a block of spans cut short")
		}
		if !fn(rest[k : k+int(l) : k+int(l)]) {
			return nil
		}
		rest = rest[k+int(l):]
	}
	return nil
}
