package history

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A prepared event numbered later must be byte for byte what Encode gives
// for the numbered event, whatever the fields.
func TestPreparedMatchesEncode(t *testing.T) {
	events := []Event{
		{Type: ExecutionStarted, Time: time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC), Scenario: "safe", Text: "keys+journal"},
		{Type: AttemptFinished, Step: "step-4", Attempt: 2, Outcome: OutcomeOK, Deduplicated: true, Duration: 3 * time.Millisecond,
			Response: &Exchange{Status: 200, Headers: map[string]string{"Idempotent-Replayed": "true"}, Body: json.RawMessage(`{"message_id":"msg_1"}`)}},
		{Type: StepRecorded, Seq: 99, Step: "s\"1", Result: json.RawMessage(`{"a":"…"}`)},
	}
	for _, e := range events {
		p, err := Prepare(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range []uint64{1, 9, 10, 255, 1 << 40} {
			e.Seq = seq
			want, err := Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.WithSeq(seq); !bytes.Equal(got, want) {
				t.Fatalf("seq %d:\n got %s\nwant %s", seq, got, want)
			}
			back, err := Decode(p.WithSeq(seq))
			if err != nil || back.Seq != seq || back.Type != e.Type {
				t.Fatalf("decode seq %d: %+v %v", seq, back, err)
			}
		}
	}
}
