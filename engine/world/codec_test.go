package world

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

// viaJSON is what a reader of an earlier build's JSON record got: v through
// encoding/json and back.
func viaJSON[T any](t *testing.T, v T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameJSON fails unless a and b marshal to the same text and are equal.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %#v\nwant %#v", what, got, want)
	}
}

var (
	t0     = time.Date(2026, 6, 1, 9, 0, 5, 499684881, time.UTC)
	tPlus1 = t0.Add(time.Minute).In(time.FixedZone("", 3600))
	attrs  = []Attribution{{}, {Execution: "exec_00D9ZK7Z", Step: "step-4", Key: "ik_e538b7973fdf07a8f32aa8a8a1c16443", Attempt: 3, Run: 1},
		{Execution: "e", Attempt: -1, Run: 1 << 40}}
)

func TestMessagesPackAsTheyReadAsJSON(t *testing.T) {
	for i, m := range []Message{
		{Seq: 1, ID: messageID(1), To: "jordan@acme.dev", Subject: "Your June invoice", Body: "…", Time: t0, Attribution: attrs[1]},
		{Seq: 2, ID: "msg_other", To: "a@b.c", Subject: "<hi> & \"bye\"", Time: tPlus1, Attribution: attrs[2],
			Extra: map[string]json.RawMessage{"cc": json.RawMessage(`["x@y.z", {"n": 1.50}]`), "z\u2028": json.RawMessage(`"<b>"`)}},
		{Seq: 1 << 40, ID: messageID(1 << 40)},
	} {
		data, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessage(store.U64(m.Seq), data)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		sameJSON(t, "message", got, viaJSON(t, m))
		js, _ := json.Marshal(m)
		if old, err := DecodeMessage(store.U64(m.Seq), js); err != nil || !reflect.DeepEqual(old, viaJSON(t, m)) {
			t.Errorf("the JSON form of message %d reads as %#v, %v", i, old, err)
		}
		if i == 0 && len(data) > 70 {
			t.Errorf("a usual message takes %d bytes (JSON: %d)", len(data), len(js))
		}
	}
}

func TestKeyRecordsPackAsTheyReadAsJSON(t *testing.T) {
	key := "ik_000d463986ae11e8cf5b9919381658e9"
	for i, rec := range []keyRecord{
		{Fingerprint: "5d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d71292529341", Endpoint: "mail POST /v1/send", Status: 200,
			Body: json.RawMessage(`{"deduplicated":false,"idempotency_key":"` + key + `","message_id":"msg_a1748d","status":"sent"}`),
			Ref:  "msg_a1748d", Created: t0, Retention: 24 * time.Hour,
			Attribution: Attribution{Execution: "exec_287GYZTZ", Step: "step-4", Key: key, Attempt: 1, Run: 1}},
		{Fingerprint: "f", Endpoint: "crm PUT /v1/records/inv_287GYZTZ", Created: tPlus1, Retention: 1500 * time.Millisecond,
			InFlight: true, Token: "0a1b2c3d4e5f-17", Attribution: attrs[2]},
		{},
	} {
		data, err := encodeKeyRecord(key, rec)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeKeyRecord(key, data)
		if !ok {
			t.Fatalf("key record %d does not decode", i)
		}
		sameJSON(t, "key record", got, viaJSON(t, rec))
		js, _ := json.Marshal(rec)
		if old, ok := decodeKeyRecord(key, js); !ok || !reflect.DeepEqual(old, viaJSON(t, rec)) {
			t.Errorf("the JSON form of key record %d reads as %#v", i, old)
		}
		if i == 0 && len(data) > 100 {
			t.Errorf("a usual key record takes %d bytes (JSON: %d)", len(data), len(js))
		}
	}
	if _, ok := decodeKeyRecord(key, nil); ok {
		t.Error("nothing decoded as a key record")
	}
}

func TestCRMRecordsPackAsTheyReadAsJSON(t *testing.T) {
	for i, doc := range []recordDoc{
		{ID: "inv_00D9ZK7Z", Fields: map[string]json.RawMessage{"customer": json.RawMessage(`"lee@hooli.xyz"`),
			"invoice": json.RawMessage(`"May"`), "message_id": json.RawMessage(`"msg_0ff455"`)},
			Version: 1, Created: t0, Updated: t0, Attribution: Attribution{Execution: "exec_00D9ZK7Z", Step: "step-5", Attempt: 3, Run: 2}},
		{ID: "rec_1", Fields: map[string]json.RawMessage{}, Version: 7, Created: t0, Updated: tPlus1},
		{ID: "x"},
	} {
		data, err := encodeRecordDoc(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecordDoc(doc.ID, data)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		sameJSON(t, "record", got, viaJSON(t, doc))
		if i == 0 && len(data) > 70 {
			js, _ := json.Marshal(doc)
			t.Errorf("a usual CRM row takes %d bytes (JSON: %d)", len(data), len(js))
		}
	}
	for i, wr := range []CRMWrite{
		{Seq: 3, RecordID: "inv_W76X9RY9", Op: OpUpsert, Time: t0, Created: true, Version: 1,
			Attribution: Attribution{Execution: "exec_W76X9RY9", Step: "step-5", Attempt: 3, Run: 2}},
		{Seq: 9, RecordID: "rec_1", Op: OpCreateExisting, Time: tPlus1, Version: 4},
		{},
	} {
		got, err := DecodeCRMWrite(store.U64(wr.Seq), encodeCRMWrite(wr))
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		sameJSON(t, "write", got, viaJSON(t, wr))
		js, _ := json.Marshal(wr)
		if old, err := DecodeCRMWrite(store.U64(wr.Seq), js); err != nil || !reflect.DeepEqual(old, viaJSON(t, wr)) {
			t.Errorf("the JSON form of write %d reads as %#v, %v", i, old, err)
		}
	}
}

func TestDamagedRecordsDoNotDecode(t *testing.T) {
	m := Message{Seq: 1, ID: messageID(1), To: "a@b.c", Subject: "s", Time: t0, Attribution: attrs[1]}
	data, _ := encodeMessage(m)
	for n := 1; n < len(data); n++ {
		if _, err := DecodeMessage(store.U64(1), data[:n]); err == nil {
			t.Errorf("a message cut at %d of %d bytes decoded", n, len(data))
		}
	}
	if _, err := DecodeMessage(store.U64(1), append([]byte{data[0], 0xff, 0x7f}, data[1:]...)); err == nil {
		t.Error("unknown field bits decoded")
	}
	key := "ik_1"
	kd, _ := encodeKeyRecord(key, keyRecord{Fingerprint: "ab", Endpoint: "mail POST /v1/send", Created: t0, Attribution: attrs[1]})
	for n := 1; n < len(kd); n++ {
		if _, ok := decodeKeyRecord(key, kd[:n]); ok {
			t.Errorf("a key record cut at %d of %d bytes decoded", n, len(kd))
		}
	}
}

// TestOutboxIndexReadsBothForms: a database written before keeps the long
// index keys; messages added since take the short ones, and MessagesFor
// finds both, in order.
func TestOutboxIndexReadsBothForms(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "w.db"))
	w, err := New(Config{DB: db, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	old := func(exec string, seq uint64) []byte {
		return append(append(append([]byte(execIndexPrefix), exec...), 0), store.U64(seq)...)
	}
	err = db.Update(func(tx *store.Tx) error {
		for _, m := range []Message{{Seq: 1, ID: messageID(1), To: "a@b.c", Attribution: Attribution{Execution: "exec_A"}},
			{Seq: 2, ID: messageID(2), To: "a@b.c", Attribution: Attribution{Execution: "exec_AB"}}} {
			js, _ := json.Marshal(m)
			if _, err := tx.Append(BucketOutbox, func(uint64) ([]byte, error) { return js, nil }); err != nil {
				return err
			}
			if err := tx.Put(BucketMeta, old(m.Attribution.Execution, m.Seq), nil); err != nil {
				return err
			}
		}
		for range 300 { // sequence numbers of one and two bytes
			for _, exec := range []string{"exec_A", "exec_AB", ""} {
				if _, err := Apply(tx, Call{Service: ServiceMail, Method: "POST", Path: "/v1/send",
					Body: []byte(`{"to":"a@b.c","subject":"s"}`), Attribution: Attribution{Execution: exec}, Now: t0}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, exec := range []string{"exec_A", "exec_AB", ""} {
		got, err := w.MessagesFor(exec)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 301 && exec != "" || len(got) != 300 && exec == "" {
			t.Fatalf("%q: %d messages", exec, len(got))
		}
		for i, m := range got {
			if m.Attribution.Execution != exec || i > 0 && m.Seq <= got[i-1].Seq || m.ID != messageID(m.Seq) {
				t.Fatalf("%q: message %d is %+v", exec, i, m)
			}
		}
	}
	all, err := w.Outbox(0, 0)
	if err != nil || len(all) != 902 || all[0].To != "a@b.c" || all[901].Seq != 902 {
		t.Fatalf("outbox: %d messages, %v", len(all), err)
	}
}
