package scenario_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/scenario"
)

// featureBase uses the format's later additions; the tests below break one
// field of it at a time.
const featureBase = `name: features
title: "Every later field"
order: 3
teaches: "what it teaches"
policy:
  keys: true
  journal: true
  key_from: step
  journal_decisions: true
  retention: 72h
tools:
  send: {service: mail, op: send, kind: keyed}
turns:
  - text: "Sending"
    calls:
      - step: s1
        tool: send
        args: {to: a@b.c, subject: x, body: "run ${run}"}
        agent_retry: {text: again, fresh_step: true, max: 2, args: {body: other}}
      - step: s2
        tool: send
        args: {to: a@b.c, subject: y}
        concurrent: 2
narration:
  intro: "intro"
  predict: "How many?"
  outro: "outro"
expect:
  script: [submit, submit-twice, resume, delete-journal s1#args, advance 1h]
  outbox: {a@b.c: 2}
  crm_writes: 0
  executions: 1
  runs: 2
  attempts: {s1: 1, s1-retry2: 1, s2: 2}
`

func TestLaterFieldsParse(t *testing.T) {
	s, err := scenario.Parse("features.yaml", []byte(featureBase))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Turns[0].Calls[0]
	if s.Policy.KeyFrom != scenario.KeyFromStep || !s.Policy.JournalDecisions || s.Policy.Retention.D().Hours() != 72 {
		t.Errorf("policy %+v", s.Policy)
	}
	if c.AgentRetry == nil || c.AgentRetry.Args["body"] != "other" || c.AgentRetry.Max != 2 || c.Copies() != 1 {
		t.Errorf("call %+v, agent retry %+v", c, c.AgentRetry)
	}
	if s.Turns[0].Calls[1].Copies() != 2 {
		t.Errorf("concurrent copies = %d", s.Turns[0].Calls[1].Copies())
	}
	e := s.Expect
	if *e.CRMWrites != 0 || *e.Executions != 1 || *e.Runs != 2 || e.Attempts["s1-retry2"] != 1 || len(e.Script) != 5 {
		t.Errorf("expect %+v", e)
	}
	if got := scenario.FreshStepID("s1", 2); got != "s1-retry2" {
		t.Errorf("FreshStepID = %q", got)
	}
}

// TestLaterFieldErrors breaks one later field at a time: each error is one
// line naming the file, the line and the field, and says what is valid.
func TestLaterFieldErrors(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		line           int
		field, msg     string
	}{
		{"key_from", "key_from: step", "key_from: retry", 8, "policy.key_from", "valid: intent, attempt, timestamp, step"},
		{"journal_decisions without journal", "journal: true\n  key_from", "journal: false\n  key_from", 9, "policy.journal_decisions", "needs journal: true"},
		{"concurrent range", "concurrent: 2", "concurrent: 9", 23, "turns.0.calls.1.concurrent", "1 to 8"},
		{"concurrent with agent retry", "max: 2, args", "max: 2, args", 0, "", ""},
		{"agent_retry max", "max: 2", "max: -1", 19, "turns.0.calls.0.agent_retry.max", "1 or more"},
		{"step id", "step: s2", "step: s#2", 20, "turns.0.calls.1.step", "not a valid step id"},
		{"resume first", "[submit, submit-twice, resume", "[resume, submit, submit-twice", 29, "expect.script.0", "put run or submit before it"},
		{"delete-journal step", "delete-journal s1#args", "delete-journal s9", 29, "expect.script.3", `no call has step id "s9"`},
		{"script action", "advance 1h", "advance soon", 29, "expect.script.4", "invalid duration"},
		{"outbox recipient", "{a@b.c: 2}", "{jordan: 2}", 30, "expect.outbox.jordan", "not an email address"},
		{"attempts step", "s1-retry2: 1", "s1-retry3: 1", 34, "expect.attempts.s1-retry3", "STEP-retryN"},
		{"negative count", "runs: 2", "runs: -2", 33, "expect.runs", "cannot be negative"},
		{"order", "order: 3", "order: -1", 3, "order", "must be 0"},
		{"lesson needs a prediction", `predict: "How many?"`, `predict: ""`, 26, "narration.predict", "missing"},
		{"lesson needs a number", "outbox: {a@b.c: 2}", "mail_requests: 1", 29, "expect", "expect.outbox or expect.crm_rows"},
		{"unknown field", "concurrent: 2", "copies: 2", 23, "turns.0.calls.1.copies", "unknown field (valid: step, tool, args, agent_retry, concurrent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.field == "" && tc.msg == "" {
				// concurrent copies and an agent retry on the same call.
				data := strings.Replace(featureBase, "        concurrent: 2\n", "        concurrent: 2\n        agent_retry: {text: again}\n", 1)
				checkErr(t, data, 24, "turns.0.calls.1.agent_retry", "cannot have an agent_retry")
				return
			}
			if !strings.Contains(featureBase, tc.old) {
				t.Fatalf("base lacks %q", tc.old)
			}
			checkErr(t, strings.Replace(featureBase, tc.old, tc.new, 1), tc.line, tc.field, tc.msg)
		})
	}
}

func checkErr(t *testing.T, data string, line int, field, msg string) {
	t.Helper()
	_, err := scenario.Parse("fixtures/features.yaml", []byte(data))
	var se *scenario.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a *scenario.Error", err)
	}
	text := err.Error()
	if strings.Contains(text, "\n") {
		t.Errorf("error is not one line: %q", text)
	}
	if se.File != "fixtures/features.yaml" || se.Line != line || se.Field != field || !strings.Contains(se.Msg, msg) {
		t.Errorf("error %q: got line %d field %q; want line %d field %q and %q", text, se.Line, se.Field, line, field, msg)
	}
}
