package otlp

import (
	"encoding/binary"
	"errors"

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

// blockRun is the run a write is storing: its index key's execution, 0 and
// trace id, its first value's sequence, how many spans it has so far, and
// the block being filled (its start in the write's slab, its spans).
type blockRun struct {
	trace      []byte
	first      uint64
	n, inBlock uint32
	block      int
}

// blockSlab is the size of the slab a write cuts its blocks from: the
// spans' stored forms with their lengths, and room for a block's first
// byte and checksum (store.SealRoom) with each, in case each is a block.
func blockSlab(puts []pendingPut) int {
	n := 0
	for i := range puts {
		if puts[i].fresh {
			n += len(puts[i].val) + binary.MaxVarintLen32 + 1 + store.SealRoom
		}
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
