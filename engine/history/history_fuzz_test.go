package history

import (
	"bytes"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary bytes to Decode, as a damaged or hostile
// history would: it must never panic, must refuse bytes without an event
// type, and what it accepts must encode again and reach a fixed point after
// one more round (stored events are re-encoded by tools that copy them).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"seq":1,"type":"ExecutionStarted","time":"2026-06-01T09:00:00Z","run":1,"text":"none","scenario":"naive"}`))
	f.Add([]byte(`{"type":"AttemptFinished","outcome":"timeout","duration":300000000,"response":{"status":504,"body":"x"}}`))
	for _, e := range []Event{
		{Seq: 5, Type: AttemptStarted, Time: time.Date(2026, 6, 1, 9, 0, 0, 1, time.UTC), Run: 1, Step: "step-4", Tool: "send_invoice_email",
			Key: "ik_8b162d1a691046347573d88b5a09239a", Attempt: 1, MaxAttempts: 3, Request: &Exchange{Method: "POST", URL: "/v1/send",
				Headers: map[string]string{"Idempotency-Key": "ik_8b162d1a691046347573d88b5a09239a"}, Body: []byte(`{"to":"a@b.c"}`)}},
		{Seq: 7, Type: AttemptFinished, Time: time.Date(2026, 6, 1, 9, 0, 1, 0, time.FixedZone("", 3600)), Outcome: OutcomeOK,
			Response: &Exchange{Status: 200, Body: []byte(`{"message_id":"msg_1a2b3c"}`)}, Result: []byte(`[1,"x"]`)},
	} {
		b, err := Encode(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			if ev.Type != "" || ev.Seq != 0 {
				t.Fatalf("an error with a non-zero event: %+v", ev)
			}
			return
		}
		if ev.Type == "" {
			t.Fatal("accepted an event without a type")
		}
		enc, err := Encode(ev)
		if err != nil {
			// Only values JSON cannot write back are allowed to fail, like
			// a year outside 0..9999 that a time zone offset pushed there.
			if ev.Time.Year() >= 0 && ev.Time.Year() <= 9999 {
				t.Fatalf("decoded %q but cannot encode it: %v", data, err)
			}
			return
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("cannot decode what Encode wrote: %v\n%s", err, enc)
		}
		enc2, err := Encode(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("no fixed point:\n%s\n%s", enc, enc2)
		}
		if again.Type != ev.Type || again.Seq != ev.Seq || again.Step != ev.Step || again.Attempt != ev.Attempt ||
			again.Outcome != ev.Outcome || !again.Time.Equal(ev.Time) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, again)
		}
	})
}
