package narrate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
)

// Handout is what a Markdown handout of one execution is made from.
type Handout struct {
	Execution history.Execution
	Events    []history.Event
	// Messages is the outbox (all of it or only this execution's); the
	// handout keeps the messages the execution caused.
	Messages []world.Message
	// Records are the CRM's rows; the handout keeps those the execution
	// wrote last.
	Records []world.Record
	// Scenario supplies the title and the explanation; nil leaves them out.
	Scenario *scenario.Scenario
}

// Markdown writes a handout of one execution: a summary, what its scenario
// teaches, the trace (turns, calls, every attempt with its outcome, key,
// dedupe and replays, faults, crashes and the gaps while no worker ran),
// and the provider's outbox and CRM rows that the execution caused.
// Times in the trace are offsets from the execution's start.
func Markdown(w io.Writer, h Handout) error {
	bw := bufio.NewWriter(w)
	m := &mdWriter{w: bw, h: h, start: h.Execution.Started}
	m.render()
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write handout: %w", err)
	}
	return nil
}

type mdWriter struct {
	w     *bufio.Writer
	h     Handout
	start time.Time
}

func (m *mdWriter) f(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

func (m *mdWriter) render() {
	x := m.h.Execution
	m.f("# %s · %s\n\n", x.ID, x.Scenario)
	if s := m.h.Scenario; s != nil && s.Title != "" {
		m.f("**%s**\n\n", mdEscape(s.Title))
	}
	idle := m.idle()
	took := x.Updated.Sub(x.Started)
	m.f("| | |\n|---|---|\n")
	m.f("| Execution | `%s` |\n", x.ID)
	m.f("| Scenario | %s |\n", x.Scenario)
	m.f("| Policy | %s |\n", policyWords(x.Policy))
	m.f("| Status | %s |\n", statusWords(x.Status))
	m.f("| Runs | %d |\n", x.Runs)
	m.f("| Started | %s |\n", x.Started.UTC().Format(time.RFC3339))
	if idle > 0 {
		m.f("| Took | %s, of which %s with no worker running |\n", mdDur(took), mdDur(idle))
	} else {
		m.f("| Took | %s |\n", mdDur(took))
	}
	if x.Error != "" {
		m.f("| Why it stopped | %s |\n", mdEscape(x.Error))
	}
	m.f("\n")
	if s := m.h.Scenario; s != nil && strings.TrimSpace(s.Teaches) != "" {
		m.f("## What it teaches\n\n%s\n\n", paragraphs(s.Teaches))
	}
	m.trace()
	m.outbox()
	m.crm()
	m.f("---\n\n*Handout written by `retrylab show %s --markdown`. Times are offsets from the start of the execution.*\n", x.ID)
}

// idle sums the gaps between runs: from the last event of one run to the
// first event of the next, when no worker was running.
func (m *mdWriter) idle() time.Duration {
	var total time.Duration
	run, last := 0, time.Time{}
	for _, ev := range m.h.Events {
		if ev.Run > run {
			if run > 0 {
				total += ev.Time.Sub(last)
			}
			run = ev.Run
		}
		if ev.Run == run {
			last = ev.Time
		}
	}
	return total
}

// effect finds what an attempt did at the provider, if anything: the
// message it caused, or the CRM row it last wrote.
func (m *mdWriter) effect(step string, attempt int) (string, bool) {
	match := func(a world.Attribution) bool {
		return a.Execution == m.h.Execution.ID && a.Step == step && a.Attempt == attempt
	}
	for _, msg := range m.h.Messages {
		if match(msg.Attribution) {
			return "the provider delivered `" + msg.ID + "`", true
		}
	}
	for _, r := range m.h.Records {
		if match(r.Attribution) {
			return "the CRM wrote `" + r.ID + "`", true
		}
	}
	return "", false
}

func (m *mdWriter) trace() {
	m.f("## Trace\n\n")
	if len(m.h.Events) == 0 {
		m.f("No events recorded.\n\n")
		return
	}
	open := map[string]int{}
	lastStep := ""
	// Events are grouped by run. The host records a run's WorkerStarted
	// while its worker already reports, so the run number, not that event,
	// opens a run; the gap is from one run's last event to the next's first.
	run, last := 0, time.Time{}
	for _, ev := range m.h.Events {
		if ev.Run > run {
			if run > 0 {
				m.f("\n> ┆ %s with no worker running\n\n", mdDur(ev.Time.Sub(last)))
			}
			run = ev.Run
			m.f("### Run %d\n\n", run)
		}
		if ev.Run == run {
			last = ev.Time
		}
		at := "`+" + fmt.Sprintf("%.3fs", ev.Time.Sub(m.start).Seconds()) + "`"
		switch ev.Type {
		case history.ExecutionStarted:
			m.f("- %s execution started: scenario %s, policy %s\n", at, ev.Scenario, ev.Text)
		case history.TurnStarted:
			m.f("- %s **turn %d** %q\n", at, ev.Turn, ev.Text)
		case history.ToolCallScheduled:
			var args map[string]any
			_ = json.Unmarshal(ev.Args, &args)
			kind := ""
			if ev.Text != "" {
				kind = " (" + ev.Text + ")"
			}
			m.f("  - %s `%s` step `%s`%s: %s\n", at, ev.Tool, ev.Step, kind, mdEscape(Args(args)))
		case history.AttemptStarted:
			open[ev.Step] = ev.Attempt
			lastStep = ev.Step
			line := fmt.Sprintf("attempt %d", ev.Attempt)
			if ev.Request != nil {
				line += fmt.Sprintf(" · `%s %s`", ev.Request.Method, ev.Request.URL)
			}
			if ev.Key != "" {
				line += " · key `" + ev.Key + "`"
			} else {
				line += " · no key"
			}
			m.f("    - %s %s\n", at, line)
		case history.FaultInjected:
			m.f("    - %s ⚡ fault: %s (%s)\n", at, fault.Point(ev.Fault).Describe(), ev.Text)
		case history.AttemptFinished:
			delete(open, ev.Step)
			m.f("    - %s %s\n", at, m.attemptLine(ev))
		case history.RetryScheduled:
			m.f("    - %s retry in %s\n", at, mdDur(ev.Delay))
		case history.StepRecorded:
			m.f("    - %s 📓 recorded `%s` = %s\n", at, ev.Step, mdEscape(Summary(ev.Result)))
		case history.StepReplayed:
			what := "its result"
			if ev.Text == history.ReplayDecision {
				what = "its decision (the arguments)"
			}
			m.f("  - %s ⟲ `%s` replayed from the journal (%s, recorded in run %d): %s, no request sent\n",
				at, ev.Step, what, ev.ResultRun, mdEscape(Summary(ev.Result)))
		case history.JournalDeleted:
			m.f("- %s ✂ journal record of `%s` deleted by hand\n", at, ev.Step)
		case history.WorkerCrashed:
			why := ev.Error
			if ev.Fault != "" {
				why = fault.Point(ev.Fault).Describe()
			}
			m.f("- %s ☠ worker killed (exit %d): %s\n", at, ev.ExitCode, mdEscape(why))
			if n, ok := open[lastStep]; ok {
				if what, ok := m.effect(lastStep, n); ok {
					m.f("  - ⚠ attempt %d of `%s` never finished, but %s\n", n, lastStep, what)
				} else {
					m.f("  - attempt %d of `%s` never finished: its outcome is unknown\n", n, lastStep)
				}
			}
			open = map[string]int{}
		case history.Escalated:
			m.f("- %s ⚑ escalated: %s\n", at, mdEscape(ev.Error))
		case history.ExecutionCompleted:
			m.f("- %s ✓ execution completed\n", at)
		case history.ExecutionFailed:
			m.f("- %s ✖ execution failed: %s\n", at, mdEscape(ev.Error))
		}
	}
	m.f("\n")
}

// attemptLine describes a finished attempt, joined with the outbox when the
// agent could not know what happened.
func (m *mdWriter) attemptLine(ev history.Event) string {
	status := 0
	if ev.Response != nil {
		status = ev.Response.Status
	}
	var s string
	switch ev.Outcome {
	case history.OutcomeOK:
		s = fmt.Sprintf("✓ attempt %d: %d OK", ev.Attempt, status)
		if ev.Response != nil {
			s += ", " + mdEscape(Summary(ev.Response.Body))
		}
		if ev.Deduplicated {
			s += " · ↺ deduplicated by key (Idempotent-Replayed): no new effect"
		}
	case history.OutcomeTimeout:
		s = fmt.Sprintf("⏱ attempt %d: timeout after %s, outcome unknown to the agent", ev.Attempt, mdDur(ev.Duration))
		if what, ok := m.effect(ev.Step, ev.Attempt); ok {
			s += " · ⚠ but " + what
		}
	case history.OutcomeConflict:
		s = fmt.Sprintf("✖ attempt %d: 409 conflict, the same key is still in flight; nothing sent", ev.Attempt)
		if p := problem(ev.Response); p != "" && !strings.Contains(p, "Idempotency-Key") {
			s = fmt.Sprintf("✖ attempt %d: 409 conflict, %s; nothing written", ev.Attempt, mdEscape(p))
		}
	case history.OutcomeMismatch:
		s = fmt.Sprintf("✖ attempt %d: 422, the same key with another payload; nothing sent", ev.Attempt)
	case history.OutcomeError:
		if status != 0 {
			s = fmt.Sprintf("✖ attempt %d: server error %d", ev.Attempt, status)
		} else {
			s = fmt.Sprintf("✖ attempt %d: %s", ev.Attempt, mdEscape(ev.Error))
		}
	default:
		s = fmt.Sprintf("✖ attempt %d: %s (%d)", ev.Attempt, ev.Outcome, status)
	}
	return s
}

func (m *mdWriter) outbox() {
	m.f("## Outbox (the provider's truth)\n\n")
	var mine []world.Message
	for _, msg := range m.h.Messages {
		if msg.Attribution.Execution == m.h.Execution.ID {
			mine = append(mine, msg)
		}
	}
	if len(mine) == 0 {
		m.f("No messages from this execution.\n\n")
		return
	}
	m.f("| message | to | subject | caused by |\n|---|---|---|---|\n")
	counts := map[string]int{}
	var order []string
	for _, msg := range mine {
		a := msg.Attribution
		cause := fmt.Sprintf("`%s` attempt %d, run %d", a.Step, a.Attempt, a.Run)
		if a.Key != "" {
			cause += ", key `" + a.Key + "`"
		} else {
			cause += ", no key"
		}
		m.f("| `%s` | %s | %s | %s |\n", msg.ID, mdEscape(msg.To), mdEscape(msg.Subject), cause)
		if counts[msg.To] == 0 {
			order = append(order, msg.To)
		}
		counts[msg.To]++
	}
	m.f("\n")
	for _, to := range order {
		m.f("**%s**\n\n", mdEscape(CountLine(to, counts[to])))
	}
}

func (m *mdWriter) crm() {
	var mine []world.Record
	for _, r := range m.h.Records {
		if r.Attribution.Execution == m.h.Execution.ID {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return
	}
	m.f("## CRM\n\n| record | version | fields | last written by |\n|---|---|---|---|\n")
	for _, r := range mine {
		fields, _ := json.Marshal(r.Fields)
		m.f("| `%s` | %d | `%s` | `%s` attempt %d, run %d |\n", r.ID, r.Version, strings.ReplaceAll(string(fields), "|", "\\|"),
			r.Attribution.Step, r.Attribution.Attempt, r.Attribution.Run)
	}
	m.f("\n")
}

func policyWords(p history.Policy) string {
	switch {
	case p.Keys && p.Journal:
		return "keys + journal (idempotency keys and recorded results)"
	case p.Keys:
		return "keys (idempotency keys, no journal)"
	case p.Journal:
		return "journal (recorded results, no idempotency keys)"
	}
	return "none (no idempotency keys, no journal)"
}

func statusWords(s history.Status) string {
	switch s {
	case history.StatusCompleted:
		return "✓ completed"
	case history.StatusKilled:
		return "☠ killed (resume it to continue)"
	case history.StatusFailed:
		return "✖ failed"
	case history.StatusEscalated:
		return "⚑ escalated (a human must check)"
	}
	return string(s)
}

// mdDur rounds a duration for reading.
func mdDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// mdEscape keeps text from breaking tables and emphasis.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", "\\|", "\n", " ", "*", "\\*", "`", "'")
	return r.Replace(s)
}

// paragraphs unwraps a YAML block into paragraphs.
func paragraphs(s string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		out = append(out, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(out, "\n\n")
}
