package engine_test

import (
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
)

// unsafeKilledScenario is an unsafe send whose first attempt times out
// after the mail went out, and whose worker dies right after recording the
// timeout: before its escalation is recorded, as when the host is killed
// with SIGKILL in between (chaos run exec_s1_r00135 of a CI run, an
// unsafe-send under keys+journal, sent twice).
const unsafeKilledScenario = `name: unsafe-killed
title: "An unsafe send killed between its timeout and its escalation"
execution: exec_UNSAFEKILL
policy:
  keys: true
  journal: true
  retry: {initial: 10ms, backoff: 1.5, max_attempts: 8, timeout: 150ms}
tools:
  send_invoice_email: {service: mail, op: send, kind: unsafe}
turns:
  - text: "Sending the invoice with a tool nothing dedupes"
    calls:
      - step: send
        tool: send_invoice_email
        args: {to: jordan@acme.dev, subject: "Your June invoice", body: "…"}
faults:
  - {step: send, attempt: 1, point: timeout-after-effect}
  - {step: send, attempt: 1, point: crash-after-record}
`

// An unsafe tool's timed-out attempt has an unknown outcome: a worker killed
// after recording the timeout but before escalating leaves the step
// unfinished, and the next run escalates instead of sending again.
func TestUnsafeTimeoutThenKillEscalatesOnResume(t *testing.T) {
	t.Parallel()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"),
		Scenarios: fstest.MapFS{"unsafe-killed.yaml": {Data: []byte(unsafeKilledScenario)}}})
	if err != nil {
		t.Fatalf("open host: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Store().Check(); err != nil {
			t.Errorf("database check: %v", err)
		}
		if err := h.Close(); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	const id = "exec_UNSAFEKILL"

	p := start(t, h, "unsafe-killed")
	wantStatus(t, p, history.StatusKilled, engine.ExitKilled)
	evs := events(t, h, id)
	if f := pick(evs, history.AttemptFinished, 1, "send"); len(f) != 1 || f[0].Outcome != history.OutcomeTimeout {
		t.Fatalf("run 1 finished attempts %+v, want one timeout", f)
	}
	if n := len(pick(evs, history.Escalated, 0, "")); n != 0 {
		t.Fatalf("%d escalations before the kill, want none", n)
	}
	wantOutbox(t, outbox(t, h), 1)

	r := resume(t, h, id)
	wantStatus(t, r, history.StatusEscalated, 0)
	evs = events(t, h, id)
	if again := pick(evs, history.AttemptStarted, 2, ""); len(again) != 0 {
		t.Errorf("run 2 made attempts %+v, want none: the first one's outcome is unknown", again)
	}
	if esc := pick(evs, history.Escalated, 2, "send"); len(esc) != 1 {
		t.Errorf("run 2 escalations %+v, want one for send", esc)
	}
	wantOutbox(t, outbox(t, h), 1)
}
