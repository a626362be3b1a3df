package otlp

import (
	"bytes"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// Unreadable lists the imported executions of tx whose spans do not read
// whole (Load fails: an index entry names a span not stored, of another
// trace, or that does not decode; or the execution has no span left), with
// why: salvage drops each whole rather than rebuild its index from the
// spans left, since its record and verdict were made from all its spans,
// and a trace with spans missing would read as if complete.
func Unreadable(tx *store.Tx) (ids []string, why []error, err error) {
	var imported []string
	if err := tx.ExecutionRecords(func(id, rec []byte) bool {
		if x, err := history.DecodeExecution(rec); err == nil && x.Imported == ImportedFormat {
			imported = append(imported, string(id))
		}
		return true
	}); err != nil {
		return nil, nil, err
	}
	for _, id := range imported {
		if _, err := Load(tx, id); err != nil {
			ids, why = append(ids, id), append(why, err)
		}
	}
	return ids, why, nil
}

// DropExecution deletes an imported execution and its entries of the span
// index (what salvage does with one Unreadable lists). Its spans stay
// stored, named by no entry, as spans a cut-short import left are.
func DropExecution(tx *store.Tx, exec string) error {
	prefix := append([]byte(exec), 0)
	var keys [][]byte
	if err := tx.Scan(BucketIndex, prefix, false, func(k, _ []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		keys = append(keys, append([]byte(nil), k...))
		return true
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.DeleteRecord(BucketIndex, nil, k); err != nil {
			return err
		}
	}
	return tx.DeleteExecution(exec)
}
