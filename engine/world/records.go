package world

import (
	"errors"

	"github.com/retrylab/retrylab/store"
)

// CheckRecords decodes every record of the world's ledgers in tx (the
// outbox, the key store, the CRM and its write log) and returns a
// store.DamagedRecord for each one that does not decode, at most max of
// them (max <= 0: all). It reads what the model of `retrylab check` does
// not, so that damage to any record is found as damage.
func CheckRecords(tx *store.Tx, max int) ([]error, error) {
	var damaged []error
	full := func() bool { return max > 0 && len(damaged) >= max }
	walk := func(b store.Bucket, decode func(k, v []byte) error) error {
		return tx.Scan(b, nil, false, func(k, v []byte) bool {
			if err := decode(k, v); err != nil {
				damaged = append(damaged, tx.Damaged(b, nil, k, err))
			}
			return !full()
		})
	}
	decoders := []struct {
		bucket store.Bucket
		decode func(k, v []byte) error
	}{
		{BucketOutbox, func(k, v []byte) error { _, err := DecodeMessage(k, v); return err }},
		{BucketKeys, func(k, v []byte) error {
			if _, ok := decodeKeyRecord(string(k), v); !ok {
				return errors.New("undecodable key record")
			}
			return nil
		}},
		{BucketCRM, func(k, v []byte) error { _, err := decodeRecord(string(k), v); return err }},
		{BucketCRMWrites, func(k, v []byte) error { _, err := DecodeCRMWrite(k, v); return err }},
	}
	for _, d := range decoders {
		if full() {
			break
		}
		if err := walk(d.bucket, d.decode); err != nil {
			return damaged, err
		}
	}
	return damaged, nil
}
