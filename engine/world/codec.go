package world

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/retrylab/retrylab/engine/internal/pack"
	"github.com/retrylab/retrylab/store"
)

// The world's records are stored packed (engine/internal/pack) since the
// JSON objects of earlier builds spent most of their bytes on field names,
// hex ids in text and strings the record already held. Every reader takes
// both: a JSON object (older databases) or a packed record, which starts
// with pack.Magic. A packed record is its field bits (a uvarint), the
// attribution, then the fields whose bits are set, in the order of the
// bits below; values that the key already says (an outbox message's
// sequence number and id, a CRM row's id) are left out, and strings the
// record or its key hold already are references.

// The field bits of each record are the places of its fields in its
// pack.Fields table (field i has bit 1<<i); they are part of the format, so
// a table only ever grows at its end.

// Attribution fields.
const (
	aExecution = iota
	aStep
	aKey
	aAttempt
	aRun
)

var attributionFields = pack.Fields[Attribution]{
	aExecution: pack.Str(func(a *Attribution) *string { return &a.Execution }),
	aStep:      pack.Str(func(a *Attribution) *string { return &a.Step }),
	aKey:       pack.Str(func(a *Attribution) *string { return &a.Key }),
	aAttempt:   pack.Int(func(a *Attribution) *int { return &a.Attempt }),
	aRun:       pack.Int(func(a *Attribution) *int { return &a.Run }),
}

// putAttribution writes a record's attribution: its bits, then its fields.
// a is the record's own (the record is on the heap already, for its
// table), so writing it costs no allocation of its own.
func putAttribution(w *pack.Writer, a *Attribution) {
	b := attributionFields.Bits(a)
	w.Uvarint(uint64(b))
	_ = attributionFields.Put(w, b, a) // its fields cannot fail
}

// readAttribution reads what putAttribution wrote into a, the record's own.
func readAttribution(r *pack.Reader, a *Attribution) {
	b := r.Bits(attributionFields.Last())
	if r.Err() != nil {
		return
	}
	attributionFields.Get(r, b, a)
}

// Outbox message fields.
const (
	mSeq     = iota // the message's Seq, when it is not its key's
	mID             // its ID, when it is not messageID(Seq)
	mTo             //
	mSubject        //
	mBody           //
	mExtra          // n, then n names and JSON values, by name
	mTime           //
)

var messageFields = pack.Fields[Message]{
	mSeq: {Get: func(r *pack.Reader, m *Message) { m.Seq = r.Uvarint() }},
	mID: {
		Has: func(m *Message) bool { return m.ID != messageID(m.Seq) },
		Put: func(w *pack.Writer, m *Message) error { w.Str(m.ID); return nil },
		Get: func(r *pack.Reader, m *Message) { m.ID = r.Str() },
	},
	mTo:      pack.Str(func(m *Message) *string { return &m.To }),
	mSubject: pack.Str(func(m *Message) *string { return &m.Subject }),
	mBody:    pack.Str(func(m *Message) *string { return &m.Body }),
	mExtra: {
		Has: func(m *Message) bool { return len(m.Extra) != 0 },
		Put: func(w *pack.Writer, m *Message) error { return putRawMap(w, m.Extra) },
		Get: func(r *pack.Reader, m *Message) { m.Extra = readRawMap(r) },
	},
	mTime: pack.Time(func(m *Message) *time.Time { return &m.Time }),
}

// encodeMessage packs an outbox message stored under store.U64(m.Seq).
func encodeMessage(m Message) ([]byte, error) {
	w := pack.NewWriter()
	b := messageFields.Bits(&m)
	w.Uvarint(uint64(b))
	putAttribution(w, &m.Attribution)
	if err := messageFields.Put(w, b, &m); err != nil {
		return nil, fmt.Errorf("encode message %d: %w", m.Seq, err)
	}
	return w.Bytes(), nil
}

// DecodeMessage reads an outbox entry: its key (the 8-byte sequence number)
// and value, packed or JSON.
func DecodeMessage(key, v []byte) (Message, error) {
	var m Message
	if !pack.Is(v) {
		err := json.Unmarshal(v, &m)
		return m, err
	}
	r := pack.NewReader(v)
	b := r.Bits(messageFields.Last())
	if r.Err() != nil {
		return m, r.Err()
	}
	m.Seq = store.DecodeU64(key)
	readAttribution(r, &m.Attribution)
	messageFields.Get(r, b, &m)
	if b&pack.Bit(mID) == 0 {
		m.ID = messageID(m.Seq)
	}
	if err := r.Done(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// putRawMap writes a map of JSON values: its size, then each name and
// value in name order.
func putRawMap(w *pack.Writer, m map[string]json.RawMessage) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	w.Uvarint(uint64(len(names)))
	for _, k := range names {
		w.Str(k)
		if err := w.JSON(m[k]); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
	}
	return nil
}

func readRawMap(r *pack.Reader) map[string]json.RawMessage {
	n := r.Uvarint()
	if n > uint64(r.Left()) { // each member takes at least a byte
		r.Fail()
		return nil
	}
	m := make(map[string]json.RawMessage, n)
	for range n {
		if r.Err() != nil {
			return nil
		}
		k := r.Str()
		m[k] = r.JSON()
	}
	return m
}

// Key record fields.
const (
	kRef = iota
	kEndpoint
	kFingerprint
	kStatus
	kBody
	kCreated
	kRetention    // nanoseconds
	kRetentionSec // whole seconds
	kInFlight
	kToken
)

// maxRetentionSec bounds the whole seconds of a retention: more would not
// fit a time.Duration.
const maxRetentionSec = int64(1<<63-1) / int64(time.Second)

var keyRecordFields = pack.Fields[keyRecord]{
	kRef:         pack.Str(func(k *keyRecord) *string { return &k.Ref }),
	kEndpoint:    pack.Str(func(k *keyRecord) *string { return &k.Endpoint }),
	kFingerprint: pack.Str(func(k *keyRecord) *string { return &k.Fingerprint }),
	kStatus:      pack.Int(func(k *keyRecord) *int { return &k.Status }),
	kBody: {
		Has: func(k *keyRecord) bool { return len(k.Body) != 0 },
		Put: func(w *pack.Writer, k *keyRecord) error {
			if err := w.JSON(k.Body); err != nil {
				return fmt.Errorf("body: %w", err)
			}
			return nil
		},
		Get: func(r *pack.Reader, k *keyRecord) { k.Body = r.JSON() },
	},
	kCreated: pack.Time(func(k *keyRecord) *time.Time { return &k.Created }),
	kRetention: {
		Has: func(k *keyRecord) bool { return k.Retention%time.Second != 0 },
		Put: func(w *pack.Writer, k *keyRecord) error { w.Varint(int64(k.Retention)); return nil },
		Get: func(r *pack.Reader, k *keyRecord) { k.Retention = time.Duration(r.Varint()) },
	},
	kRetentionSec: {
		Has: func(k *keyRecord) bool { return k.Retention != 0 && k.Retention%time.Second == 0 },
		Put: func(w *pack.Writer, k *keyRecord) error { w.Varint(int64(k.Retention / time.Second)); return nil },
		Get: func(r *pack.Reader, k *keyRecord) {
			s := r.Varint()
			if s > maxRetentionSec || s < -maxRetentionSec {
				r.Fail()
				return
			}
			k.Retention = time.Duration(s) * time.Second
		},
	},
	kInFlight: pack.Flag(func(k *keyRecord) *bool { return &k.InFlight }),
	kToken:    pack.Str(func(k *keyRecord) *string { return &k.Token }),
}

// encodeKeyRecord packs the record stored under an idempotency key.
func encodeKeyRecord(key string, rec keyRecord) ([]byte, error) {
	w := pack.NewWriter(key)
	b := keyRecordFields.Bits(&rec)
	w.Uvarint(uint64(b))
	putAttribution(w, &rec.Attribution)
	if err := keyRecordFields.Put(w, b, &rec); err != nil {
		return nil, fmt.Errorf("encode key %q: %w", key, err)
	}
	return w.Bytes(), nil
}

// decodeKeyRecord reads what the key store holds under key, packed or JSON.
func decodeKeyRecord(key string, v []byte) (keyRecord, bool) {
	var rec keyRecord
	if v == nil {
		return rec, false
	}
	if !pack.Is(v) {
		if json.Unmarshal(v, &rec) != nil {
			return keyRecord{}, false
		}
		return rec, true
	}
	r := pack.NewReader(v, key)
	b := r.Bits(keyRecordFields.Last())
	if r.Err() != nil || b&pack.Bit(kRetention) != 0 && b&pack.Bit(kRetentionSec) != 0 {
		return keyRecord{}, false
	}
	readAttribution(r, &rec.Attribution)
	keyRecordFields.Get(r, b, &rec)
	if r.Done() != nil {
		return keyRecord{}, false
	}
	return rec, true
}

// CRM row fields.
const (
	dID      = iota // the row's id, when it is not its key
	dFields         // n, then n names and JSON values, by name; absent: null
	dVersion        //
	dCreated        //
	dUpdated        //
)

var recordDocFields = pack.Fields[recordDoc]{
	dID: {Get: func(r *pack.Reader, d *recordDoc) { d.ID = r.Str() }},
	dFields: {
		Has: func(d *recordDoc) bool { return d.Fields != nil },
		Put: func(w *pack.Writer, d *recordDoc) error { return putRawMap(w, d.Fields) },
		Get: func(r *pack.Reader, d *recordDoc) { d.Fields = readRawMap(r) },
	},
	dVersion: pack.Int(func(d *recordDoc) *int { return &d.Version }),
	dCreated: pack.Time(func(d *recordDoc) *time.Time { return &d.Created }),
	dUpdated: pack.Time(func(d *recordDoc) *time.Time { return &d.Updated }),
}

// encodeRecordDoc packs a CRM row stored under its id.
func encodeRecordDoc(doc recordDoc) ([]byte, error) {
	w := pack.NewWriter(doc.ID)
	b := recordDocFields.Bits(&doc)
	w.Uvarint(uint64(b))
	putAttribution(w, &doc.Attribution)
	if err := recordDocFields.Put(w, b, &doc); err != nil {
		return nil, fmt.Errorf("encode record %q: %w", doc.ID, err)
	}
	return w.Bytes(), nil
}

// decodeRecordDoc reads the CRM row stored under key, packed or JSON.
func decodeRecordDoc(key string, v []byte) (recordDoc, error) {
	var doc recordDoc
	if !pack.Is(v) {
		err := json.Unmarshal(v, &doc)
		return doc, err
	}
	r := pack.NewReader(v, key)
	b := r.Bits(recordDocFields.Last())
	if r.Err() != nil {
		return doc, r.Err()
	}
	doc.ID = key
	readAttribution(r, &doc.Attribution)
	recordDocFields.Get(r, b, &doc)
	if err := r.Done(); err != nil {
		return recordDoc{}, err
	}
	return doc, nil
}

// CRM write fields.
const (
	wSeq      = iota // the write's Seq, when it is not its key's
	wRecordID        //
	wOp              //
	wTime            //
	wCreated         //
	wVersion         //
)

var crmWriteFields = pack.Fields[CRMWrite]{
	wSeq:      {Get: func(r *pack.Reader, wr *CRMWrite) { wr.Seq = r.Uvarint() }},
	wRecordID: pack.Str(func(wr *CRMWrite) *string { return &wr.RecordID }),
	wOp:       pack.Str(func(wr *CRMWrite) *string { return &wr.Op }),
	wTime:     pack.Time(func(wr *CRMWrite) *time.Time { return &wr.Time }),
	wCreated:  pack.Flag(func(wr *CRMWrite) *bool { return &wr.Created }),
	wVersion:  pack.Int(func(wr *CRMWrite) *int { return &wr.Version }),
}

// encodeCRMWrite packs a write log entry stored under store.U64(wr.Seq).
func encodeCRMWrite(wr CRMWrite) []byte {
	w := pack.NewWriter()
	b := crmWriteFields.Bits(&wr)
	w.Uvarint(uint64(b))
	putAttribution(w, &wr.Attribution)
	_ = crmWriteFields.Put(w, b, &wr) // its fields cannot fail
	return w.Bytes()
}

// DecodeCRMWrite reads a CRM write log entry: its key (the 8-byte sequence
// number) and value, packed or JSON.
func DecodeCRMWrite(key, v []byte) (CRMWrite, error) {
	var wr CRMWrite
	if !pack.Is(v) {
		err := json.Unmarshal(v, &wr)
		return wr, err
	}
	r := pack.NewReader(v)
	b := r.Bits(crmWriteFields.Last())
	if r.Err() != nil {
		return wr, r.Err()
	}
	wr.Seq = store.DecodeU64(key)
	readAttribution(r, &wr.Attribution)
	crmWriteFields.Get(r, b, &wr)
	if err := r.Done(); err != nil {
		return CRMWrite{}, err
	}
	return wr, nil
}

// The per-execution outbox index in BucketMeta. Earlier builds wrote
// execIndexPrefix, the execution, NUL and the 8-byte sequence number (37
// bytes a key for the usual ids); this build writes execIndexShort, the
// execution packed (pack.AppendString: "exec_" and eight characters take 8
// bytes, and no execution's form is the start of another's), then the
// sequence number's length in bytes and its big-endian bytes without
// leading zeros, which sort as the numbers do. MessagesFor reads both.
const (
	execIndexPrefix = "outbox_by_exec\x00"
	execIndexShort  = "\x00" // no other key of BucketMeta starts with NUL
)

// execIndexStart is what the short index keys of an execution start with.
func execIndexStart(execution string) []byte {
	return pack.AppendString([]byte(execIndexShort), execution)
}

func execIndexKey(execution string, seq uint64) []byte {
	n := max((bits.Len64(seq)+7)/8, 1)
	k := execIndexStart(execution)
	k = append(k, byte(n))
	for i := n - 1; i >= 0; i-- {
		k = append(k, byte(seq>>(8*i)))
	}
	return k
}

// execIndexSeqs lists the sequence numbers of an execution's messages from
// both forms of the index, in order.
func execIndexSeqs(tx *store.Tx, execution string) ([]uint64, error) {
	var seqs []uint64
	old := append(append([]byte(execIndexPrefix), execution...), 0)
	if err := tx.Scan(BucketMeta, old, false, func(k, _ []byte) bool {
		if len(k) != len(old)+8 || string(k[:len(old)]) != string(old) {
			return false
		}
		seqs = append(seqs, store.DecodeU64(k[len(old):]))
		return true
	}); err != nil {
		return nil, err
	}
	short := execIndexStart(execution)
	if err := tx.Scan(BucketMeta, short, false, func(k, _ []byte) bool {
		if len(k) < len(short)+2 || string(k[:len(short)]) != string(short) {
			return false
		}
		num := k[len(short)+1:]
		if int(k[len(short)]) != len(num) || len(num) > 8 {
			return true // not an index key: skip it
		}
		var seq uint64
		for _, c := range num {
			seq = seq<<8 | uint64(c)
		}
		seqs = append(seqs, seq)
		return true
	}); err != nil {
		return nil, err
	}
	slices.Sort(seqs)
	return seqs, nil
}
