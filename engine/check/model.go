package check

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/scenario"
)

// The model is an abstract re-enactment of the engine's documented
// behaviour (docs/FAULTS.md): given a scenario, a policy and the faults injected
// into each attempt, it plays the agent's turns run after run, without any
// network or process, and counts the effects each step must leave in the
// providers' ledgers. It never looks at the ledger, and it decides on its
// own whether a step is replayed, retried or run again after a crash, so an
// engine that re-executes what it should have replayed departs from it.
//
// Keys are modelled as the design prescribes them, derived from the intent
// (execution, step, canonical arguments): a scenario whose agent mixes the
// attempt number or the time into its keys departs from the model, which is
// the point.

// Plan is what the model needs beyond an execution's history.
type Plan struct {
	// Scenario is the scenario the execution ran.
	Scenario *scenario.Scenario
	// ExpireKeys says the world clock was moved past the key retention right
	// after the execution's first effect, so every key stored until then is
	// forgotten by the next attempt (the fault matrix's "key expired between
	// attempts" row).
	ExpireKeys bool
}

// PlanOf is the plan of a catalogue scenario. When its expect.script moves
// the world clock past the key retention after its first run (a human pause,
// as in the key-retention lesson), the keys stored by then are modelled as
// forgotten.
func PlanOf(s *scenario.Scenario) Plan {
	retention := s.Policy.Retention.D()
	if retention <= 0 {
		retention = 24 * time.Hour
	}
	ran := false
	for _, a := range s.Expect.Script {
		verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
		switch verb {
		case "run", "resume", "submit", "submit-twice":
			ran = true
		case "advance":
			var d scenario.Duration
			if ran && d.UnmarshalText([]byte(arg)) == nil && d.D() > retention {
				return Plan{Scenario: s, ExpireKeys: true}
			}
		}
	}
	return Plan{Scenario: s}
}

// Injection is a fault injected into one attempt, as a FaultInjected event
// records it.
type Injection struct {
	Step    string
	Attempt int
	Point   fault.Point
}

// Prediction is the model's expected outcome of an execution.
type Prediction struct {
	// Effects is the number of effects per step id.
	Effects map[string]int
	// Status is how the execution ends.
	Status history.Status
	// Runs is how many worker runs it takes, resumes included.
	Runs int
	// Attempts is the number of attempts per step id.
	Attempts map[string]int
}

// ErrUnmodelled means the scenario uses something the model does not cover
// (agent-level retries, conflicting client-supplied ids, two faults on one
// attempt); such executions are held to the history-driven range instead.
var ErrUnmodelled = errors.New("outside the model")

// maxModelRuns bounds the runs the model plays: every crash fault fires at
// most once, so a plan that needs more is not a plan the engine can finish.
const maxModelRuns = 64

// Predict plays the scenario under policy with the given injections and
// returns the expected effects per step.
func Predict(plan Plan, policy history.Policy, faults []Injection) (Prediction, error) {
	scn := plan.Scenario
	if scn == nil {
		return Prediction{}, fmt.Errorf("%w: no scenario", ErrUnmodelled)
	}
	m := &machine{
		scn: scn, policy: policy, plan: plan,
		faults:   map[attemptID]fault.Point{},
		journal:  map[string]string{},
		keys:     map[string]storedKey{},
		open:     map[string]bool{},
		attempts: map[string]int{},
		effects:  map[string]int{},
		records:  map[string]record{},
		decided:  map[string]string{},
		dedupe:   true,
	}
	for _, f := range faults {
		k := attemptID{f.Step, f.Attempt}
		if prev, ok := m.faults[k]; ok && prev != f.Point {
			return Prediction{}, fmt.Errorf("%w: two faults (%s, %s) on %s attempt %d", ErrUnmodelled, prev, f.Point, f.Step, f.Attempt)
		}
		m.faults[k] = f.Point
	}
	for _, t := range scn.Tools {
		if t.Service == "mail" && !t.Deduplicates() {
			m.dedupe = false // the host switches key handling off for the whole execution
		}
	}
	for _, turn := range scn.Turns {
		for _, c := range turn.Calls {
			if c.AgentRetry != nil {
				return Prediction{}, fmt.Errorf("%w: agent-level retry of %s", ErrUnmodelled, c.Step)
			}
			if c.Copies() > 1 {
				return Prediction{}, fmt.Errorf("%w: concurrent copies of %s", ErrUnmodelled, c.Step)
			}
			t := scn.Tools[c.Tool]
			switch t.Service + "/" + t.Op {
			case "mail/send", "crm/upsert", "crm/create", "crm/get":
			default:
				return Prediction{}, fmt.Errorf("%w: operation %s/%s", ErrUnmodelled, t.Service, t.Op)
			}
		}
	}
	for run := 1; run <= maxModelRuns; run++ {
		end := m.run(run)
		if m.err != nil {
			return Prediction{}, m.err
		}
		if end != "" {
			return Prediction{Effects: m.effects, Status: end, Runs: run, Attempts: m.attempts}, nil
		}
	}
	return Prediction{}, fmt.Errorf("%w: the execution does not finish within %d runs", ErrUnmodelled, maxModelRuns)
}

type attemptID struct {
	step    string
	attempt int
}

type storedKey struct {
	resp  string
	epoch int
}

type record struct {
	fields  string
	version int
}

// machine is the model's state: what the journal, the key store and the
// CRM hold, and which steps have an attempt whose outcome is unknown.
type machine struct {
	scn      *scenario.Scenario
	policy   history.Policy
	plan     Plan
	faults   map[attemptID]fault.Point
	dedupe   bool
	journal  map[string]string    // step -> recorded response
	keys     map[string]storedKey // key identity -> stored response
	open     map[string]bool      // step -> last attempt started but not finished
	attempts map[string]int
	effects  map[string]int
	records  map[string]record
	decided  map[string]string // step -> arguments recorded as a decision
	epoch    int               // bumped when the world clock jumps past the retention
	jumped   bool
	next     int // response identities
	err      error
}

// run plays one worker run; it returns "" when the worker dies (a crash
// fault) and the execution's final status otherwise.
func (m *machine) run(run int) history.Status {
	unfinished := map[string]bool{}
	for s, open := range m.open {
		unfinished[s] = open
	}
	results := map[string]string{} // step -> response identity, as the worker saw it
	for _, turn := range m.scn.Turns {
		for _, c := range turn.Calls {
			tool := m.scn.Tools[c.Tool]
			if m.policy.Journal {
				if resp, ok := m.journal[c.Step]; ok {
					results[c.Step] = resp
					m.open[c.Step] = false // StepReplayed closes the step
					continue
				}
			}
			if tool.Kind == scenario.KindUnsafe && unfinished[c.Step] {
				return history.StatusEscalated
			}
			args := renderIdentity(c.Args, results, run)
			if m.policy.Journal && m.scn.Policy.JournalDecisions {
				// The first run's decision is recorded and reused after a restart.
				if prior, ok := m.decided[c.Step]; ok {
					args = prior
				} else {
					m.decided[c.Step] = args
				}
			}
			retry := m.scn.Policy.Retry
			for n := 1; ; n++ {
				m.attempts[c.Step]++
				a := m.attempts[c.Step]
				m.open[c.Step] = true
				point := m.faults[attemptID{c.Step, a}]
				var outcome history.Outcome
				var resp string
				switch point {
				case fault.CrashBeforeCall:
					return ""
				case fault.TimeoutBeforeEffect:
					outcome = history.OutcomeTimeout
				case fault.ServerError:
					outcome = history.OutcomeError
				case fault.TimeoutAfterEffect:
					m.effect(c, tool, args)
					outcome = history.OutcomeTimeout
				case fault.CrashAfterEffect:
					m.effect(c, tool, args)
					return ""
				default: // no fault, a slow response, or a crash after recording
					resp = m.effect(c, tool, args)
					outcome = history.OutcomeOK
				}
				if m.err != nil {
					return history.StatusFailed
				}
				m.open[c.Step] = false // AttemptFinished
				if outcome == history.OutcomeOK {
					results[c.Step] = resp
					if m.policy.Journal {
						m.journal[c.Step] = resp
					}
					if point == fault.CrashAfterRecord {
						return ""
					}
					break
				}
				if tool.Kind == scenario.KindUnsafe {
					return history.StatusEscalated // timeout or error: outcome unknown
				}
				if !retryable(outcome, retry.NonRetryable) {
					return history.StatusFailed
				}
				if retry.MaxAttempts > 0 && n >= retry.MaxAttempts {
					return history.StatusFailed
				}
			}
		}
	}
	return history.StatusCompleted
}

func retryable(o history.Outcome, nonRetryable []string) bool {
	if o == history.OutcomeMismatch || o == history.OutcomeRejected {
		return false
	}
	for _, n := range nonRetryable {
		if n == string(o) {
			return false
		}
	}
	return true
}

// effect is one request reaching the provider: it returns the identity of
// the response and counts an effect when the provider acts.
func (m *machine) effect(c scenario.Call, tool scenario.Tool, args string) string {
	keyed := m.policy.Keys && tool.Kind == scenario.KindKeyed && m.dedupe && tool.Op != "get"
	key := c.Step + "\x00" + args
	if keyed {
		if k, ok := m.keys[key]; ok && k.epoch == m.epoch {
			return k.resp // replayed: no effect
		}
	}
	var resp string
	acted := false
	switch tool.Op {
	case "get":
		id := fieldOf(args, "id")
		return fmt.Sprintf("read:%s@%d", id, m.records[id].version)
	case "upsert":
		id := fieldOf(args, "id")
		fields := withoutID(args)
		r := m.records[id]
		if r.version == 0 || r.fields != fields {
			r = record{fields: fields, version: r.version + 1}
			m.records[id] = r
			acted = true
		}
		resp = fmt.Sprintf("rec:%s@%d", id, r.version)
	case "create":
		if id := fieldOf(args, "id"); id != "" {
			fields := withoutID(args)
			r, exists := m.records[id]
			switch {
			case !exists:
				m.records[id] = record{fields: fields, version: 1}
				acted = true
			case r.fields != fields:
				m.err = fmt.Errorf("%w: create of %s with other fields (409)", ErrUnmodelled, id)
			}
			resp = fmt.Sprintf("rec:%s@1", id)
			break
		}
		m.next++
		resp = fmt.Sprintf("rec:%d", m.next)
		acted = true
	default: // mail send
		m.next++
		resp = fmt.Sprintf("msg:%d", m.next)
		acted = true
	}
	if keyed {
		m.keys[key] = storedKey{resp: resp, epoch: m.epoch}
	}
	if acted {
		m.count(c.Step)
	}
	return resp
}

// count records one effect of a step. The execution's first effect is when
// a planned clock jump happens: every key stored so far is forgotten.
func (m *machine) count(step string) {
	m.effects[step]++
	if m.plan.ExpireKeys && !m.jumped {
		m.jumped = true
		m.epoch++
	}
}

var refPattern = regexp.MustCompile(`\$\{([A-Za-z0-9_.-]+)\}`)

// renderIdentity renders a call's arguments the way the worker does, with
// each ${step.field} replaced by a symbol of the response it refers to and
// ${run} by the run number, and returns their canonical JSON.
func renderIdentity(args map[string]any, results map[string]string, run int) string {
	var render func(v any) any
	render = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, val := range x {
				out[k] = render(val)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, val := range x {
				out[i] = render(val)
			}
			return out
		case string:
			return refPattern.ReplaceAllStringFunc(x, func(s string) string {
				path := s[2 : len(s)-1]
				if path == "run" {
					return fmt.Sprint(run)
				}
				parts := strings.Split(path, ".")
				for i := len(parts) - 1; i >= 1; i-- {
					if resp, ok := results[strings.Join(parts[:i], ".")]; ok {
						return "<" + resp + "." + strings.Join(parts[i:], ".") + ">"
					}
				}
				return s
			})
		}
		return v
	}
	if args == nil {
		args = map[string]any{}
	}
	canon, err := idemkey.Canonical(render(args))
	if err != nil {
		return fmt.Sprintf("%v", args)
	}
	return string(canon)
}

// fieldOf reads a top-level string field from canonical JSON arguments, as
// a rough textual lookup good enough for record ids.
func fieldOf(canon, name string) string {
	needle := `"` + name + `": "`
	i := strings.Index(canon, needle)
	if i < 0 {
		return ""
	}
	rest := canon[i+len(needle):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// withoutID is the identity of a write's fields: the arguments without "id".
func withoutID(canon string) string {
	id := fieldOf(canon, "id")
	if id == "" {
		return canon
	}
	return strings.Replace(canon, `"id": "`+id+`"`, "", 1)
}

// Expected is the fault matrix of docs/FAULTS.md: the number of messages one keyed
// send leaves in the outbox under policy p when fault f is injected on its
// first attempt (a crash is followed by a resume), and, with keyExpired, the
// key is forgotten before the next attempt. f may be "" for no fault.
func Expected(p history.Policy, f fault.Point, keyExpired bool) int {
	var faults []Injection
	if f != "" {
		faults = []Injection{{Step: matrixStep, Attempt: 1, Point: f}}
	}
	pred, err := Predict(Plan{Scenario: singleSend(), ExpireKeys: keyExpired}, p, faults)
	if err != nil {
		return -1
	}
	return pred.Effects[matrixStep]
}

const matrixStep = "send"

// singleSend is the scenario the fault matrix is about: one keyed send to
// a provider that honours Idempotency-Key.
func singleSend() *scenario.Scenario {
	return &scenario.Scenario{
		Name:   "single-send",
		Policy: scenario.Policy{KeyDigits: 32, KeyFrom: scenario.KeyFromIntent, Retry: scenario.Retry{MaxAttempts: 3, Backoff: 2}},
		Tools:  map[string]scenario.Tool{"send_email": {Service: "mail", Op: "send", Kind: scenario.KindKeyed}},
		Turns: []scenario.Turn{{Text: "send", Calls: []scenario.Call{{Step: matrixStep, Tool: "send_email",
			Args: map[string]any{"to": "jordan@acme.dev", "subject": "Your June invoice"}}}}},
	}
}

// isSingleSend reports whether a scenario has the shape of the fault matrix's
// table: one call, a keyed mail send, dedupe on.
func isSingleSend(s *scenario.Scenario) (string, bool) {
	var calls []scenario.Call
	for _, t := range s.Turns {
		calls = append(calls, t.Calls...)
	}
	if len(calls) != 1 || calls[0].AgentRetry != nil {
		return "", false
	}
	t := s.Tools[calls[0].Tool]
	return calls[0].Step, t.Service == "mail" && t.Op == "send" && t.Kind == scenario.KindKeyed && t.Deduplicates()
}

// MatrixRows are the rows of the fault matrix, in docs/FAULTS.md order.
var MatrixRows = []MatrixRow{
	{Point: ""},
	{Point: fault.TimeoutBeforeEffect},
	{Point: fault.TimeoutAfterEffect},
	{Point: fault.CrashBeforeCall},
	{Point: fault.CrashAfterEffect},
	{Point: fault.CrashAfterRecord},
	{Point: fault.ServerError},
	{Point: fault.SlowResponse},
	{Point: fault.TimeoutAfterEffect, KeyExpired: true},
	{Point: fault.CrashAfterEffect, KeyExpired: true},
}

// MatrixRow is one row of the fault matrix: a fault on the first attempt,
// with or without the key expiring before the next.
type MatrixRow struct {
	Point      fault.Point
	KeyExpired bool
}

// Label is the row's name as the table prints it.
func (r MatrixRow) Label() string {
	var s string
	switch r.Point {
	case "":
		s = "  no fault"
	case fault.TimeoutBeforeEffect:
		s = "1 timeout before effect"
	case fault.TimeoutAfterEffect:
		s = "2 timeout after effect"
	case fault.CrashBeforeCall:
		s = "3 crash before call, resume"
	case fault.CrashAfterEffect:
		s = "4 crash after effect, resume"
	case fault.CrashAfterRecord:
		s = "5 crash after record, resume"
	case fault.ServerError:
		s = "6 server error (500)"
	case fault.SlowResponse:
		s = "6 slow response"
	default:
		s = string(r.Point)
	}
	if r.KeyExpired {
		s = s[:1] + " + key expired"
		if r.Point.Crash() {
			s += ", resume"
		}
	}
	return s
}

// Policies are the four policies in table order.
var Policies = []history.Policy{{}, {Keys: true}, {Journal: true}, {Keys: true, Journal: true}}

func sortedSteps(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
