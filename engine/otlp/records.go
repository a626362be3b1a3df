package otlp

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// CheckRecords reads every entry of the span index and every stored span
// in tx, and returns a store.DamagedRecord for each that is not as Save
// wrote it, at most max (max <= 0: all): an index entry that names no
// imported execution, or spans that are not stored, do not decode or
// belong to another trace; a span that does not decode. A damaged entry
// would otherwise hide an execution's spans, or lend it another's.
func CheckRecords(tx *store.Tx, max int) ([]error, error) {
	var damaged []error
	full := func() bool { return max > 0 && len(damaged) >= max }
	owners := map[string]bool{} // execution id -> imported from OpenTelemetry
	named := map[uint64]bool{}
	// An import still in progress (or cut short) owns entries whose
	// execution may not be written yet: they are not damage.
	pending, err := pendingImports(tx)
	if err != nil {
		return nil, err
	}
	err = tx.Scan(BucketIndex, nil, false, func(k, v []byte) bool {
		seq, imp, n := decodeIndex(v)
		if pending[imp] {
			return true
		}
		exec, rest, ok := bytes.Cut(k, []byte{0})
		if !ok {
			damaged = append(damaged, tx.Damaged(BucketIndex, nil, k, errors.New("a key with no execution in it")))
			return !full()
		}
		imported, seen := owners[string(exec)]
		if !seen {
			if rec := tx.Execution(string(exec)); rec != nil {
				x, err := history.DecodeExecution(rec)
				imported = err == nil && x.Imported == ImportedFormat
			}
			owners[string(exec)] = imported
		}
		if !imported {
			damaged = append(damaged, tx.Damaged(BucketIndex, nil, k, fmt.Errorf("it names execution %q, which holds no imported trace", exec)))
			return !full()
		}
		if bad := runSpans(tx, seq, n, func(seq uint64, b []byte) error {
			var s Span
			if err := decodeSpan(b, &s); err != nil {
				return spanDamaged(tx, k, seq, b, err)
			}
			if !bytes.HasPrefix(rest, []byte(s.TraceID)) {
				return tx.Damaged(BucketIndex, nil, k, fmt.Errorf("it names span %d, of another trace (%s)", seq, s.TraceID))
			}
			named[seq] = true
			return nil
		}); bad != nil {
			damaged = append(damaged, bad)
			return !full()
		}
		return true
	})
	if err != nil || full() {
		return damaged, err
	}
	err = tx.Scan(BucketSpans, nil, false, func(k, v []byte) bool {
		if named[store.DecodeU64(k)] || len(pending) > 0 {
			return true // decoded above
		}
		var bad error
		if err := eachStoredSpan(v, func(b []byte) bool {
			var s Span
			bad = decodeSpan(b, &s)
			return bad == nil
		}); err != nil {
			bad = err
		}
		if bad != nil {
			damaged = append(damaged, tx.Damaged(BucketSpans, nil, k, bad))
		}
		return !full()
	})
	return damaged, err
}
