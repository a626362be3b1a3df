// Package narrate tells what happens in a run the way the article's script
// does: one tagged line per thing that happened, from the agent's side
// ([agent], [tool], [journal]) and from the provider's ([mail-api], [crm]).
package narrate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/dur"
	"github.com/retrylab/retrylab/internal/plural"
)

// Narrator turns notices into lines. It follows one execution.
type Narrator struct {
	Execution string
	// args remembers each step's arguments for the banner line.
	args map[string]map[string]any
	// tries counts each step's attempts in run, the run narrated last:
	// a retry's budget is per run, so its count starts again in each.
	run   int
	tries map[string]int
}

// New narrates one execution.
func New(execution string) *Narrator {
	return &Narrator{Execution: execution, args: map[string]map[string]any{}}
}

func tag(t string) string { return fmt.Sprintf("%-11s ", "["+t+"]") }

// Lines narrates one notice; it returns nothing for notices of other
// executions and for events that need no words.
func (n *Narrator) Lines(no notice.Notice) []string {
	if no.Execution != n.Execution {
		return nil
	}
	if no.Event != nil {
		return n.event(*no.Event)
	}
	if no.Activity != nil {
		return activity(*no.Activity)
	}
	return nil
}

func (n *Narrator) event(ev history.Event) []string {
	switch ev.Type {
	case history.ExecutionStarted:
		return []string{tag("runtime") + fmt.Sprintf("execution %s started: scenario %s, policy %s", n.Execution, ev.Scenario, ev.Text)}
	case history.WorkerStarted:
		if ev.Run > 1 {
			return []string{tag("runtime") + fmt.Sprintf("run %d: worker started (pid %d), a fresh process with no memory", ev.Run, ev.PID)}
		}
		return []string{tag("runtime") + fmt.Sprintf("worker started (pid %d)", ev.PID)}
	case history.TurnStarted:
		return []string{tag("agent") + fmt.Sprintf("turn %d: %q", ev.Turn, ev.Text)}
	case history.ToolCallScheduled:
		var args map[string]any
		_ = json.Unmarshal(ev.Args, &args)
		n.args[ev.Step] = args
		return []string{tag("agent") + fmt.Sprintf("%s: %s(%s)", ev.Step, ev.Tool, Args(args))}
	case history.AttemptStarted:
		if ev.Run != n.run || n.tries == nil {
			n.run, n.tries = ev.Run, map[string]int{}
		}
		n.tries[ev.Step]++
		line := tag("tool") + "attempt " + fmt.Sprint(ev.Attempt) + " of " + ev.Step
		if ev.Request != nil {
			line = tag("tool") + ev.Request.Method + " " + ev.Request.URL
		}
		if ev.Key != "" {
			line += "  Idempotency-Key: " + ev.Key
		}
		return []string{line}
	case history.FaultInjected:
		return []string{tag("fault") + fmt.Sprintf("%s on %s attempt %d (%s)", fault.Point(ev.Fault).Describe(), ev.Step, ev.Attempt, ev.Text)}
	case history.AttemptFinished:
		return []string{tag("tool") + attemptResult(ev)}
	case history.RetryScheduled:
		of := ""
		if ev.MaxAttempts > 0 {
			of = fmt.Sprintf("/%d", ev.MaxAttempts)
		}
		// The attempt about to start, counted in its run against the
		// run's budget ("attempt 2/3 of run 2"), never the execution's
		// count ("6/3" after restarts).
		next := ev.Attempt + 1
		if try := n.tries[ev.Step]; try > 0 && ev.Run == n.run {
			next = try + 1
		}
		if ev.Run > 1 {
			of += fmt.Sprintf(" of run %d", ev.Run)
		}
		return []string{tag("agent") + fmt.Sprintf("tool call failed, retrying in %s (attempt %d%s)", dur.Text(ev.Delay), next, of)}
	case history.StepRecorded:
		return []string{tag("journal") + fmt.Sprintf("recorded %s = %s", ev.Step, Summary(ev.Result))}
	case history.StepReplayed:
		if ev.Text == history.ReplayDecision {
			return []string{tag("journal") + fmt.Sprintf("%s: reusing the arguments decided in run %d — the same intent, so the same key", ev.Step, ev.ResultRun)}
		}
		return []string{tag("journal") + fmt.Sprintf("%s already has a recorded result (%s, run %d) — skipping tool call", ev.Step, Summary(ev.Result), ev.ResultRun)}
	case history.WorkerCrashed:
		if ev.Fault != "" {
			return []string{tag("agent") + fmt.Sprintf("✖ killed (exit %d) — %s", ev.ExitCode, crashWords(fault.Point(ev.Fault)))}
		}
		return []string{tag("agent") + fmt.Sprintf("✖ killed (exit %d) — %s", ev.ExitCode, ev.Error)}
	case history.Escalated:
		return []string{tag("agent") + "⚑ escalated: " + ev.Error}
	case history.JournalDeleted:
		return []string{tag("journal") + fmt.Sprintf("record of %s deleted by hand", ev.Step)}
	case history.ExecutionCompleted:
		return []string{tag("agent") + "execution completed"}
	case history.ExecutionFailed:
		return []string{tag("agent") + "✖ execution failed: " + ev.Error}
	case history.Paced:
		return []string{tag("runtime") + Paced(ev.Delay, ev.Attempt) + " of " + ev.Step + " (so the room can follow; the deadlines are unchanged)"}
	case history.ClockMoved:
		return []string{tag("clock") + trace.MarkClock.Glyph() + " " + ClockMoved(ev.Duration, ev.Offset)}
	case history.KeyExpired:
		return []string{tag("clock") + trace.MarkClock.Glyph() + " " + KeyExpired(ev.Key, ev.Step, ev.Duration) + ": a retry with it executes again"}
	}
	return nil
}

func crashWords(p fault.Point) string {
	switch p {
	case fault.CrashAfterEffect:
		return "delivery happened, result never recorded"
	case fault.CrashAfterRecord:
		return "after the result was recorded"
	case fault.CrashBeforeCall:
		return "before the request was sent"
	}
	return p.Describe()
}

func attemptResult(ev history.Event) string {
	switch ev.Outcome {
	case history.OutcomeTimeout:
		return fmt.Sprintf("✖ attempt %d: timeout after %s — no response; the caller cannot tell whether it arrived", ev.Attempt, round(ev.Duration))
	case history.OutcomeOK:
		if ev.Response == nil {
			return fmt.Sprintf("✓ attempt %d: OK", ev.Attempt)
		}
		s := fmt.Sprintf("✓ attempt %d: %d OK %s", ev.Attempt, ev.Response.Status, Summary(ev.Response.Body))
		if ev.Deduplicated {
			s += "  deduplicated: true (Idempotent-Replayed)"
		}
		return s
	case history.OutcomeError:
		if ev.Response != nil {
			return fmt.Sprintf("✖ attempt %d: server error %d", ev.Attempt, ev.Response.Status)
		}
		return fmt.Sprintf("✖ attempt %d: %s", ev.Attempt, ev.Error)
	}
	status := 0
	if ev.Response != nil {
		status = ev.Response.Status
	}
	return strings.TrimRight(fmt.Sprintf("✖ attempt %d: %s (%d) %s", ev.Attempt, ev.Outcome, status, problem(ev.Response)), " ")
}

func problem(x *history.Exchange) string {
	if x == nil {
		return ""
	}
	return problemOf(x.Body)
}

// problemOf is the detail (else the title) of a problem+json body.
func problemOf(body json.RawMessage) string {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) == nil && (p.Detail != "" || p.Title != "") {
		if p.Detail != "" {
			return p.Detail
		}
		return p.Title
	}
	return ""
}

// round rounds a duration for reading.
func round(d time.Duration) string {
	if d > time.Second {
		return dur.Text(d.Round(100 * time.Millisecond))
	}
	return dur.Text(d.Round(time.Millisecond))
}

func activity(a world.Activity) []string {
	switch a.Kind {
	case "delivered":
		return []string{tag("mail-api") + fmt.Sprintf("delivered id=%s to %s", a.MessageID, a.To)}
	case "replayed":
		return []string{tag("mail-api") + fmt.Sprintf("duplicate Idempotency-Key %s — returning original result, no send", a.Key)}
	case "conflict":
		if a.Detail != "" && !strings.Contains(a.Detail, "Idempotency-Key") {
			// Not a key in flight: the CRM's record id is taken, with other
			// fields ("record "cus_1" already exists with different fields").
			return []string{tag(serviceTag(a.Service)) + fmt.Sprintf("%s — 409, %s", a.Detail, noEffect(a.Service))}
		}
		return []string{tag(serviceTag(a.Service)) + fmt.Sprintf("Idempotency-Key %s is still in flight — 409, %s", a.Key, noEffect(a.Service))}
	case "mismatch":
		return []string{tag("mail-api") + fmt.Sprintf("Idempotency-Key %s reused with another payload — 422, no send", a.Key)}
	case "rejected":
		return []string{tag(a.Service) + fmt.Sprintf("rejected (%d): %s", a.Status, a.Detail)}
	case "crm-write":
		return []string{tag("crm") + fmt.Sprintf("%s %s", a.Detail, a.RecordID)}
	}
	return nil
}

// serviceTag is how narration names a service: [mail-api], [crm].
func serviceTag(service string) string {
	if service == world.ServiceMail {
		return "mail-api"
	}
	return service
}

// noEffect says that a refused request had no effect, in the service's terms.
func noEffect(service string) string {
	if service == world.ServiceCRM {
		return "nothing written"
	}
	return "no send"
}

// Summary is a short form of a tool result: its message or record id.
func Summary(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	for _, k := range []string{"message_id", "id"} {
		if v, ok := m[k].(string); ok {
			if k == "message_id" {
				return "id=" + v
			}
			return k + "=" + v
		}
	}
	return string(raw)
}

// Args is the banner form of a call's arguments: to=..., subject="...".
// The body is left out, as in the article.
func Args(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		if k != "body" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return argRank(keys[i]) < argRank(keys[j]) || (argRank(keys[i]) == argRank(keys[j]) && keys[i] < keys[j])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := args[k].(type) {
		case string:
			if strings.ContainsAny(v, " ,") {
				parts = append(parts, fmt.Sprintf("%s=%q", k, v))
			} else {
				parts = append(parts, k+"="+v)
			}
		default:
			b, _ := json.Marshal(v)
			parts = append(parts, k+"="+string(b))
		}
	}
	return strings.Join(parts, ", ")
}

func argRank(k string) int {
	switch k {
	case "id":
		return 0
	case "to":
		return 1
	case "subject":
		return 2
	}
	return 3
}

// OutboxSummary is the closing lines: per intent of this execution, how
// many messages the provider holds, with the article's duplicate flag.
func OutboxSummary(msgs []world.Message, execution string) []string {
	var out []string
	for _, g := range GroupByIntent(msgs) {
		if g.Intent.Execution == execution {
			out = append(out, tag("mail-api")+CountLine(g.Intent.To, len(g.Messages)))
		}
	}
	if len(out) == 0 {
		return []string{tag("mail-api") + "outbox: no messages from this execution"}
	}
	return out
}

// CountLine is "outbox for X: N messages", flagged when N > 1.
func CountLine(to string, n int) string {
	flag := ""
	if n > 1 {
		flag = "   ← duplicate send"
	}
	return fmt.Sprintf("outbox for %s: %s%s", to, plural.Count(n, "message"), flag)
}
