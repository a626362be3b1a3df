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

// Attribution bits.
const (
	aExecution = 1 << iota
	aStep
	aKey
	aAttempt
	aRun
	aLast
)

func putAttribution(w *pack.Writer, a Attribution) {
	var b pack.Bits
	set := b.Set
	set(aExecution, a.Execution != "")
	set(aStep, a.Step != "")
	set(aKey, a.Key != "")
	set(aAttempt, a.Attempt != 0)
	set(aRun, a.Run != 0)
	w.Uvarint(uint64(b))
	if b&aExecution != 0 {
		w.Str(a.Execution)
	}
	if b&aStep != 0 {
		w.Str(a.Step)
	}
	if b&aKey != 0 {
		w.Str(a.Key)
	}
	if b&aAttempt != 0 {
		w.Varint(int64(a.Attempt))
	}
	if b&aRun != 0 {
		w.Varint(int64(a.Run))
	}
}

func readAttribution(r *pack.Reader) Attribution {
	var a Attribution
	b := r.Bits(aLast)
	if r.Err() != nil {
		return a
	}
	if b&aExecution != 0 {
		a.Execution = r.Str()
	}
	if b&aStep != 0 {
		a.Step = r.Str()
	}
	if b&aKey != 0 {
		a.Key = r.Str()
	}
	if b&aAttempt != 0 {
		a.Attempt = r.Int()
	}
	if b&aRun != 0 {
		a.Run = r.Int()
	}
	return a
}

// Outbox message bits.
const (
	mSeq     = 1 << iota // the message's Seq, when it is not its key's
	mID                  // its ID, when it is not messageID(Seq)
	mTo                  //
	mSubject             //
	mBody                //
	mExtra               // n, then n names and JSON values, by name
	mTime                //
	mLast
)

// encodeMessage packs an outbox message stored under store.U64(m.Seq).
func encodeMessage(m Message) ([]byte, error) {
	w := pack.NewWriter()
	var b pack.Bits
	set := b.Set
	set(mID, m.ID != messageID(m.Seq))
	set(mTo, m.To != "")
	set(mSubject, m.Subject != "")
	set(mBody, m.Body != "")
	set(mExtra, len(m.Extra) != 0)
	set(mTime, !m.Time.IsZero())
	w.Uvarint(uint64(b))
	putAttribution(w, m.Attribution)
	if b&mID != 0 {
		w.Str(m.ID)
	}
	if b&mTo != 0 {
		w.Str(m.To)
	}
	if b&mSubject != 0 {
		w.Str(m.Subject)
	}
	if b&mBody != 0 {
		w.Str(m.Body)
	}
	if b&mExtra != 0 {
		if err := putRawMap(w, m.Extra); err != nil {
			return nil, fmt.Errorf("encode message %d: %w", m.Seq, err)
		}
	}
	if b&mTime != 0 {
		w.Time(m.Time)
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
	b := r.Bits(mLast)
	if r.Err() != nil {
		return m, r.Err()
	}
	m.Seq = store.DecodeU64(key)
	m.Attribution = readAttribution(r)
	if b&mSeq != 0 {
		m.Seq = r.Uvarint()
	}
	m.ID = messageID(m.Seq)
	if b&mID != 0 {
		m.ID = r.Str()
	}
	if b&mTo != 0 {
		m.To = r.Str()
	}
	if b&mSubject != 0 {
		m.Subject = r.Str()
	}
	if b&mBody != 0 {
		m.Body = r.Str()
	}
	if b&mExtra != 0 {
		m.Extra = readRawMap(r)
	}
	if b&mTime != 0 {
		m.Time = r.Time()
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

// Key record bits.
const (
	kRef = 1 << iota
	kEndpoint
	kFingerprint
	kStatus
	kBody
	kCreated
	kRetention    // nanoseconds
	kRetentionSec // whole seconds
	kInFlight
	kToken
	kLast
)

// encodeKeyRecord packs the record stored under an idempotency key.
func encodeKeyRecord(key string, rec keyRecord) ([]byte, error) {
	w := pack.NewWriter(key)
	var b pack.Bits
	set := b.Set
	set(kRef, rec.Ref != "")
	set(kEndpoint, rec.Endpoint != "")
	set(kFingerprint, rec.Fingerprint != "")
	set(kStatus, rec.Status != 0)
	set(kBody, len(rec.Body) != 0)
	set(kCreated, !rec.Created.IsZero())
	set(kRetentionSec, rec.Retention != 0 && rec.Retention%time.Second == 0)
	set(kRetention, rec.Retention%time.Second != 0)
	set(kInFlight, rec.InFlight)
	set(kToken, rec.Token != "")
	w.Uvarint(uint64(b))
	putAttribution(w, rec.Attribution)
	if b&kRef != 0 {
		w.Str(rec.Ref)
	}
	if b&kEndpoint != 0 {
		w.Str(rec.Endpoint)
	}
	if b&kFingerprint != 0 {
		w.Str(rec.Fingerprint)
	}
	if b&kStatus != 0 {
		w.Varint(int64(rec.Status))
	}
	if b&kBody != 0 {
		if err := w.JSON(rec.Body); err != nil {
			return nil, fmt.Errorf("encode key %q: body: %w", key, err)
		}
	}
	if b&kCreated != 0 {
		w.Time(rec.Created)
	}
	if b&kRetention != 0 {
		w.Varint(int64(rec.Retention))
	}
	if b&kRetentionSec != 0 {
		w.Varint(int64(rec.Retention / time.Second))
	}
	if b&kToken != 0 {
		w.Str(rec.Token)
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
	b := r.Bits(kLast)
	if r.Err() != nil || b&kRetention != 0 && b&kRetentionSec != 0 {
		return keyRecord{}, false
	}
	rec.Attribution = readAttribution(r)
	if b&kRef != 0 {
		rec.Ref = r.Str()
	}
	if b&kEndpoint != 0 {
		rec.Endpoint = r.Str()
	}
	if b&kFingerprint != 0 {
		rec.Fingerprint = r.Str()
	}
	if b&kStatus != 0 {
		rec.Status = r.Int()
	}
	if b&kBody != 0 {
		rec.Body = r.JSON()
	}
	if b&kCreated != 0 {
		rec.Created = r.Time()
	}
	if b&kRetention != 0 {
		rec.Retention = time.Duration(r.Varint())
	}
	if b&kRetentionSec != 0 {
		s := r.Varint()
		if s > int64(1<<63-1)/int64(time.Second) || s < -int64(1<<63-1)/int64(time.Second) {
			return keyRecord{}, false
		}
		rec.Retention = time.Duration(s) * time.Second
	}
	rec.InFlight = b&kInFlight != 0
	if b&kToken != 0 {
		rec.Token = r.Str()
	}
	if r.Done() != nil {
		return keyRecord{}, false
	}
	return rec, true
}

// CRM row bits.
const (
	dID      = 1 << iota // the row's id, when it is not its key
	dFields              // n, then n names and JSON values, by name; absent: null
	dVersion             //
	dCreated             //
	dUpdated             //
	dLast
)

// encodeRecordDoc packs a CRM row stored under its id.
func encodeRecordDoc(doc recordDoc) ([]byte, error) {
	w := pack.NewWriter(doc.ID)
	var b pack.Bits
	set := b.Set
	set(dFields, doc.Fields != nil)
	set(dVersion, doc.Version != 0)
	set(dCreated, !doc.Created.IsZero())
	set(dUpdated, !doc.Updated.IsZero())
	w.Uvarint(uint64(b))
	putAttribution(w, doc.Attribution)
	if b&dFields != 0 {
		if err := putRawMap(w, doc.Fields); err != nil {
			return nil, fmt.Errorf("encode record %q: %w", doc.ID, err)
		}
	}
	if b&dVersion != 0 {
		w.Varint(int64(doc.Version))
	}
	if b&dCreated != 0 {
		w.Time(doc.Created)
	}
	if b&dUpdated != 0 {
		w.Time(doc.Updated)
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
	b := r.Bits(dLast)
	if r.Err() != nil {
		return doc, r.Err()
	}
	doc.ID = key
	doc.Attribution = readAttribution(r)
	if b&dID != 0 {
		doc.ID = r.Str()
	}
	if b&dFields != 0 {
		doc.Fields = readRawMap(r)
	}
	if b&dVersion != 0 {
		doc.Version = r.Int()
	}
	if b&dCreated != 0 {
		doc.Created = r.Time()
	}
	if b&dUpdated != 0 {
		doc.Updated = r.Time()
	}
	if err := r.Done(); err != nil {
		return recordDoc{}, err
	}
	return doc, nil
}

// CRM write bits.
const (
	wSeq      = 1 << iota // the write's Seq, when it is not its key's
	wRecordID             //
	wOp                   //
	wTime                 //
	wCreated              //
	wVersion              //
	wLast
)

// encodeCRMWrite packs a write log entry stored under store.U64(wr.Seq).
func encodeCRMWrite(wr CRMWrite) []byte {
	w := pack.NewWriter()
	var b pack.Bits
	set := b.Set
	set(wRecordID, wr.RecordID != "")
	set(wOp, wr.Op != "")
	set(wTime, !wr.Time.IsZero())
	set(wCreated, wr.Created)
	set(wVersion, wr.Version != 0)
	w.Uvarint(uint64(b))
	putAttribution(w, wr.Attribution)
	if b&wRecordID != 0 {
		w.Str(wr.RecordID)
	}
	if b&wOp != 0 {
		w.Str(wr.Op)
	}
	if b&wTime != 0 {
		w.Time(wr.Time)
	}
	if b&wVersion != 0 {
		w.Varint(int64(wr.Version))
	}
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
	b := r.Bits(wLast)
	if r.Err() != nil {
		return wr, r.Err()
	}
	wr.Seq = store.DecodeU64(key)
	wr.Attribution = readAttribution(r)
	if b&wSeq != 0 {
		wr.Seq = r.Uvarint()
	}
	if b&wRecordID != 0 {
		wr.RecordID = r.Str()
	}
	if b&wOp != 0 {
		wr.Op = r.Str()
	}
	if b&wTime != 0 {
		wr.Time = r.Time()
	}
	wr.Created = b&wCreated != 0
	if b&wVersion != 0 {
		wr.Version = r.Int()
	}
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
