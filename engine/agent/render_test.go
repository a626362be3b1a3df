package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/wire"
)

func TestRenderReferences(t *testing.T) {
	results := map[string]any{
		"step-4": map[string]any{"status": "sent", "message_id": "msg_41bcc7", "count": float64(3),
			"nested": map[string]any{"deep": "yes"}, "ok": true},
		// A step id with a dot: the longest existing step id wins.
		"send.v2": map[string]any{"message_id": "msg_dotted"},
		"send":    map[string]any{"v2": map[string]any{"message_id": "msg_shadowed"}},
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"whole string is the value", "${step-4.message_id}", "msg_41bcc7"},
		{"whole string keeps the type", "${step-4.count}", float64(3)},
		{"whole string bool", "${step-4.ok}", true},
		{"whole string map", "${step-4.nested}", map[string]any{"deep": "yes"}},
		{"nested field", "${step-4.nested.deep}", "yes"},
		{"spliced text", "sent as ${step-4.message_id}.", "sent as msg_41bcc7."},
		{"spliced number", "n=${step-4.count}", "n=3"},
		{"two references", "${step-4.status}/${step-4.message_id}", "sent/msg_41bcc7"},
		{"run alone", "${run}", json.Number("2")},
		{"run spliced", "attempt-of-run-${run}", "attempt-of-run-2"},
		{"dotted step id", "${send.v2.message_id}", "msg_dotted"},
		{"unknown step stays", "${step-9.message_id}", "${step-9.message_id}"},
		{"unknown field stays", "${step-4.nope}", "${step-4.nope}"},
		{"field of a non-object stays", "${step-4.status.length}", "${step-4.status.length}"},
		{"a step without a field stays", "${step-4}", "${step-4}"},
		{"unknown spliced stays", "id: ${step-9.id}!", "id: ${step-9.id}!"},
		{"no reference", "plain $text {x}", "plain $text {x}"},
		{"not a reference syntax", "${step 4.x}", "${step 4.x}"},
		{"number passes", json.Number("12.50"), json.Number("12.50")},
		{"nil passes", nil, nil},
		{"map", map[string]any{"id": "inv_0611", "message_id": "${step-4.message_id}", "run": "${run}"},
			map[string]any{"id": "inv_0611", "message_id": "msg_41bcc7", "run": json.Number("2")}},
		{"list", []any{"${step-4.message_id}", "x", map[string]any{"k": "${run}"}},
			[]any{"msg_41bcc7", "x", map[string]any{"k": json.Number("2")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(tt.in, results, 2); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("render(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRenderDoesNotChangeItsInput(t *testing.T) {
	in := map[string]any{"message_id": "${step-4.message_id}", "list": []any{"${run}"}}
	out := render(in, map[string]any{"step-4": map[string]any{"message_id": "m"}}, 1).(map[string]any)
	if in["message_id"] != "${step-4.message_id}" || in["list"].([]any)[0] != "${run}" {
		t.Fatalf("input changed: %#v", in)
	}
	if out["message_id"] != "m" {
		t.Fatalf("output %#v", out)
	}
}

// The agent's key is the article's: ik_a94a0b1d for exec_01H8, step-4 and
// the invoice arguments. The wrong ways to build one change between
// attempts or with the order the arguments were written in.
func TestWorkerKey(t *testing.T) {
	args := map[string]any{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}
	written := []string{"to", "subject", "body"}
	canonicalOff := false
	newWorker := func(p scenario.Policy) *worker {
		if p.KeyDigits == 0 {
			p.KeyDigits = 8
		}
		return &worker{plan: wire.Plan{Execution: "exec_01H8"}, scn: &scenario.Scenario{Policy: p}}
	}
	key := func(w *worker, order []string, attempt int) string {
		t.Helper()
		k, err := w.key("step-4", "1", args, order, attempt)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}

	intent := newWorker(scenario.Policy{KeyFrom: scenario.KeyFromIntent})
	if k1, k2 := key(intent, written, 1), key(intent, reversed(written), 2); k1 != "ik_a94a0b1d" || k2 != k1 {
		t.Errorf("intent keys %s, %s; want ik_a94a0b1d for every attempt and order", k1, k2)
	}
	long := newWorker(scenario.Policy{KeyFrom: scenario.KeyFromIntent, KeyDigits: 32})
	if k := key(long, written, 1); len(k) != 3+32 || k[:11] != "ik_a94a0b1d" {
		t.Errorf("32-digit key %s", k)
	}
	perAttempt := newWorker(scenario.Policy{KeyFrom: scenario.KeyFromAttempt})
	if k1, k2 := key(perAttempt, written, 1), key(perAttempt, written, 2); k1 == k2 || k1 == "ik_a94a0b1d" {
		t.Errorf("attempt keys %s, %s; want a different key per attempt", k1, k2)
	}
	// Temporal's key: workflow id and activity id, the same for every
	// attempt and argument order, another for the run's next tool call.
	tk := newWorker(scenario.Policy{KeyFrom: scenario.KeyFromTemporal})
	k1, k2 := key(tk, written, 1), key(tk, reversed(written), 2)
	next, err := tk.key("step-4", "2", args, written, 1)
	want, _ := idemkey.FromCanonical("exec_01H8", "1", nil, 8)
	if err != nil || k1 != want || k2 != k1 || next == k1 {
		t.Errorf("temporal keys %s, %s, next call %s (%v); want %s twice, then another", k1, k2, next, err, want)
	}
	unsorted := newWorker(scenario.Policy{KeyFrom: scenario.KeyFromIntent, Canonical: &canonicalOff})
	if k1, k2 := key(unsorted, written, 1), key(unsorted, reversed(written), 1); k1 == k2 {
		t.Errorf("without canonical arguments, reordering kept the key %s", k1)
	}
}

func TestRetryable(t *testing.T) {
	for _, tt := range []struct {
		o     history.Outcome
		never []string
		want  bool
	}{
		{history.OutcomeTimeout, nil, true},
		{history.OutcomeError, nil, true},
		{history.OutcomeConflict, nil, true},
		{history.OutcomeMismatch, nil, false}, // a replayed error is an answer
		{history.OutcomeRejected, nil, false},
		{history.OutcomeTimeout, []string{"timeout"}, false},
		{history.OutcomeConflict, []string{"timeout", "conflict"}, false},
	} {
		if got := retryable(tt.o, tt.never); got != tt.want {
			t.Errorf("retryable(%s, %v) = %v, want %v", tt.o, tt.never, got, tt.want)
		}
	}
}

func TestValidJSON(t *testing.T) {
	if got := string(validJSON([]byte(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("valid JSON changed: %s", got)
	}
	if got := string(validJSON([]byte("Bad Gateway\n"))); got != `"Bad Gateway\n"` {
		t.Errorf("text body became %s, want a JSON string", got)
	}
}
