package world

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

// FuzzDecodeStoredRecords feeds any bytes to the readers of the world's
// collections as stored values, packed or not: they must never panic, and
// whatever a packed record decodes to must pack and decode to itself again.
func FuzzDecodeStoredRecords(f *testing.F) {
	key := "ik_000d463986ae11e8cf5b9919381658e9"
	m, _ := encodeMessage(Message{Seq: 1, ID: messageID(1), To: "a@b.c", Subject: "s", Time: t0, Attribution: attrs[1],
		Extra: map[string]json.RawMessage{"cc": json.RawMessage(`[1,{"a":"b"}]`)}})
	k, _ := encodeKeyRecord(key, keyRecord{Fingerprint: "ab", Endpoint: "mail POST /v1/send", Status: 200,
		Body: json.RawMessage(`{"idempotency_key":"` + key + `"}`), Created: t0, Retention: time.Hour, Attribution: attrs[1]})
	d, _ := encodeRecordDoc(recordDoc{ID: "inv_1", Fields: map[string]json.RawMessage{"a": json.RawMessage(`1`)}, Version: 2,
		Created: t0, Updated: tPlus1})
	w := encodeCRMWrite(CRMWrite{Seq: 1, RecordID: "inv_1", Op: OpUpsert, Time: t0, Created: true, Version: 1})
	for _, v := range [][]byte{m, k, d, w, []byte(`{"seq":1}`), {0xC3}, {0xC3, 0xff, 0xff, 0xff}} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if msg, err := DecodeMessage(store.U64(1), v); err == nil && v[0] == 0xC3 {
			again, err := encodeMessage(msg)
			if err != nil {
				t.Fatalf("decoded message %+v does not encode: %v", msg, err)
			}
			// A message is stored under its own seq.
			if back, err := DecodeMessage(store.U64(msg.Seq), again); err != nil || !sameText(back, msg) {
				t.Fatalf("message %+v came back as %+v, %v", msg, back, err)
			}
		}
		if rec, ok := decodeKeyRecord(key, v); ok && v[0] == 0xC3 {
			again, err := encodeKeyRecord(key, rec)
			if err != nil {
				t.Fatalf("decoded key record %+v does not encode: %v", rec, err)
			}
			if back, ok := decodeKeyRecord(key, again); !ok || !sameText(back, rec) {
				t.Fatalf("key record %+v came back as %+v", rec, back)
			}
		}
		if doc, err := decodeRecordDoc("inv_1", v); err == nil && v[0] == 0xC3 {
			again, err := encodeRecordDoc(doc)
			if err != nil {
				t.Fatalf("decoded row %+v does not encode: %v", doc, err)
			}
			if back, err := decodeRecordDoc(doc.ID, again); err != nil || !sameText(back, doc) {
				t.Fatalf("row %+v came back as %+v, %v", doc, back, err)
			}
		}
		if wr, err := DecodeCRMWrite(store.U64(1), v); err == nil && v[0] == 0xC3 {
			if back, err := DecodeCRMWrite(store.U64(wr.Seq), encodeCRMWrite(wr)); err != nil || !sameText(back, wr) {
				t.Fatalf("write %+v came back as %+v, %v", wr, back, err)
			}
		}
	})
}

// sameText reports whether two values marshal to the same JSON: what every
// reader shows of them. Values encoding/json refuses (a year outside
// 0-9999, which no JSON record held) fail alike or not at all.
func sameText(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return (err1 == nil) == (err2 == nil)
	}
	return string(x) == string(y)
}
