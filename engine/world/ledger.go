package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/retrylab/retrylab/store"
)

// StoredKey is an idempotency key record, as the key store holds it.
type StoredKey struct {
	Key         string          `json:"key"`
	Fingerprint string          `json:"fingerprint"`      // sha256 of method, path and canonical body
	Status      int             `json:"status,omitempty"` // stored response status; 0 while in flight
	Body        json.RawMessage `json:"body,omitempty"`   // stored response body; nil while in flight
	Created     time.Time       `json:"created"`          // world clock
	Expires     time.Time       `json:"expires"`          // Created + retention: after it the key is forgotten
	Expired     bool            `json:"expired"`          // Expires has passed by the world clock at read time
	InFlight    bool            `json:"in_flight"`
	Endpoint    string          `json:"endpoint"`      // service, method and path, e.g. "mail POST /v1/send"
	Ref         string          `json:"ref,omitempty"` // message or record id the request produced
	Attribution Attribution     `json:"attribution"`   // of the request that stored the key
}

// Record is a CRM row. Fields holds decoded JSON values, numbers as
// json.Number.
type Record struct {
	ID          string         `json:"id"`
	Fields      map[string]any `json:"fields"`
	Version     int            `json:"version"`
	Created     time.Time      `json:"created"`
	Updated     time.Time      `json:"updated"`
	Attribution Attribution    `json:"attribution"` // of the write that last changed the row
}

// Outbox returns up to limit messages with Seq >= fromSeq, in sequence
// order; limit <= 0 means all. Page on with the last Seq + 1.
func (w *World) Outbox(fromSeq uint64, limit int) ([]Message, error) {
	return readLog(w.db, BucketOutbox, fromSeq, limit, "outbox", DecodeMessage)
}

// MessagesFor returns the outbox messages attributed to an execution, in
// sequence order; execution "" gives the unattributed ones. It reads an
// index, so its cost follows the execution's messages, not the outbox.
func (w *World) MessagesFor(execution string) ([]Message, error) {
	var out []Message
	err := w.db.View(func(tx *store.Tx) error {
		seqs, err := execIndexSeqs(tx, execution)
		if err != nil {
			return err
		}
		for _, seq := range seqs {
			v := tx.Get(BucketOutbox, store.U64(seq))
			if v == nil {
				continue
			}
			m, err := DecodeMessage(store.U64(seq), v)
			if err != nil {
				return tx.Damaged(BucketOutbox, nil, store.U64(seq), err)
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read messages of %q: %w", execution, err)
	}
	return out, nil
}

// Recent returns the newest limit messages of the outbox, oldest first,
// and the outbox's total size. limit <= 0 returns none, only the total.
func (w *World) Recent(limit int) ([]Message, int, error) {
	var out []Message
	var total int
	err := w.db.View(func(tx *store.Tx) error {
		out = out[:0]
		total = outboxSize(tx)
		if limit <= 0 {
			return nil
		}
		var derr error
		if err := tx.Scan(BucketOutbox, nil, true, func(k, v []byte) bool {
			var m Message
			if m, derr = DecodeMessage(k, v); derr != nil {
				derr = tx.Damaged(BucketOutbox, nil, k, derr)
				return false
			}
			out = append(out, m)
			return len(out) < limit
		}); err != nil {
			return err
		}
		return derr
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read recent messages: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, total, nil
}

// OutboxCount is the number of messages in the outbox.
func (w *World) OutboxCount() (int, error) {
	var n int
	if err := w.db.View(func(tx *store.Tx) error {
		n = outboxSize(tx)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// outboxSize is the number of messages in the outbox, in constant time: the
// outbox is only ever appended to (tx.Append, by the mail API) and emptied
// whole (Reset, which also restarts its sequence), so its sequence number
// is its size. tx.Count would walk every page of it.
func outboxSize(tx *store.Tx) int {
	return int(tx.Sequence(BucketOutbox))
}

// CRMWrites returns up to limit CRM write log entries with Seq >= fromSeq,
// in order; limit <= 0 means all.
func (w *World) CRMWrites(fromSeq uint64, limit int) ([]CRMWrite, error) {
	return readLog(w.db, BucketCRMWrites, fromSeq, limit, "crm writes", DecodeCRMWrite)
}

// readLog reads up to limit entries with seq >= fromSeq from an append-only
// collection, in order, each with decode; limit <= 0 reads all. what names
// the collection in errors.
func readLog[T any](db *store.DB, b store.Bucket, fromSeq uint64, limit int, what string,
	decode func(k, v []byte) (T, error)) ([]T, error) {
	var out []T
	err := db.View(func(tx *store.Tx) error {
		out = out[:0]
		var derr error
		err := tx.Scan(b, store.U64(fromSeq), false, func(k, v []byte) bool {
			if limit > 0 && len(out) >= limit {
				return false
			}
			var e T
			if e, derr = decode(k, v); derr != nil {
				derr = tx.Damaged(b, nil, k, derr)
				return false
			}
			out = append(out, e)
			return true
		})
		return errors.Join(err, derr)
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

func (w *World) storedKey(key string, rec keyRecord, now time.Time) StoredKey {
	return StoredKey{Key: key, Fingerprint: rec.Fingerprint, Status: rec.Status, Body: rec.Body,
		Created: rec.Created, Expires: rec.Created.Add(w.retentionOf(rec)), Expired: w.expired(rec, now),
		InFlight: rec.InFlight, Endpoint: rec.Endpoint, Ref: rec.Ref, Attribution: rec.Attribution}
}

// Keys returns up to limit key records in key order; limit <= 0 means all.
// Expired records are included, marked Expired.
func (w *World) Keys(limit int) ([]StoredKey, error) { return w.KeysPage("", limit) }

// KeysPage lists stored keys from key from on (inclusive), in key order, at
// most limit of them (0: all).
func (w *World) KeysPage(from string, limit int) ([]StoredKey, error) {
	now := w.Now()
	var out []StoredKey
	var derr error
	err := w.db.View(func(tx *store.Tx) error {
		var start []byte
		if from != "" {
			start = []byte(from)
		}
		return tx.Scan(BucketKeys, start, false, func(k, v []byte) bool {
			if limit > 0 && len(out) >= limit {
				return false
			}
			rec, ok := decodeKeyRecord(string(k), v)
			if !ok {
				derr = tx.Damaged(BucketKeys, nil, k, errors.New("undecodable key record"))
				return false
			}
			out = append(out, w.storedKey(string(k), rec, now))
			return true
		})
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("read keys: %w", err)
	}
	return out, nil
}

// LookupKey returns one key's record. An expired record is still returned,
// marked Expired; found is false only when nothing is stored.
func (w *World) LookupKey(key string) (StoredKey, bool, error) {
	now := w.Now()
	var v []byte
	if err := w.db.View(func(tx *store.Tx) error {
		v = tx.Get(BucketKeys, []byte(key))
		return nil
	}); err != nil {
		return StoredKey{}, false, fmt.Errorf("look up key %q: %w", key, err)
	}
	if v == nil {
		return StoredKey{}, false, nil
	}
	rec, ok := decodeKeyRecord(key, v)
	if !ok {
		return StoredKey{}, false, fmt.Errorf("look up key %q: %w: undecodable record", key, store.ErrCorrupt)
	}
	return w.storedKey(key, rec, now), true, nil
}

// Records returns every CRM row in id order.
func (w *World) Records() ([]Record, error) { return w.RecordsPage("", 0) }

// RecordsPage returns at most limit CRM rows with id >= from, in id order
// (limit <= 0 means all). Its cost follows limit, not the size of the CRM:
// page on with the last id + "\x00".
func (w *World) RecordsPage(from string, limit int) ([]Record, error) {
	var out []Record
	var derr error
	err := w.db.View(func(tx *store.Tx) error {
		return tx.Scan(BucketCRM, []byte(from), false, func(k, v []byte) bool {
			if limit > 0 && len(out) >= limit {
				return false
			}
			var r Record
			if r, derr = decodeRecord(string(k), v); derr != nil {
				derr = tx.Damaged(BucketCRM, nil, k, derr)
				return false
			}
			out = append(out, r)
			return true
		})
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("read records from %q: %w", from, err)
	}
	return out, nil
}

// Record returns one CRM row.
func (w *World) Record(id string) (Record, bool, error) {
	var v []byte
	if err := w.db.View(func(tx *store.Tx) error {
		v = tx.Get(BucketCRM, []byte(id))
		return nil
	}); err != nil {
		return Record{}, false, fmt.Errorf("read record %q: %w", id, err)
	}
	if v == nil {
		return Record{}, false, nil
	}
	r, err := decodeRecord(id, v)
	if err != nil {
		return Record{}, false, fmt.Errorf("read record %q: %w", id, err)
	}
	return r, true, nil
}

func decodeRecord(key string, v []byte) (Record, error) {
	doc, err := decodeRecordDoc(key, v)
	if err != nil {
		return Record{}, err
	}
	r := Record{ID: doc.ID, Version: doc.Version, Created: doc.Created, Updated: doc.Updated,
		Attribution: doc.Attribution, Fields: make(map[string]any, len(doc.Fields))}
	for k, raw := range doc.Fields {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			return Record{}, fmt.Errorf("field %q: %w", k, err)
		}
		r.Fields[k] = val
	}
	return r, nil
}
