package history

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// recordViaJSON is what a reader got from a record stored as JSON, before
// the compact encoding.
func recordViaJSON(t *testing.T, x Execution) Execution {
	t.Helper()
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeExecution(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// The compact record gives a reader what the JSON one gave: the same
// fields, times in the same zones, and the same JSON when printed.
func TestRecordReadsAsJSONDid(t *testing.T) {
	started := time.Date(2026, 6, 6, 13, 59, 52, 322642030, time.UTC)
	paris := time.FixedZone("CEST", 2*3600)
	cases := []Execution{
		{},
		{ID: "exec_HFKFEKM0", Scenario: "gen-naive", Status: StatusCompleted, Runs: 1,
			Started: started, Updated: started.Add(2 * time.Second), Ended: started.Add(2 * time.Second),
			Sends: map[string]int{SendIntent("alex@initech.com", "Your February invoice"): 2}, Duplicates: true},
		{ID: "exec_7K2Q", Scenario: "naive", Policy: Policy{Keys: true, Journal: true}, Status: StatusKilled, Runs: 3,
			Started: started, Updated: started.Add(-time.Hour), StartKey: "run-ik_0123456789abcdef",
			Error: "worker killed: signal: killed", Source: "/tmp/s.yaml"},
		{ID: "trace-1", Scenario: "(Temporal workflow)", Imported: "temporal", Status: StatusRunning,
			Started: started.In(paris), Updated: started.In(paris).Add(time.Minute),
			Sends: map[string]int{"no newline": 1, "a\nb": 0, "": 3}, Possible: true},
		{ID: "exec_local", Status: StatusFailed, Started: started.Local(), Updated: started.Local()},
		{ID: "exec_early", Started: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, x := range cases {
		b, err := EncodeExecution(x)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != recordMagic {
			t.Errorf("%s stored as %.20q, not compactly", x.ID, b)
		}
		got, err := DecodeExecution(b)
		if err != nil {
			t.Fatalf("decode %s: %v", x.ID, err)
		}
		want := recordViaJSON(t, x)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", x.ID, got, want)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("%s prints\n %s\nwant %s", x.ID, gj, wj)
		}
	}
}

// A record of the gen mix takes a third of its JSON or less.
func TestRecordIsCompact(t *testing.T) {
	started := time.Date(2026, 6, 6, 13, 59, 52, 322642030, time.UTC)
	x := Execution{ID: "exec_HFKFEKM0", Scenario: "gen-naive", Status: StatusCompleted, Runs: 1,
		Started: started, Updated: started.Add(2 * time.Second), Ended: started.Add(2 * time.Second),
		Sends: map[string]int{SendIntent("alex@initech.com", "Your February invoice"): 2}, Duplicates: true}
	b, _ := EncodeExecution(x)
	j, _ := json.Marshal(x)
	if len(b)*3 > len(j) {
		t.Errorf("%d bytes compact, %d as JSON", len(b), len(j))
	}
}

// Records whose times the compact form cannot hold stay JSON, and read
// back as before.
func TestRecordFallsBackToJSON(t *testing.T) {
	started := time.Date(2026, 6, 6, 13, 59, 52, 0, time.UTC)
	for _, x := range []Execution{
		{ID: "far", Started: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "zones", Started: started, Updated: started.In(time.FixedZone("", 3600))},
		{ID: "no start", Updated: started},
		{ID: "no update", Started: started, Ended: started},
	} {
		b, err := EncodeExecution(x)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != '{' {
			t.Errorf("%s: stored as %q", x.ID, b)
		}
		if got, err := DecodeExecution(b); err != nil || !reflect.DeepEqual(got, recordViaJSON(t, x)) {
			t.Errorf("%s: %v, %v", x.ID, got, err)
		}
	}
}

// Damaged compact records are refused with an error, never a panic.
func TestDamagedRecord(t *testing.T) {
	started := time.Date(2026, 6, 6, 13, 59, 52, 0, time.UTC)
	b, _ := EncodeExecution(Execution{ID: "exec_1", Status: StatusCompleted, Started: started, Updated: started,
		Sends: map[string]int{"a\nb": 1}})
	for i := range b {
		if _, err := DecodeExecution(b[:i]); i > 0 && err == nil {
			t.Errorf("a record cut to %d of %d bytes decoded", i, len(b))
		}
	}
	for _, bad := range [][]byte{{recordMagic, 0xff, 0xff, 0xff, 0xff, 0x0f}, append(append([]byte{}, b...), 0)} {
		if _, err := DecodeExecution(bad); err == nil || !strings.Contains(err.Error(), "decode execution") {
			t.Errorf("%x: %v", bad, err)
		}
	}
}
