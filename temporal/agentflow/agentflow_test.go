package agentflow

import (
	"reflect"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/scenario"
)

// The scenario's retry policy is Temporal's, with retrylab's answers that
// are not reasons to retry as non-retryable error types.
func TestRetryPolicy(t *testing.T) {
	p := RetryPolicy(scenario.Retry{Initial: scenario.Duration(50 * time.Millisecond), Backoff: 2,
		MaxInterval: scenario.Duration(time.Second), MaxAttempts: 3, NonRetryable: []string{"timeout"}})
	if p.InitialInterval != 50*time.Millisecond || p.BackoffCoefficient != 2 || p.MaximumInterval != time.Second || p.MaximumAttempts != 3 ||
		!reflect.DeepEqual(p.NonRetryableErrorTypes, []string{"mismatch", "rejected", ErrEscalate, "timeout"}) {
		t.Errorf("policy %+v", p)
	}
	// Zero values Temporal would refuse or read otherwise.
	if p := RetryPolicy(scenario.Retry{}); p.InitialInterval <= 0 || p.BackoffCoefficient != 1 || p.MaximumAttempts != 0 {
		t.Errorf("zero policy %+v", p)
	}
	if d := startToClose(scenario.Retry{Timeout: scenario.Duration(time.Second)}); d != 1500*time.Millisecond {
		t.Errorf("start-to-close %s", d)
	}
}

// Keys on Temporal are the local engine's: the article's from the
// workflow id (the execution) and the step; Temporal's from the workflow
// id and the activity id, the same for every attempt.
func TestDeriveKey(t *testing.T) {
	args := map[string]any{"to": "jordan@acme.dev", "subject": "Your June invoice"}
	c := Call{Step: "step-4", Key: &KeyPolicy{From: scenario.KeyFromIntent, Digits: 8}}
	k, err := deriveKey(c, "exec_4AR2", "5", args, 2)
	want, _ := idemkey.Derive("exec_4AR2", "step-4", args, 8)
	if err != nil || k != want {
		t.Errorf("intent key %s %v, want %s", k, err, want)
	}
	c.Key.From = scenario.KeyFromTemporal
	k1, _ := deriveKey(c, "exec_4AR2", "5", args, 1)
	k2, _ := deriveKey(c, "exec_4AR2", "5", args, 3)
	other, _ := deriveKey(c, "exec_4AR2", "11", args, 1)
	want, _ = idemkey.FromCanonical("exec_4AR2", "5", nil, 8)
	if k1 != want || k2 != k1 || other == k1 {
		t.Errorf("temporal keys %s %s, other activity %s; want %s for both attempts", k1, k2, other, want)
	}
	c.Key.From = scenario.KeyFromAttempt
	if a1, _ := deriveKey(c, "exec_4AR2", "5", args, 1); a1 == k || a1 == k1 {
		t.Errorf("attempt key %s", a1)
	}
}
