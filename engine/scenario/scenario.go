// Package scenario defines retrylab's demo scenarios: a scripted agent (turns
// with canned text and tool calls), the tools it calls and their safety
// properties, the policy it runs under, the faults to inject, the narration,
// and the outcome it must produce. Scenarios are YAML files; errors name the
// file, line and field.
package scenario

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/retrylab/retrylab/engine/fault"
)

// Scenario is one demo: an agent, its world, its faults and its expected outcome.
type Scenario struct {
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Teaches is the explanation shown in lessons and handouts.
	Teaches string `yaml:"teaches"`
	// Execution is a fixed execution id; empty means a fresh id per run.
	Execution string          `yaml:"execution"`
	Policy    Policy          `yaml:"policy"`
	Tools     map[string]Tool `yaml:"tools"`
	Turns     []Turn          `yaml:"turns"`
	Faults    []Fault         `yaml:"faults"`
	Narration Narration       `yaml:"narration"`
	Expect    Expect          `yaml:"expect"`
	// Order places the scenario in the lesson path; 0 leaves it out.
	Order int `yaml:"order"`
	// Fixes names the scenario whose mistake this one fixes: lessons and
	// handouts show the pair as a difference (retrylab diff).
	Fixes string `yaml:"fixes"`

	// Source is where the scenario was read from (file name), for errors.
	Source string `yaml:"-"`
	// File is the path of a scenario read from a file outside the
	// catalogue, so it can be read again to resume; empty for the catalogue.
	File string `yaml:"-"`
}

// KeyFrom says what an agent builds its idempotency keys from.
type KeyFrom string

// Key sources: only the intent is right; the others exist to show why.
const (
	KeyFromIntent    KeyFrom = "intent"    // execution id, step id, canonical args
	KeyFromAttempt   KeyFrom = "attempt"   // ... plus the attempt number: changes on every retry
	KeyFromTimestamp KeyFrom = "timestamp" // ... plus the time: changes on every retry
	// KeyFromStep leaves the arguments out (execution id and step id only),
	// like a key minted once per operation: a retry that changes the
	// arguments reuses the key, and the provider answers 422.
	KeyFromStep KeyFrom = "step"
	// KeyFromTemporal is Temporal's own recommendation: the workflow id
	// and the activity id (the execution id and the number of the tool
	// call in the run, 1, 2, ..., as Temporal numbers activities). Every
	// retry of an activity keeps it; a new call of the same tool, as an
	// agent-level retry, gets a new one, where exec:step:args stays.
	KeyFromTemporal KeyFrom = "temporal"
)

// Policy is how the agent protects its tool calls.
type Policy struct {
	Keys    bool `yaml:"keys"`
	Journal bool `yaml:"journal"`
	// KeyDigits is how many hex digits of the hash a key keeps (default 8).
	KeyDigits int     `yaml:"key_digits,omitempty"`
	KeyFrom   KeyFrom `yaml:"key_from"`
	// Canonical sorts argument keys before hashing (default true). Off, the
	// agent hashes arguments in the order it happened to write them.
	Canonical *bool `yaml:"canonical"`
	// Retention is the mail API's key retention for this scenario (default 24h).
	Retention Duration `yaml:"retention,omitempty"`
	Retry     Retry    `yaml:"retry"`
	// JournalDecisions makes the agent journal its decision (the rendered
	// arguments of a call, under step "<step>#args") before the first
	// attempt and reuse it after a restart, so arguments it would generate
	// differently (${run}, a timestamp, an LLM's wording) keep their key.
	// It needs journal: true.
	JournalDecisions bool `yaml:"journal_decisions"`
}

// CanonicalArgs reports whether arguments are canonicalised before hashing.
func (p Policy) CanonicalArgs() bool { return p.Canonical == nil || *p.Canonical }

// Retry mirrors Temporal's activity retry policy.
type Retry struct {
	Initial     Duration `yaml:"initial,omitempty" json:"initial"`
	Backoff     float64  `yaml:"backoff,omitempty" json:"backoff"`
	MaxInterval Duration `yaml:"max_interval,omitempty" json:"max_interval"`
	// MaxAttempts bounds attempts per step in one run; 0 means unlimited.
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts"`
	// Timeout is the per-attempt (start-to-close) deadline.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout"`
	// NonRetryable lists outcomes never retried (e.g. "mismatch", "rejected").
	NonRetryable []string `yaml:"non_retryable" json:"non_retryable"`
}

// Delay is the wait before attempt n+1 after attempt n failed (n >= 1).
func (r Retry) Delay(n int) time.Duration {
	d := float64(r.Initial.D())
	for i := 1; i < n; i++ {
		d *= r.Backoff
		if max := float64(r.MaxInterval.D()); max > 0 && d > max {
			d = max
			break
		}
	}
	return time.Duration(d)
}

// Kind is a tool's safety property.
type Kind string

// Tool kinds, from safest to least safe.
const (
	KindRead       Kind = "read"       // no side effect: always safe to retry
	KindIdempotent Kind = "idempotent" // upsert, PUT, client-supplied id: safe to repeat without a key
	KindKeyed      Kind = "keyed"      // an action the provider dedupes by Idempotency-Key
	KindUnsafe     Kind = "unsafe"     // an action nothing dedupes: escalate instead of retrying on faith
)

// Tool is a tool the agent can call and the service behind it.
type Tool struct {
	// Service is the simulated provider: "mail" or "crm".
	Service string `yaml:"service"`
	// Op is the operation: mail "send"; crm "upsert", "create", "get".
	Op   string `yaml:"op"`
	Kind Kind   `yaml:"kind"`
	// Dedupe says whether the provider honours Idempotency-Key (default true).
	Dedupe *bool `yaml:"dedupe"`
	line   int
}

// Deduplicates reports whether the provider honours keys for this tool.
func (t Tool) Deduplicates() bool { return t.Dedupe == nil || *t.Dedupe }

// Turn is one turn of the scripted agent: its text, then its tool calls.
type Turn struct {
	Text  string `yaml:"text"`
	Calls []Call `yaml:"calls"`
	line  int
}

// Call is one tool call. Args may refer to earlier results as
// ${step.field} and to the run number as ${run}.
type Call struct {
	Step string         `yaml:"step"`
	Tool string         `yaml:"tool"`
	Args map[string]any `yaml:"args"`
	// ArgOrder is the order the agent wrote the arguments in (for the
	// canonicalisation lesson); it is taken from the file.
	ArgOrder []string `yaml:"-"`
	// AgentRetry makes the agent, once the retry policy gives up, start a new
	// turn and call the tool again.
	AgentRetry *AgentRetry `yaml:"agent_retry"`
	// Concurrent is how many identical copies of the call the agent fires at
	// once (default 1), like a model that emits the same parallel tool call
	// twice: the copies share the step id, and so the key.
	Concurrent int `yaml:"concurrent"`
	line       int
}

// Copies is how many copies of the call run at once (at least 1).
func (c Call) Copies() int {
	if c.Concurrent < 1 {
		return 1
	}
	return c.Concurrent
}

// AgentRetry is an agent-level retry: a new turn that calls the tool again.
type AgentRetry struct {
	Text string `yaml:"text"`
	// FreshStep gives the new call a new step id (the mistake: a new key).
	FreshStep bool `yaml:"fresh_step"`
	// Max is how many agent-level retries at most (default 1).
	Max int `yaml:"max"`
	// Reorder makes the new turn write the same arguments in reverse order
	// (harmless only when keys are built from canonical arguments).
	Reorder bool `yaml:"reorder"`
	// Args replaces some arguments in the new turn (the agent rewrote them),
	// for example another body. References like ${run} work as in Call.Args.
	Args map[string]any `yaml:"args"`
}

// Fault is one fault of the plan. Each fires at most once per execution.
type Fault struct {
	// Step limits the fault to one step id; empty matches any.
	Step string `yaml:"step"`
	// Attempt limits it to one attempt number; 0 matches any.
	Attempt int         `yaml:"attempt"`
	Point   fault.Point `yaml:"point"`
	line    int
}

// Narration is what the CLI and lessons say around a run.
type Narration struct {
	Intro string `yaml:"intro"`
	Outro string `yaml:"outro"`
	// Predict is the question a lesson asks before running.
	Predict string `yaml:"predict"`
}

// Expect is the outcome a scenario must produce, checked by verify.
type Expect struct {
	// Script is what verify does, in order: "run", "resume",
	// "delete-journal STEP", "advance DURATION", "reset-world", "submit"
	// (a start with a run-level idempotency key) and "submit-twice" (two
	// starts with the same key, at once). Default: [run].
	Script []string `yaml:"script"`
	// Outbox is the number of messages per recipient.
	Outbox map[string]int `yaml:"outbox"`
	// CRMRows is the number of CRM records; nil means not checked.
	CRMRows *int `yaml:"crm_rows"`
	// Status is the execution's final status.
	Status string `yaml:"status"`
	// MailRequests is the number of requests the mail API answered for the
	// scenario's executions; nil means not checked.
	MailRequests *int `yaml:"mail_requests"`
	// CRMWrites is the number of write requests the CRM applied (an upsert
	// repeated with the same fields counts twice, yet leaves one row); nil
	// means not checked.
	CRMWrites *int `yaml:"crm_writes"`
	// Executions is the number of executions the script created; nil means
	// not checked.
	Executions *int `yaml:"executions"`
	// Runs is the number of runs (worker starts) of the last execution; nil
	// means not checked.
	Runs *int `yaml:"runs"`
	// Attempts is the number of attempts per step id of the last execution,
	// over all its runs. Steps not listed are not checked.
	Attempts map[string]int `yaml:"attempts"`
}

// Duration is a time.Duration written as "300ms", "24h" in YAML.
type Duration time.Duration

// D is the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes the duration as "300ms".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalYAML reads a duration and, when it is not one, says on which
// line (a text unmarshaler's error would come without one).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration like 300ms, 2s or 24h", n.Line)
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// UnmarshalText reads "300ms", "1.5s", "24h".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (write it like 300ms, 2s or 24h)", b)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: negative", b)
	}
	*d = Duration(v)
	return nil
}

// ToolFor returns the tool a call names.
func (s *Scenario) ToolFor(c Call) Tool { return s.Tools[c.Tool] }

// Reruns reports whether the scenario's lesson runs its execution again:
// its script has more than one "run" (safe: the second run is answered by
// the journal). Starting such a scenario again restarts its execution;
// any other starts a new one each time.
func (s *Scenario) Reruns() bool {
	runs := 0
	for _, a := range s.Expect.Script {
		if a == "run" {
			runs++
		}
	}
	return runs > 1
}
