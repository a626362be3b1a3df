package history

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

// viaJSON is what a reader got from an event stored before the compact
// encoding.
func viaJSON(t *testing.T, e Event) Event {
	t.Helper()
	b, err := EncodeJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// sameAsJSON checks a reader gets the same Event from the compact encoding
// as it got from JSON.
func sameAsJSON(t *testing.T, e Event) int {
	t.Helper()
	b, err := Encode(e)
	if err != nil {
		t.Fatalf("encode %+v: %v", e, err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("decode %+v: %v", e, err)
	}
	if want := viaJSON(t, e); !reflect.DeepEqual(got, want) {
		t.Fatalf("compact and JSON differ:\n got %#v\nwant %#v", got, want)
	}
	return len(b)
}

// Every event of testdata/v1 (recorded runs of naive, safe, invoice-crm,
// crash and generated histories, stored as JSON by the build before the
// compact encoding) reads back the same through the compact encoding.
func TestCompactKeepsRecordedEvents(t *testing.T) {
	db, err := store.Open(filepath.Join("..", "..", "testdata", "v1", "retrylab.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, jsonBytes, compactBytes int
	types := map[Type]bool{}
	err = db.View(func(tx *store.Tx) error {
		var ids []string
		if err := tx.Executions(false, 0, func(id string, _ []byte) bool { ids = append(ids, id); return true }); err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.Events(id, 0, func(seq uint64, data []byte) bool {
				if data[0] != '{' {
					t.Fatalf("%s/%d is not JSON: the testdata must be the old encoding", id, seq)
				}
				e, err := Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				n++
				types[e.Type] = true
				jsonBytes += len(data)
				compactBytes += sameAsJSON(t, e)
				return true
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 250 || len(types) < 12 {
		t.Fatalf("only %d events of %d types", n, len(types))
	}
	t.Logf("%d events: %d bytes as JSON, %d compact (%.0f%%)", n, jsonBytes, compactBytes, 100*float64(compactBytes)/float64(jsonBytes))
}

// The edges: every field set, times far out and in zones, strings that look
// like table entries, keys or hex, headers that repeat the key.
func TestCompactEdges(t *testing.T) {
	at := time.Date(2026, 6, 30, 9, 0, 0, 123456789, time.UTC)
	full := Event{Seq: 1 << 40, Type: AttemptFinished, Time: at, Run: 3, Turn: 2, Text: "τext", Step: "step-4",
		Tool: "send_invoice_email", Args: json.RawMessage(`{ "to" : "a@b.c" }`), Key: "ik_00ff00ff00ff00ff00ff00ff00ff00ff",
		Attempt: 7, MaxAttempts: -1, Outcome: OutcomeOK, Deduplicated: true, Duration: -time.Second, Delay: time.Hour,
		Request: &Exchange{Method: "POST", URL: "/v1/send", Headers: map[string]string{"Idempotency-Key": "ik_00ff00ff00ff00ff00ff00ff00ff00ff", "X": ""},
			Body: json.RawMessage(`{"a":"<b>"}`)},
		Response: &Exchange{Status: 200, Headers: map[string]string{"Idempotent-Replayed": "true"}, Body: json.RawMessage(`"msg_1a2b3c"`)},
		Result:   json.RawMessage(`null`), ResultRun: 2, Plan: 1, Fault: "timeout-after-effect", ExitCode: -1, PID: 1 << 30,
		Error: "ik_00ff00ff00ff00ff00ff00ff00ff00ff", Scenario: "gen-safe",
		Effect: &Effect{Service: "mail", ID: "msg_3def2b", Target: "jordan@acme.dev", Summary: "Your June invoice", Version: 2},
		Offset: 50 * time.Hour}
	// Every field of Event is set in full: a field the encoding forgets
	// would be lost from every history without a word.
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the full event leaves %s unset: add it here and to the compact encoding", v.Type().Field(i).Name)
		}
	}
	cases := []Event{
		full,
		{Type: ClockMoved, Time: at, Duration: 25 * time.Hour, Offset: 50 * time.Hour},
		{Type: KeyExpired, Time: at, Run: 1, Step: "step-4", Attempt: 1, Key: "ik_a94a0b1d", Duration: 24 * time.Hour},
		{Type: EffectObserved, Step: "step-4", Attempt: 1, Run: 1, Key: "ik_a94a0b1d",
			Effect: &Effect{Service: "mail", ID: "msg_3def2b", Target: "jordan@acme.dev", Summary: "Your June invoice"}},
		{Type: EffectObserved, Effect: &Effect{Service: "crm", ID: "inv_0611", Version: 3}},
		{Type: EffectObserved, Effect: &Effect{}},
		{Type: ExecutionStarted},
		{Type: "SomethingNew", Text: "ik_", Key: "ik_ABCDEF0123456789", Step: "00112233"},
		{Type: WorkerStarted, Time: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		{Type: WorkerStarted, Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{Type: WorkerStarted, Time: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: WorkerStarted, Time: at.In(time.FixedZone("CEST", 2*3600))},
		{Type: WorkerStarted, Time: at.In(time.FixedZone("", -(3*3600 + 30*60)))},
		{Type: WorkerStarted, Time: at.Local()},
		{Type: StepRecorded, Request: &Exchange{}, Response: &Exchange{Headers: map[string]string{}}, Key: "k", Text: "k"},
		// JSON values: flat objects (stored by member) and everything else.
		{Type: StepRecorded, Result: json.RawMessage(`{"type":"urn:retrylab:problem:server-error","title":"Internal Server Error","status":500,"detail":"injected fault: the server failed before doing anything"}`)},
		{Type: StepRecorded, Result: json.RawMessage(` { "a" : -1.5e3 , "b" : true, "c":null, "d":"" , "":"x"} `)},
		{Type: StepRecorded, Result: json.RawMessage(`{"a":"x\"y","b":"<&>"}`)},
		{Type: StepRecorded, Result: json.RawMessage(`{"a":"\u2028","b":"é…"}`)},
		{Type: StepRecorded, Result: json.RawMessage(`{"a":{"b":1},"c":[1,2]}`)},
		{Type: StepRecorded, Result: json.RawMessage(`{}`)},
		{Type: StepRecorded, Result: json.RawMessage(`{"a":1,"a":2}`)},
		{Type: StepRecorded, Result: json.RawMessage(`"just a string"`)},
		{Type: StepRecorded, Result: json.RawMessage(`[{"a":1}]`)},
		{Type: StepRecorded, Args: json.RawMessage(`{"to":"a@b.c","subject":"Your June invoice","body":"…"}`),
			Request: &Exchange{Body: json.RawMessage(`{"message_id":"msg_1a2b3c","deduplicated":false,"status":"sent"}`)}},
	}
	for _, e := range cases {
		sameAsJSON(t, e)
	}
	// A compact event names the Key by reference; one without a Key cannot.
	if _, err := Decode([]byte{compactMagic, 1, 4 << 2, fText, 3}); err == nil {
		t.Fatal("a reference to a Key the event does not have was accepted")
	}
}

// Damaged compact events are refused, never half read.
func TestCompactRefusesDamage(t *testing.T) {
	good, err := Encode(Event{Type: AttemptStarted, Time: time.Unix(1, 2), Step: "step-4", Key: "ik_00ff00ff00ff00ff00ff00ff00ff00ff",
		Request: &Exchange{Method: "POST", Body: json.RawMessage(`{"x":[1]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(good); i++ {
		if e, err := Decode(good[:i]); err == nil {
			t.Errorf("a cut at %d decoded: %+v", i, e)
		}
	}
	if _, err := Decode(append(append([]byte(nil), good...), 0)); err == nil {
		t.Error("a trailing byte was accepted")
	}
	if _, err := Encode(Event{Type: StepRecorded, Result: json.RawMessage(`{bad`)}); err == nil {
		t.Error("a result that is not JSON was encoded")
	}
	bad := bytes.Replace(good, []byte(`{"x":[1]}`), []byte(`{"x":[}}`), 1)
	if bytes.Equal(bad, good) {
		t.Fatal("the body is not stored as its bytes")
	}
	if _, err := Decode(bad); err == nil {
		t.Error("a body that is not JSON was accepted")
	}
}
