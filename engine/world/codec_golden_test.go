package world

import (
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// The world's packed records are on disk in every database: this test pins
// their bytes, so a change to the code that writes them cannot change what
// it writes without a word. (engine/internal/pack pins its blocks; this
// pins how the world puts them together.)
func goldenWorld(t *testing.T) map[string][]byte {
	t.Helper()
	key := "ik_000d463986ae11e8cf5b9919381658e9"
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return map[string][]byte{
		"message": must(encodeMessage(Message{Seq: 1, ID: messageID(1), To: "jordan@acme.dev", Subject: "Your June invoice",
			Body: "…", Time: t0, Attribution: attrs[1]})),
		"message extra": must(encodeMessage(Message{Seq: 2, ID: "msg_other", To: "a@b.c", Subject: "<hi> & \"bye\"", Time: tPlus1,
			Attribution: attrs[2], Extra: map[string]json.RawMessage{"cc": json.RawMessage(`["x@y.z", {"n": 1.50}]`)}})),
		"key": must(encodeKeyRecord(key, keyRecord{Fingerprint: "5d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d71292529341",
			Endpoint: "mail POST /v1/send", Status: 200,
			Body: json.RawMessage(`{"deduplicated":false,"idempotency_key":"` + key + `","message_id":"msg_a1748d","status":"sent"}`),
			Ref:  "msg_a1748d", Created: t0, Retention: 24 * time.Hour,
			Attribution: Attribution{Execution: "exec_287GYZTZ", Step: "step-4", Key: key, Attempt: 1, Run: 1}})),
		"key in flight": must(encodeKeyRecord(key, keyRecord{Fingerprint: "f", Endpoint: "crm PUT /v1/records/inv_287GYZTZ",
			Created: tPlus1, Retention: 1500 * time.Millisecond, InFlight: true, Token: "0a1b2c3d4e5f-17", Attribution: attrs[2]})),
		"crm row": must(encodeRecordDoc(recordDoc{ID: "inv_00D9ZK7Z", Fields: map[string]json.RawMessage{
			"customer": json.RawMessage(`"lee@hooli.xyz"`), "invoice": json.RawMessage(`"May"`)},
			Version: 1, Created: t0, Updated: t0, Attribution: Attribution{Execution: "exec_00D9ZK7Z", Step: "step-5", Attempt: 3, Run: 2}})),
		"crm row bare": must(encodeRecordDoc(recordDoc{ID: "x"})),
		"crm write": encodeCRMWrite(CRMWrite{Seq: 9, RecordID: "inv_00D9ZK7Z", Op: OpUpsert, Time: t0, Created: true, Version: 2,
			Attribution: attrs[1]}),
	}
}

var goldenWorldHex = map[string]string{
	"crm row":       "c31e1b052a0a0604024600696c656540686f6f6c692e78797a48007202021128dfa16ce9b41801",
	"crm row bare":  "c30000",
	"crm write":     "c33e1f452c001a9fccff08850108e538b7973fdf07a8f32aa8a8a1c164430602052224021128dfa16ce9b41804",
	"key":           "c3bf011f452c120f0f7f5f080302021d10a1748d1c8502005d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d7129252934190031234015036000332001338003a021128dfa16ce9b41880c60a",
	"key in flight": "c3e606190965018080808080406533696e765f32383747595a545a0966061180269a7ae9b418a03880bcc1960b793061316232633364346535662d3137",
	"message":       "c35c1f452c001a9fccff08850108e538b7973fdf07a8f32aa8a8a1c164430602666830021128dfa16ce9b418",
	"message extra": "c36e190965018080808080402d136f74686572296140622e63613c68693e2026202262796522011163630b00297840792e7a06096e0121312e3530061180269a7ae9b418a038",
}

func TestWorldRecordsArePinned(t *testing.T) {
	for name, b := range goldenWorld(t) {
		if got, want := hex.EncodeToString(b), goldenWorldHex[name]; got != want {
			t.Errorf("the stored form of %q changed: databases written before would not read as they did\n got %q\nwant %q", name, got, want)
		}
	}
}
