package narrate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
)

const exec = "exec_01H8"

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestEventLines(t *testing.T) {
	sent := raw(`{"status":"sent","message_id":"msg_41bcc7","deduplicated":false}`)
	tests := []struct {
		name string
		ev   history.Event
		want string // "" means no line
	}{
		{"ExecutionStarted", history.Event{Type: history.ExecutionStarted, Run: 1, Scenario: "safe", Text: "keys+journal"},
			"[runtime]   execution exec_01H8 started: scenario safe, policy keys+journal"},
		{"WorkerStarted run 1", history.Event{Type: history.WorkerStarted, Run: 1, PID: 4242},
			"[runtime]   worker started (pid 4242)"},
		{"WorkerStarted run 2", history.Event{Type: history.WorkerStarted, Run: 2, PID: 4243},
			"[runtime]   run 2: worker started (pid 4243), a fresh process with no memory"},
		{"TurnStarted", history.Event{Type: history.TurnStarted, Turn: 1, Text: "Sending the June invoice"},
			`[agent]     turn 1: "Sending the June invoice"`},
		{"ToolCallScheduled", history.Event{Type: history.ToolCallScheduled, Step: "step-4", Tool: "send_invoice_email",
			Args: raw(`{"body":"…","subject":"Your June invoice","to":"jordan@acme.dev"}`)},
			`[agent]     step-4: send_invoice_email(to=jordan@acme.dev, subject="Your June invoice")`},
		{"AttemptStarted with key", history.Event{Type: history.AttemptStarted, Step: "step-4", Attempt: 1, Key: "ik_a94a0b1d",
			Request: &history.Exchange{Method: "POST", URL: "/v1/send"}},
			"[tool]      POST /v1/send  Idempotency-Key: ik_a94a0b1d"},
		{"AttemptStarted without key", history.Event{Type: history.AttemptStarted, Step: "step-4", Attempt: 1,
			Request: &history.Exchange{Method: "PUT", URL: "/v1/records/inv_0611"}},
			"[tool]      PUT /v1/records/inv_0611"},
		{"FaultInjected", history.Event{Type: history.FaultInjected, Step: "step-4", Attempt: 1, Fault: "timeout-after-effect",
			Text: "from the scenario's fault plan"},
			"[fault]     timeout after the effect (response lost) on step-4 attempt 1 (from the scenario's fault plan)"},
		{"AttemptFinished timeout", history.Event{Type: history.AttemptFinished, Attempt: 1, Outcome: history.OutcomeTimeout,
			Duration: 301400 * time.Microsecond},
			"[tool]      ✖ attempt 1: timeout after 301ms — no response; the caller cannot tell whether it arrived"},
		{"AttemptFinished long timeout", history.Event{Type: history.AttemptFinished, Attempt: 3, Outcome: history.OutcomeTimeout,
			Duration: 2345 * time.Millisecond},
			"[tool]      ✖ attempt 3: timeout after 2.3s — no response; the caller cannot tell whether it arrived"},
		{"AttemptFinished ok", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeOK,
			Response: &history.Exchange{Status: 200, Body: sent}},
			"[tool]      ✓ attempt 2: 200 OK id=msg_41bcc7"},
		{"AttemptFinished deduplicated", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeOK,
			Deduplicated: true, Response: &history.Exchange{Status: 200, Body: sent}},
			"[tool]      ✓ attempt 2: 200 OK id=msg_41bcc7  deduplicated: true (Idempotent-Replayed)"},
		{"AttemptFinished server error", history.Event{Type: history.AttemptFinished, Attempt: 1, Outcome: history.OutcomeError,
			Response: &history.Exchange{Status: 500}},
			"[tool]      ✖ attempt 1: server error 500"},
		{"AttemptFinished connection error", history.Event{Type: history.AttemptFinished, Attempt: 1, Outcome: history.OutcomeError,
			Error: "connection refused"},
			"[tool]      ✖ attempt 1: connection refused"},
		{"AttemptFinished conflict", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeConflict,
			Response: &history.Exchange{Status: 409, Body: raw(`{"title":"Conflict","detail":"still being processed"}`)}},
			"[tool]      ✖ attempt 2: conflict (409) still being processed"},
		{"AttemptFinished mismatch", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeMismatch,
			Response: &history.Exchange{Status: 422, Body: raw(`{"title":"Unprocessable Content"}`)}},
			"[tool]      ✖ attempt 2: mismatch (422) Unprocessable Content"},
		{"AttemptFinished rejected without body", history.Event{Type: history.AttemptFinished, Attempt: 1, Outcome: history.OutcomeRejected,
			Response: &history.Exchange{Status: 400}},
			"[tool]      ✖ attempt 1: rejected (400)"},
		// Events without the exchange (hand-made or from an older build)
		// are narrated, not a panic.
		{"AttemptStarted without request", history.Event{Type: history.AttemptStarted, Step: "step-4", Attempt: 2},
			"[tool]      attempt 2 of step-4"},
		{"AttemptFinished ok without response", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeOK},
			"[tool]      ✓ attempt 2: OK"},
		{"AttemptFinished conflict without response", history.Event{Type: history.AttemptFinished, Attempt: 2, Outcome: history.OutcomeConflict},
			"[tool]      ✖ attempt 2: conflict (0)"},
		{"RetryScheduled bounded", history.Event{Type: history.RetryScheduled, Attempt: 1, Delay: 50 * time.Millisecond, MaxAttempts: 3},
			"[agent]     tool call failed, retrying in 50ms (attempt 2/3)"},
		{"RetryScheduled unbounded", history.Event{Type: history.RetryScheduled, Attempt: 4, Delay: 2 * time.Second},
			"[agent]     tool call failed, retrying in 2s (attempt 5)"},
		{"StepRecorded", history.Event{Type: history.StepRecorded, Step: "step-4", Result: sent},
			"[journal]   recorded step-4 = id=msg_41bcc7"},
		{"StepReplayed", history.Event{Type: history.StepReplayed, Step: "step-4", Result: sent, ResultRun: 1},
			"[journal]   step-4 already has a recorded result (id=msg_41bcc7, run 1) — skipping tool call"},
		{"WorkerCrashed crash-after-effect", history.Event{Type: history.WorkerCrashed, ExitCode: 137, Fault: "crash-after-effect"},
			"[agent]     ✖ killed (exit 137) — delivery happened, result never recorded"},
		{"WorkerCrashed crash-after-record", history.Event{Type: history.WorkerCrashed, ExitCode: 137, Fault: "crash-after-record"},
			"[agent]     ✖ killed (exit 137) — after the result was recorded"},
		{"WorkerCrashed crash-before-call", history.Event{Type: history.WorkerCrashed, ExitCode: 137, Fault: "crash-before-call"},
			"[agent]     ✖ killed (exit 137) — before the request was sent"},
		{"WorkerCrashed from outside", history.Event{Type: history.WorkerCrashed, ExitCode: 137, Error: "killed (SIGKILL) from outside"},
			"[agent]     ✖ killed (exit 137) — killed (SIGKILL) from outside"},
		{"Escalated", history.Event{Type: history.Escalated, Error: "step-9: outcome unknown"},
			"[agent]     ⚑ escalated: step-9: outcome unknown"},
		{"JournalDeleted", history.Event{Type: history.JournalDeleted, Step: "step-4"},
			"[journal]   record of step-4 deleted by hand"},
		{"ExecutionCompleted", history.Event{Type: history.ExecutionCompleted},
			"[agent]     execution completed"},
		{"ExecutionFailed", history.Event{Type: history.ExecutionFailed, Error: "step-4: the retry policy gave up"},
			"[agent]     ✖ execution failed: step-4: the retry policy gave up"},
		{"StepCompleted says nothing", history.Event{Type: history.StepCompleted, Step: "step-4"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			got := narrate.New(exec).Lines(notice.Notice{Execution: exec, Event: &ev})
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("got %q, want no line", got)
				}
				return
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestActivityLines(t *testing.T) {
	tests := []struct {
		a    world.Activity
		want string
	}{
		{world.Activity{Kind: world.KindDelivered, Service: world.ServiceMail, MessageID: "msg_41bcc7", To: "jordan@acme.dev"},
			"[mail-api]  delivered id=msg_41bcc7 to jordan@acme.dev"},
		{world.Activity{Kind: world.KindReplayed, Service: world.ServiceMail, Key: "ik_a94a0b1d"},
			"[mail-api]  duplicate Idempotency-Key ik_a94a0b1d — returning original result, no send"},
		{world.Activity{Kind: world.KindConflict, Service: world.ServiceMail, Key: "ik_a94a0b1d"},
			"[mail-api]  Idempotency-Key ik_a94a0b1d is still in flight — 409, no send"},
		{world.Activity{Kind: world.KindMismatch, Service: world.ServiceMail, Key: "ik_a94a0b1d"},
			"[mail-api]  Idempotency-Key ik_a94a0b1d reused with another payload — 422, no send"},
		{world.Activity{Kind: world.KindRejected, Service: world.ServiceMail, Status: 400, Detail: `"subject" is required`},
			`[mail]      rejected (400): "subject" is required`},
		{world.Activity{Kind: world.KindCRMWrite, Service: world.ServiceCRM, Detail: "upsert: created", RecordID: "inv_0611"},
			"[crm]       upsert: created inv_0611"},
		{world.Activity{Kind: world.KindFault, Service: world.ServiceMail, Detail: "slow-response"}, ""},
		{world.Activity{Kind: world.KindCRMRead, Service: world.ServiceCRM, RecordID: "inv_0611"}, ""},
	}
	for _, tt := range tests {
		a := tt.a
		a.Attribution.Execution = exec
		got := narrate.New(exec).Lines(notice.Notice{Execution: exec, Activity: &a})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s: got %q, want no line", a.Kind, got)
		case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
			t.Errorf("%s: got %q, want %q", a.Kind, got, tt.want)
		}
	}
}

func TestOtherExecutionsAreSilent(t *testing.T) {
	n := narrate.New(exec)
	ev := history.Event{Type: history.ExecutionCompleted}
	a := world.Activity{Kind: world.KindDelivered, MessageID: "msg_1", To: "x@y.z"}
	for _, no := range []notice.Notice{
		{Execution: "exec_OTHER", Event: &ev},
		{Execution: "", Activity: &a},
		{Execution: exec, Lagged: true},
		{Execution: exec},
	} {
		if got := n.Lines(no); len(got) != 0 {
			t.Errorf("%+v narrated %q", no, got)
		}
	}
}

func TestOutboxSummaryCountsOnlyTheExecution(t *testing.T) {
	msg := func(execution, to string) world.Message {
		return world.Message{To: to, Attribution: world.Attribution{Execution: execution}}
	}
	tests := []struct {
		name string
		msgs []world.Message
		want []string
	}{
		{"none", nil, []string{"[mail-api]  outbox: no messages from this execution"}},
		{"only others", []world.Message{msg("exec_X", "a@b.c"), msg("", "a@b.c")},
			[]string{"[mail-api]  outbox: no messages from this execution"}},
		{"one", []world.Message{msg(exec, "jordan@acme.dev"), msg("exec_X", "jordan@acme.dev")},
			[]string{"[mail-api]  outbox for jordan@acme.dev: 1 message"}},
		{"duplicate", []world.Message{msg(exec, "jordan@acme.dev"), msg(exec, "jordan@acme.dev")},
			[]string{"[mail-api]  outbox for jordan@acme.dev: 2 messages   ← duplicate send"}},
		{"two recipients in first-seen order", []world.Message{msg(exec, "z@acme.dev"), msg(exec, "a@acme.dev"), msg(exec, "z@acme.dev")},
			[]string{"[mail-api]  outbox for z@acme.dev: 2 messages   ← duplicate send", "[mail-api]  outbox for a@acme.dev: 1 message"}},
	}
	for _, tt := range tests {
		got := narrate.OutboxSummary(tt.msgs, exec)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := narrate.CountLine("jordan@acme.dev", 3); got != "outbox for jordan@acme.dev: 3 messages   ← duplicate send" {
		t.Errorf("CountLine 3 = %q", got)
	}
	if got := narrate.CountLine("jordan@acme.dev", 0); got != "outbox for jordan@acme.dev: 0 messages" {
		t.Errorf("CountLine 0 = %q", got)
	}
}

func TestSummaryAndArgs(t *testing.T) {
	for in, want := range map[string]string{
		`{"status":"sent","message_id":"msg_41bcc7"}`: "id=msg_41bcc7",
		`{"id":"inv_0611","version":1}`:               "id=inv_0611",
		`{"message_id":"m","id":"i"}`:                 "id=m",
		`{"status":"ok"}`:                             `{"status":"ok"}`,
		`"plain"`:                                     `"plain"`,
		`not json`:                                    `not json`,
	} {
		if got := narrate.Summary(raw(in)); got != want {
			t.Errorf("Summary(%s) = %q, want %q", in, got, want)
		}
	}
	args := map[string]any{"body": "…", "subject": "Your June invoice", "to": "jordan@acme.dev", "id": "inv_0611",
		"amount": json.Number("12.50"), "customer": "jordan@acme.dev", "tags": []any{"a", "b"}}
	want := `id=inv_0611, to=jordan@acme.dev, subject="Your June invoice", amount=12.50, customer=jordan@acme.dev, tags=["a","b"]`
	if got := narrate.Args(args); got != want {
		t.Errorf("Args:\n got  %s\n want %s", got, want)
	}
	if got := narrate.Args(nil); got != "" {
		t.Errorf("Args(nil) = %q", got)
	}
}

// TestRetryBudgetPerRun: a retry counts attempts in its run against the
// run's budget: run 2 of an execution whose run 1 made 3 attempts retries
// "attempt 2/3 of run 2", not "5/3".
func TestRetryBudgetPerRun(t *testing.T) {
	n := narrate.New(exec)
	line := func(ev history.Event) string {
		return strings.Join(n.Lines(notice.Notice{Execution: exec, Event: &ev}), "\n")
	}
	for a := 1; a <= 3; a++ {
		line(history.Event{Type: history.AttemptStarted, Run: 1, Step: "step-4", Attempt: a})
		if a < 3 {
			want := "[agent]     tool call failed, retrying in 50ms (attempt " + string(rune('0'+a+1)) + "/3)"
			if got := line(history.Event{Type: history.RetryScheduled, Run: 1, Step: "step-4", Attempt: a, Delay: 50 * time.Millisecond, MaxAttempts: 3}); got != want {
				t.Errorf("run 1: %q, want %q", got, want)
			}
		}
	}
	line(history.Event{Type: history.AttemptStarted, Run: 2, Step: "step-4", Attempt: 4})
	got := line(history.Event{Type: history.RetryScheduled, Run: 2, Step: "step-4", Attempt: 4, Delay: 50 * time.Millisecond, MaxAttempts: 3})
	if want := "[agent]     tool call failed, retrying in 50ms (attempt 2/3 of run 2)"; got != want {
		t.Errorf("run 2: %q, want %q", got, want)
	}
}
