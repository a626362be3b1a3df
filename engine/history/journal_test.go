package history

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestJournalRecordsPackAsTheyReadAsJSON(t *testing.T) {
	at := time.Date(2026, 6, 5, 5, 21, 56, 25151236, time.UTC)
	exec := "exec_00D9ZK7Z"
	for i, rec := range []JournalRecord{
		{Step: "step-5", Tool: "record_invoice", Attempt: 3, Run: 2, Recorded: at,
			Result: json.RawMessage(`{"created":true,"deduplicated":false,"fields":{"customer":"lee@hooli.xyz","invoice":"May","message_id":"msg_0ff455"},"id":"inv_00D9ZK7Z","version":1}`)},
		{Step: "step-4", Tool: "send_invoice_email", Key: "ik_15b289a15ad2664350f65de67b71073d", Attempt: 1, Run: 1,
			Result:   json.RawMessage(`{"deduplicated":true,"idempotency_key":"ik_15b289a15ad2664350f65de67b71073d","message_id":"msg_0fce48","status":"sent"}`),
			Recorded: at.In(time.FixedZone("", -5*3600))},
		{Step: "decide", Tool: "t", Result: json.RawMessage(` [1, {"a" : "<b>"}] `)},
		{Step: "x"},
		{Step: "other", Result: json.RawMessage("null")},
	} {
		js, _ := json.Marshal(rec)
		var want JournalRecord
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		stored := rec.Step
		if i == 4 {
			stored = "stored-under"
		}
		data, err := EncodeJournal(exec, stored, rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeJournal(exec, stored, data)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d:\n got %#v\nwant %#v", i, got, want)
		}
		served, err := JournalJSON(exec, stored, data)
		if err != nil || string(served) != string(js) {
			t.Errorf("record %d served as %s, %v; want %s", i, served, err, js)
		}
		if old, err := DecodeJournal(exec, stored, js); err != nil || !reflect.DeepEqual(old, want) {
			t.Errorf("the JSON form of record %d reads as %#v, %v", i, old, err)
		}
		if served, _ := JournalJSON(exec, stored, js); string(served) != string(js) {
			t.Errorf("the JSON form of record %d is served as %s", i, served)
		}
		if i < 2 && len(data) > 60 {
			t.Errorf("record %d takes %d bytes (JSON: %d)", i, len(data), len(js))
		}
		for n := 1; n < len(data); n++ {
			if _, err := DecodeJournal(exec, stored, data[:n]); err == nil {
				t.Errorf("record %d cut at %d of %d bytes decoded", i, n, len(data))
			}
		}
	}
}

// FuzzDecodeJournal feeds any bytes to the journal reader: it must never
// panic, and a record it reads must be served as the JSON text of itself.
func FuzzDecodeJournal(f *testing.F) {
	rec := JournalRecord{Step: "step-4", Tool: "send_invoice_email", Key: "ik_15b2", Attempt: 1, Run: 1,
		Result: json.RawMessage(`{"a":[1,"b",{"c":null}]}`), Recorded: time.Unix(1e9, 5).UTC()}
	packed, _ := EncodeJournal("exec_1", "step-4", rec)
	js, _ := json.Marshal(rec)
	f.Add(packed)
	f.Add(js)
	f.Add([]byte{0xC3, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeJournal("exec_1", "step-4", data)
		served, serr := JournalJSON("exec_1", "step-4", data)
		if err != nil || len(data) == 0 || data[0] != 0xC3 {
			return
		}
		want, merr := json.Marshal(got)
		if (serr == nil) != (merr == nil) || serr == nil && string(served) != string(want) {
			t.Fatalf("%+v served as %s (%v), marshals as %s (%v)", got, served, serr, want, merr)
		}
	})
}
