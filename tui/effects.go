package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/plural"
)

// inferredLine is one row of the Effects (inferred) pane; at is the
// attempt it stands for (nil for headers and totals), so the row and the
// trace's attempt mark each other • as the outbox and the trace do.
type inferredLine struct {
	text string
	at   *link
}

// audit is the audit of the imported trace with the default effects, as
// `retrylab audit` grades it, computed again only when the trace grew.
func (tv *traceView) audit() audit.Report {
	if tv.audited && tv.auditAt == tv.t.Events {
		return tv.report
	}
	tv.report, tv.auditAt, tv.audited = auditImported(tv.t), tv.t.Events, true
	return tv.report
}

// auditImported is the audit of an imported trace alone with the default
// effects, as `retrylab audit` grades it: the Effects pane's findings and
// the list's ◇ both come from it.
func auditImported(t *trace.Trace) audit.Report {
	pats, _ := audit.ParseEffects(audit.DefaultEffects)
	au := audit.NewAuditor(audit.Options{Effects: pats})
	au.Add(t)
	return au.Report()
}

// effectLines is the outbox pane of an imported execution: no simulated
// provider saw its effects, so they are inferred from its side-effecting
// calls as `retrylab audit` grades them (default effects), with the span
// of each attempt as evidence. Times carry their date when the execution
// did not start on today's (today). Computed from the folded trace, no I/O.
func (tv *traceView) effectLines(width int, today time.Time) []inferredLine {
	day := dayOf(today)
	if tv.effects != nil && tv.effectsAt == tv.t.Events && tv.effectsWidth == width && tv.effectsDay == day {
		return tv.effects
	}
	rep := tv.audit()
	var out []inferredLine
	add := func(s string) { out = append(out, inferredLine{text: fit(s, width)}) }
	started := tv.exec.Started
	if !started.IsZero() && !today.IsZero() && !sameDay(started, today) {
		// The rows' times are of that day (a row of another day says its own).
		add("times of " + started.Format("2006-01-02"))
		add("")
	}
	for _, f := range rep.Findings {
		add(fmt.Sprintf("%s %s", strings.ToUpper(string(f.Grade)), f.Tool))
		add("  " + string(f.Args))
		add("  " + f.Why)
		for _, e := range f.Attempts {
			at := &link{e.Call, e.Attempt}
			out = append(out,
				inferredLine{fit(fmt.Sprintf("  %s %s #%s  %s", e.Mark, e.Call, trace.AttemptNumbers(e.Attempt, e.NotKept), stamp(e.Started, started, started)), width), at},
				inferredLine{fit("    "+refWords(e.Ref), width), at})
		}
		add("")
	}
	if len(rep.Findings) == 0 {
		add("no repeated side effects")
		add("")
	}
	add(plural.Count(rep.Attempts, "side-effecting attempt"))
	counts := []string{fmt.Sprintf("%d duplicate", rep.Counts.Duplicate), fmt.Sprintf("%d possible", rep.Counts.Possible),
		fmt.Sprintf("%d absorbed", rep.Counts.Absorbed)}
	if line := strings.Join(counts, " · "); ansi.StringWidth(line) < width {
		add(line)
	} else { // a narrow pane: one count a line, never cut
		for _, c := range counts {
			add(c)
		}
	}
	tv.effects, tv.effectsAt, tv.effectsWidth, tv.effectsDay = out, tv.t.Events, width, day
	return out
}

// inferredFor says what the audit infers of an imported attempt's effects:
// the finding it is evidence in, or why it is in none.
func (tv *traceView) inferredFor(a *trace.Attempt) []string {
	const head = "effects inferred by the audit (no provider was watched):"
	if !audit.EffectByDefault(a.Tool) {
		return []string{head, "  none: " + a.Tool + " is no side effect by the default patterns"}
	}
	for _, f := range tv.audit().Findings {
		for _, e := range f.Attempts {
			if e.Call == a.Call && e.Attempt == a.N {
				return []string{head, fmt.Sprintf("  %s %s: %s (%d attempts)", strings.ToUpper(string(f.Grade)), f.Tool, f.Why, len(f.Attempts))}
			}
		}
	}
	return []string{head, "  " + a.Tool + " is a side effect; no repeat of it was found"}
}

// importedAttemptDetail is the detail of an attempt of an imported trace:
// what its span recorded, and no more (no HTTP exchange, no provider).
func (tv *traceView) importedAttemptDetail(a *trace.Attempt, today time.Time) []string {
	if a.NotKept > 0 {
		return append([]string{fmt.Sprintf("%s before this one left no record in the source; the last failed: %s", plural.Count(a.NotKept, "attempt"), orNotRecorded(a.Error))},
			tv.inferredFor(a)...)
	}
	head := fmt.Sprintf("#%d %s  call %s  %s", a.N, a.Tool, a.Call, refWords(a.Ref))
	if a.Key != "" {
		head += "  key " + a.Key
	}
	var args []byte
	if a.Request != nil {
		args = a.Request.Body
	}
	if len(args) == 0 {
		// A Temporal activity's input is recorded once, when it is
		// scheduled: every attempt of the call sends it.
		if c := tv.t.LastCall(a.Call); c != nil {
			args = c.Args
		}
	}
	lines := []string{head, "started " + stamp(a.Started, tv.exec.Started, today), "args " + recordedOr(args)}
	switch {
	case a.Finished:
		out := fmt.Sprintf("→ %s in %s", a.Outcome, roundDur(a.Duration))
		if a.Status != 0 {
			out = fmt.Sprintf("→ %d %s in %s", a.Status, a.Outcome, roundDur(a.Duration))
		}
		if a.Outcome == trace.OutcomeCancelled || a.Outcome == trace.OutcomeTimeout {
			out += ": the caller never learnt the outcome"
		}
		var result []byte
		if a.Response != nil {
			result = a.Response.Body
		}
		lines = append(lines, out, "result "+recordedOr(result))
		if a.Error != "" {
			lines = append(lines, "error "+a.Error)
		}
	case !tv.exec.Status.Finished():
		lines = append(lines, "→ in flight: no end recorded yet")
	default:
		lines = append(lines, "→ no end recorded")
	}
	if o := a.Attrs["orphan"]; o != "" {
		lines = append(lines, "orphan: "+o+" (kept)")
	}
	return append(lines, tv.inferredFor(a)...)
}

// recordedOr is a JSON value compacted, or "not recorded".
func recordedOr(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "not recorded"
	}
	return compact(raw)
}

func orNotRecorded(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// dayOf is t's date, as a value to compare.
func dayOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// sameDay says t falls on today's date where today is (its location):
// a time stored in another zone is not "another day" for its offset.
func sameDay(t, today time.Time) bool {
	return dayOf(t.In(today.Location())) == dayOf(today)
}

// stamp is a time of an execution that started at started: its time of day
// when the execution started today and t is of that day too, else with its
// date (imported traces span years).
func stamp(t, started, today time.Time) string {
	if today.IsZero() || (sameDay(started, today) && sameDay(t, today)) {
		return t.Format("15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// importedAttemptLine is the row of an imported attempt: attemptLine's,
// but with the result its span recorded (or "not recorded") where a
// native row points at a provider's message, the outcome's own word for a
// cancelled span, and orphans marked as `retrylab show` marks them.
func importedAttemptLine(a *trace.Attempt) (marker, string) {
	m, text := attemptLine(a)
	if a.NotKept > 0 {
		return m, text
	}
	head := fmt.Sprintf("#%d %s ", a.N, m.Glyph())
	key := ""
	if a.Key != "" {
		key = "  " + a.Key
	}
	switch {
	case m == markOK:
		status := "ok"
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		var result []byte
		if a.Response != nil {
			result = a.Response.Body
		}
		text = fmt.Sprintf("%s%s  %s%s → %s", head, status, roundDur(a.Duration), key, resultWords(result))
	case a.Finished && a.Outcome == trace.OutcomeCancelled:
		text = fmt.Sprintf("%scancelled  %s%s", head, roundDur(a.Duration), key)
	}
	if a.Attrs["orphan"] != "" {
		text += "  (orphan)"
	}
	return m, text
}

// resultWords is a recorded result for a row: the id it points at when it
// has one, else the value itself, or "result not recorded".
func resultWords(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "result not recorded"
	}
	if ref := resultRef(raw); ref != "result" && ref != "?" {
		return ref
	}
	return compact(raw)
}

// refWords name where an imported attempt was recorded: a span id is
// "span 5f2c…"; a Temporal history's ref is words already ("event 33",
// "run 2 event 6"), no span.
func refWords(ref string) string {
	switch {
	case ref == "":
		return "span " + orNotRecorded(ref)
	case strings.Contains(ref, " "):
		return ref
	}
	return "span " + ref
}
