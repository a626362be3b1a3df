package history

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The stored forms of events, execution records and journal records are on
// disk in every database: these tests pin them byte for byte, so a change
// to the code that writes them cannot change what it writes without a word.
// (A changed format needs a new magic byte or schema version, and readers
// of the old one: never a new golden value here.)

// goldenEvents covers every field, the string forms (table, text, hex
// after a prefix, the Key by reference), times wide and in zones, and the
// JSON forms (flat objects member by member, anything else as its bytes).
func goldenEvents() map[string]Event {
	at := time.Date(2026, 6, 30, 9, 0, 0, 123456789, time.UTC)
	key := "ik_00ff00ff00ff00ff00ff00ff00ff00ff"
	return map[string]Event{
		"full": {Seq: 1 << 40, Type: AttemptFinished, Time: at, Run: 3, Turn: 2, Text: "τext", Step: "step-4",
			Tool: "send_invoice_email", Args: json.RawMessage(`{ "to" : "a@b.c" }`), Key: key,
			Attempt: 7, MaxAttempts: -1, Outcome: OutcomeOK, Deduplicated: true, Duration: -time.Second, Delay: time.Hour,
			Request: &Exchange{Method: "POST", URL: "/v1/send", Headers: map[string]string{"Idempotency-Key": key, "X": ""},
				Body: json.RawMessage(`{"a":"<b>"}`)},
			Response: &Exchange{Status: 200, Headers: map[string]string{"Idempotent-Replayed": "true"}, Body: json.RawMessage(`"msg_1a2b3c"`)},
			Result:   json.RawMessage(`null`), ResultRun: 2, Plan: 1, Fault: "timeout-after-effect", ExitCode: -1, PID: 1 << 30,
			Error: key, Scenario: "gen-safe",
			Effect: &Effect{Service: "mail", ID: "msg_3def2b", Target: "jordan@acme.dev", Summary: "Your June invoice", Version: 2}},
		"effect":   {Type: EffectObserved, Effect: &Effect{Service: "crm", ID: "inv_0611", Version: 3}},
		"new type": {Type: "SomethingNew", Text: "ik_", Key: "ik_ABCDEF0123456789", Step: "00112233"},
		"early":    {Type: WorkerStarted, Time: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		"late":     {Type: WorkerStarted, Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		"zone":     {Type: WorkerStarted, Time: at.In(time.FixedZone("", -(3*3600 + 30*60)))},
		"problem":  {Type: StepRecorded, Result: json.RawMessage(`{"type":"urn:retrylab:problem:server-error","title":"Internal Server Error","status":500,"detail":"injected fault: the server failed before doing anything"}`)},
		"nested":   {Type: StepRecorded, Result: json.RawMessage(`{"a":{"b":1},"c":[1,2]}`), Args: json.RawMessage(`{"a":"x\"y","b":"<&>"}`)},
		"attempt": {Seq: 12, Type: AttemptStarted, Time: at, Run: 1, Step: "step-4", Tool: "send_invoice_email", Key: "ik_8b162d1a691046347573d88b5a09239a",
			Attempt: 1, MaxAttempts: 3, Request: &Exchange{Method: "POST", URL: "/v1/send",
				Headers: map[string]string{"Idempotency-Key": "ik_8b162d1a691046347573d88b5a09239a"},
				Body:    json.RawMessage(`{"to":"jordan@acme.dev","subject":"Your June invoice","body":"…"}`)}},
	}
}

var goldenEventHex = map[string]string{
	"attempt":  "c10c14bf48156d5fd73fd0bd18028401980142498b162d1a691046347573d88b5a09239a02061bd801e80101f0010307ac02003d6a6f7264616e4061636d652e646576b0020045596f7572204a756e6520696e766f696365b40200b802",
	"early":    "c1000880808010ffdb8ff9ce0301",
	"effect":   "c100fc0280808020840321696e765f30363131000006",
	"full":     "c180808080802018ffffff27156d5fd73fd0bd180684019801424900ff00ff00ff00ff00ff00ff00ff00ff0e15cf8465787444600201ffa7d6b9078080c58bc6d1011bd801e80102f001030558002a7b2261223a225c7530303363625c7530303365227d1c900301f401fc0118226d73675f31613262336322030403ac0200156140622e63086e756c6c04018080808008b0038003296d73675f3364656632623d6a6f7264616e4061636d652e64657645596f7572204a756e6520696e766f69636504",
	"late":     "c1000880808010fe85a2ffdf0eff93ebdc03",
	"nested":   "c100208080304a7b2261223a22785c2279222c2262223a225c75303033635c75303032365c7530303365227d2e7b2261223a7b2262223a317d2c2263223a5b312c325d7d",
	"new type": "c10031536f6d657468696e674e6577541200001122334d696b5f41424344454630313233343536373839a402",
	"problem":  "c1002080802009d00200dc02d40200e002c402010d353030d80200e402",
	"zone":     "c1000881808008156d5fd73fd0bd18efc401",
}

// goldenRecords covers every field of an execution record and its times'
// forms.
func goldenRecords() map[string]Execution {
	started := time.Date(2026, 6, 6, 13, 59, 52, 322642030, time.UTC)
	return map[string]Execution{
		"empty": {},
		"gen": {ID: "exec_HFKFEKM0", Scenario: "gen-naive", Status: StatusCompleted, Runs: 1,
			Started: started, Updated: started.Add(2 * time.Second), Ended: started.Add(2 * time.Second),
			Sends: map[string]int{SendIntent("alex@initech.com", "Your February invoice"): 2}, Duplicates: true},
		"killed": {ID: "exec_7K2Q", Scenario: "naive", Policy: Policy{Keys: true, Journal: true}, Status: StatusKilled, Runs: 3,
			Started: started, Updated: started.Add(-time.Hour), StartKey: "run-ik_0123456789abcdef",
			Error: "worker killed: signal: killed", Source: "/tmp/s.yaml"},
		"imported": {ID: "trace-1", Scenario: "(Temporal workflow)", Imported: "temporal", Status: StatusRunning,
			Started: started.In(time.FixedZone("CEST", 2*3600)), Updated: started.In(time.FixedZone("CEST", 2*3600)).Add(time.Minute),
			Sends: map[string]int{"no newline": 1, "a\nb": 0, "": 3}},
		"json": {ID: "far", Started: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
}

var goldenRecordHex = map[string]string{
	"empty":    "c200",
	"gen":      "c2c38f0335657865635f48464b46454b4d30ac038c03026e909b5aaf82b61880d0acf30e00010141616c657840696e69746563682e636f6d55596f757220466562727561727920696e766f69636504",
	"imported": "c2cb96011d74726163652d31cc03c80388036e909b5aaf82b61880e0ba84bf03c0700300000601056105620000296e6f206e65776c696e6502",
	"json":     "7b226964223a22666172222c227363656e6172696f223a22222c22706f6c696379223a7b226b657973223a66616c73652c226a6f75726e616c223a66616c73657d2c22737461747573223a22222c2272756e73223a302c2273746172746564223a22323330302d30312d30315430303a30303a30305a222c2275706461746564223a22303030312d30312d30315430303a30303a30305a227d",
	"killed":   "c2f76725657865635f374b32519c032d2f746d702f732e79616d6c9003066e909b5aaf82b618ffffc48bc6d1015d72756e2d696b5f3031323334353637383961626364656675776f726b6572206b696c6c65643a207369676e616c3a206b696c6c6564",
}

// goldenJournal covers every field of a journal record.
func goldenJournal() map[string]JournalRecord {
	at := time.Date(2026, 6, 6, 13, 59, 52, 322642030, time.UTC)
	return map[string]JournalRecord{
		"send": {Step: "step-4", Tool: "send_invoice_email", Key: "ik_15b289a15ad2664350f65de67b71073d", Attempt: 1, Run: 1,
			Result:   json.RawMessage(`{"deduplicated":true,"idempotency_key":"ik_15b289a15ad2664350f65de67b71073d","message_id":"msg_0fce48","status":"sent"}`),
			Recorded: at},
		"other step": {Step: "step-9", Tool: "record_invoice", Result: json.RawMessage(`{"id":"inv_00D9ZK7Z","version":2}`),
			Recorded: at.In(time.FixedZone("", 3600))},
		"null": {Step: "step-4", Result: json.RawMessage(`null`)},
	}
}

var goldenJournalHex = map[string]string{
	"null":       "c300",
	"other step": "c36331737465702d39140a3c000d223e0158066e909b5aaf82b618a038",
	"send":       "c37e1285010815b289a15ad2664350f65de67b71073d02021234014e36001332001d100fce4838003a026e909b5aaf82b618",
}

// checkGolden compares what was written with the pinned bytes, then reads
// the pinned bytes back through decode and compares with want.
func checkGolden[T any](t *testing.T, what string, cases map[string]T, pinned map[string]string,
	encode func(T) ([]byte, error), decode func([]byte) (T, error)) {
	t.Helper()
	for name, v := range cases {
		b, err := encode(v)
		if err != nil {
			t.Fatalf("%s %q: %v", what, name, err)
		}
		got := hex.EncodeToString(b)
		want, ok := pinned[name]
		if !ok || got != want {
			t.Errorf("the stored form of %s %q changed: databases written before would not read as they did\n got %q\nwant %q", what, name, got, want)
			continue
		}
		back, err := decode(b)
		if err != nil {
			t.Fatalf("%s %q: %v", what, name, err)
		}
		again, err := encode(back)
		if err != nil || !reflect.DeepEqual(again, b) {
			t.Errorf("%s %q does not write back as it was read: %x, %v", what, name, again, err)
		}
	}
}

func TestEventEncodingIsPinned(t *testing.T) {
	checkGolden(t, "event", goldenEvents(), goldenEventHex, Encode, Decode)
}

func TestExecutionEncodingIsPinned(t *testing.T) {
	checkGolden(t, "execution record", goldenRecords(), goldenRecordHex, EncodeExecution, DecodeExecution)
}

func TestJournalEncodingIsPinned(t *testing.T) {
	const exec = "exec_00D9ZK7Z"
	checkGolden(t, "journal record", goldenJournal(), goldenJournalHex,
		func(r JournalRecord) ([]byte, error) { return EncodeJournal(exec, "step-4", r) },
		func(b []byte) (JournalRecord, error) { return DecodeJournal(exec, "step-4", b) })
}
