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
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/dur"
)

// Handout is what a Markdown handout of one execution is made from.
type Handout struct {
	Execution history.Execution
	// Events is the history; or Read, when set, reads it (it may be called
	// twice), so a long history streams through the handout a page at a
	// time instead of sitting in memory.
	Events []history.Event
	Read   func(fn func(history.Event) error) error
	// Messages is the outbox (all of it or only this execution's); the
	// handout keeps the messages the execution caused.
	Messages []world.Message
	// Records are the CRM's rows; the handout keeps those the execution
	// wrote last.
	Records []world.Record
	// Scenario supplies the title and the explanation; nil leaves them out.
	Scenario *scenario.Scenario
	// More, when set, writes a section of its own after the outbox and CRM
	// and before the handout's closing note (the CLI's comparison of a fix
	// with its mistake), so the note stays the handout's last line.
	More func(w io.Writer) error
}

// Markdown writes a handout of one execution: a summary, what its scenario
// teaches, the trace (turns, calls, every attempt with its outcome, key,
// dedupe and replays, faults, crashes and the gaps while no worker ran),
// and the provider's outbox and CRM rows that the execution caused.
// Times in the trace are offsets from the execution's start.
//
// It streams: the trace is written as its lines become final, and each
// attempt is forgotten once written, so memory does not grow with the
// number of attempts. An execution with more than one run is read twice:
// the summary's idle time needs every gap before the trace begins. What an
// attempt caused is written with the attempt, once its call moved on: an
// effect recorded after that (none of retrylab's faults does it) is left
// out of the trace; the outbox part still lists it.
func Markdown(w io.Writer, h Handout) error {
	read := h.Read
	if read == nil {
		read = func(fn func(history.Event) error) error {
			for _, ev := range h.Events {
				if err := fn(ev); err != nil {
					return err
				}
			}
			return nil
		}
	}
	bw := bufio.NewWriter(w)
	m := &mdWriter{w: bw, h: h, start: h.Execution.Started, t: trace.New(h.Execution.ID)}
	m.t.Stream()
	if err := m.render(read); err != nil {
		return fmt.Errorf("write handout: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write handout: %w", err)
	}
	return nil
}

type mdWriter struct {
	w     *bufio.Writer
	h     Handout
	start time.Time
	t     *trace.Trace // the history, folded as far as it was read
	// walk is where the trace's writing stands: the containers whose
	// heading is written, each with its lines' indent.
	walk *trace.Walk[string]
	// whole folds the whole history before writing the trace (tests
	// compare the streamed handout with it).
	whole bool
}

func (m *mdWriter) f(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

func (m *mdWriter) render(read func(fn func(history.Event) error) error) error {
	x := m.h.Execution
	m.f("# %s · %s\n\n", x.ID, x.Scenario)
	if s := m.h.Scenario; s != nil && s.Title != "" {
		m.f("**%s**\n\n", mdEscape(s.Title))
	}
	if err := m.w.Flush(); err != nil {
		return err
	}
	idle, err := m.idle(read)
	if err != nil {
		return err
	}
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
	m.f("## Trace\n\n")
	m.walk = trace.NewWalk[string](m.t, m)
	if err := read(func(ev history.Event) error {
		history.Apply(m.t, ev)
		if !m.whole {
			m.walk.Pump(false)
		}
		return nil
	}); err != nil {
		return err
	}
	m.walk.Pump(true)
	if m.t.Events == 0 {
		m.f("No events recorded.\n\n")
	} else {
		m.f("\n")
	}
	if err := m.timeline(read); err != nil {
		return err
	}
	m.outbox()
	m.crm()
	if m.h.More != nil {
		if err := m.h.More(m.w); err != nil {
			return err
		}
		m.f("\n")
	}
	m.f("---\n\n*Handout written by `retrylab show %s --markdown`. Times are offsets from the start of the execution.*\n", x.ID)
	return nil
}

// idle sums the gaps between runs, when no worker was running. With one
// run there is none, and the history is not read for it.
func (m *mdWriter) idle(read func(fn func(history.Event) error) error) (time.Duration, error) {
	if m.h.Execution.Runs == 1 {
		return 0, nil
	}
	t := trace.New(m.h.Execution.ID)
	t.Stream()
	err := read(func(ev history.Event) error {
		history.Apply(t, ev)
		if ev.Type == history.AttemptFinished {
			if a := t.Attempt(ev.Step, ev.Attempt); a != nil {
				t.Forget(a)
			}
		}
		return nil
	})
	var total time.Duration
	for _, r := range t.Runs {
		total += r.Idle
	}
	return total, err
}

// effectWords says what the history records an attempt caused, if
// anything: the message it delivered, or the CRM row it wrote.
func effectWords(a *trace.Attempt) (string, bool) {
	for _, fx := range a.Effects {
		if fx.Service == world.ServiceMail {
			return "the provider delivered `" + fx.ID + "`", true
		}
	}
	for _, fx := range a.Effects {
		return "the CRM wrote `" + fx.ID + "`", true
	}
	return "", false
}

func (m *mdWriter) at(t time.Time) string {
	return "`+" + fmt.Sprintf("%.3fs", t.Sub(m.start).Seconds()) + "`"
}

// The trace is written through a trace.Walk, in the order of the tree:
// each run with the gap before it, its turns, calls and every attempt,
// each line once it is final, each attempt forgotten once written. A
// frame's Data is the indent of its lines.

// Enter writes the heading of a run, turn or call.
func (m *mdWriter) Enter(parent, f *trace.Frame[string]) {
	indent := parent.Data
	switch n := f.Node.(type) {
	case *trace.Run:
		m.f("### Run %d\n\n", n.Number)
		if n.Number == 1 && !m.t.Started.IsZero() {
			m.f("- %s execution started: scenario %s, policy %s\n", m.at(m.t.Started), m.t.Scenario, m.t.Policy)
		}
		return
	case *trace.Turn:
		m.f("%s- %s **turn %d** %q\n", indent, m.at(n.Time), n.Number, n.Text)
	case *trace.Call:
		var args map[string]any
		_ = json.Unmarshal(n.Args, &args)
		kind := ""
		if n.Kind != "" {
			kind = " (" + n.Kind + ")"
		}
		m.f("%s- %s `%s` step `%s`%s: %s\n", indent, m.at(n.Time), n.Tool, n.Call, kind, mdEscape(Args(args)))
	}
	f.Data = indent + "  "
}

// Leave writes nothing: a container's lines are its heading and children.
func (m *mdWriter) Leave(*trace.Frame[string]) {}

// Attempt writes a settled attempt's lines. One that died with its worker
// is forgotten by the crash's note, which still lists it.
func (m *mdWriter) Attempt(f *trace.Frame[string], a *trace.Attempt, _ bool) (written, forget bool) {
	m.attempt(a, f.Data)
	return true, !(a.Crashed && !a.Finished)
}

// Other writes a gap, a replay or a note.
func (m *mdWriter) Other(f *trace.Frame[string], n trace.Node) {
	switch n := n.(type) {
	case *trace.Gap:
		m.f("\n> %s %s with no worker running\n\n", trace.MarkGap.Glyph(), mdDur(n.Duration))
	case *trace.Replay:
		what := "its result"
		if n.Decision {
			what = "its decision (the arguments)"
		}
		m.f("%s- %s %s `%s` replayed from the journal (%s, recorded in run %d): %s, no request sent\n",
			f.Data, m.at(n.Time), trace.MarkReplay.Glyph(), n.Call, what, n.ResultRun, mdEscape(Summary(n.Result)))
	case *trace.Note:
		m.note(f.Run, n, f.Data)
	}
}

// Failed is false: a failed write shows when the handout is flushed.
func (m *mdWriter) Failed() bool { return false }

func (m *mdWriter) attempt(a *trace.Attempt, indent string) {
	if a.NotKept > 0 {
		m.f("%s- %s %s %d earlier attempts not kept by the source; the last failed: %s\n", indent, m.at(a.Started),
			trace.MarkNotKept.Glyph(), a.NotKept, mdEscape(a.Error))
		return
	}
	line := fmt.Sprintf("attempt %d", a.N)
	if a.Request != nil {
		line += fmt.Sprintf(" · `%s %s`", a.Request.Method, a.Request.URL)
	}
	if a.Key != "" {
		line += " · key `" + a.Key + "`"
	} else {
		line += " · no key"
	}
	m.f("%s- %s %s\n", indent, m.at(a.Started), line)
	for _, in := range a.Injections {
		m.f("%s- %s %s fault: %s (%s)\n", indent, m.at(in.Time), trace.MarkFault.Glyph(), fault.Point(in.Fault).Describe(), in.Text)
	}
	if a.Finished {
		m.f("%s- %s %s\n", indent, m.at(a.Ended), attemptLine(a))
	}
	if a.Retry > 0 {
		m.f("%s- %s retry in %s\n", indent, m.at(a.RetryAt), mdDur(a.Retry))
	}
}

func (m *mdWriter) note(run *trace.Run, n *trace.Note, indent string) {
	at := m.at(n.Time)
	switch n.Kind {
	case trace.StepRecorded:
		m.f("%s- %s %s recorded `%s` = %s\n", indent, at, trace.MarkRecorded.Glyph(), n.Call, mdEscape(Summary(n.Result)))
	case trace.JournalDeleted:
		m.f("%s- %s %s journal record of `%s` deleted by hand\n", indent, at, trace.MarkDeleted.Glyph(), n.Call)
	case trace.Paced:
		m.f("%s- %s %s\n", indent, at, Paced(n.Duration, n.Attempt))
	case trace.ClockMoved, trace.KeyExpired:
		m.f("%s- %s %s\n", indent, at, mdEscape(ClockNote(n)))
	case trace.RunCrashed:
		why := n.Error
		if n.Fault != "" {
			why = fault.Point(n.Fault).Describe()
		}
		m.f("%s- %s %s worker killed (exit %d): %s\n", indent, at, trace.MarkKilled.Glyph(), n.ExitCode, mdEscape(why))
		if run != nil {
			for _, a := range crashedAttempts(run) {
				if what, ok := effectWords(a); ok {
					m.f("%s  - %s attempt %d of `%s` never finished, but %s\n", indent, trace.MarkAmbiguous.Glyph(), a.N, a.Call, what)
				} else {
					m.f("%s  - attempt %d of `%s` never finished: its outcome is unknown\n", indent, a.N, a.Call)
				}
				m.t.Forget(a)
			}
		}
	case trace.Escalated:
		m.f("%s- %s %s escalated: %s\n", indent, at, trace.MarkEscalated.Glyph(), mdEscape(n.Error))
	case trace.ExecutionEnded:
		status, why := n.EndWords()
		switch {
		case n.Mark == trace.MarkOK:
			m.f("%s- %s %s execution completed\n", indent, at, trace.MarkOK.Glyph())
		case why == "":
			m.f("%s- %s %s execution %s\n", indent, at, trace.MarkFailed.Glyph(), status)
		default:
			m.f("%s- %s %s execution %s: %s\n", indent, at, trace.MarkFailed.Glyph(), status, mdEscape(why))
		}
	}
}

// crashedAttempts are the attempts a run's worker died in, in order.
func crashedAttempts(r *trace.Run) []*trace.Attempt {
	var out []*trace.Attempt
	var walk func(ns []trace.Node)
	walk = func(ns []trace.Node) {
		for _, n := range ns {
			switch n := n.(type) {
			case *trace.Attempt:
				if n.Crashed && !n.Finished {
					out = append(out, n)
				}
			case *trace.Turn, *trace.Call:
				walk(n.Children())
			}
		}
	}
	walk(r.Nodes)
	return out
}

// attemptLine describes a finished attempt; when the agent could not know
// what happened, it says what the history records the attempt caused.
func attemptLine(a *trace.Attempt) string {
	status := a.Status
	var s string
	switch a.Outcome {
	case trace.OutcomeOK:
		s = fmt.Sprintf("%s attempt %d: %d OK", trace.MarkOK.Glyph(), a.N, status)
		if a.Response != nil {
			s += ", " + mdEscape(Summary(a.Response.Body))
		}
		if a.Deduplicated {
			s += " · " + trace.MarkDedup.Glyph() + " deduplicated by key (Idempotent-Replayed): no new effect"
		}
	case trace.OutcomeTimeout:
		s = fmt.Sprintf("%s attempt %d: timeout after %s, outcome unknown to the agent", trace.MarkTimeout.Glyph(), a.N, mdDur(a.Duration))
		if what, ok := effectWords(a); ok {
			s += " · " + trace.MarkAmbiguous.Glyph() + " but " + what
		}
	case trace.OutcomeConflict:
		s = fmt.Sprintf("%s attempt %d: 409 conflict, the same key is still in flight; nothing sent", trace.MarkFailed.Glyph(), a.N)
		if a.Response != nil {
			if p := problemOf(a.Response.Body); p != "" && !strings.Contains(p, "Idempotency-Key") {
				s = fmt.Sprintf("%s attempt %d: 409 conflict, %s; nothing written", trace.MarkFailed.Glyph(), a.N, mdEscape(p))
			}
		}
	case trace.OutcomeMismatch:
		s = fmt.Sprintf("%s attempt %d: 422, the same key with another payload; nothing sent", trace.MarkFailed.Glyph(), a.N)
	case trace.OutcomeError:
		if status != 0 {
			s = fmt.Sprintf("%s attempt %d: server error %d", trace.MarkFailed.Glyph(), a.N, status)
		} else {
			s = fmt.Sprintf("%s attempt %d: %s", trace.MarkFailed.Glyph(), a.N, mdEscape(a.Error))
		}
	default:
		s = fmt.Sprintf("%s attempt %d: %s (%d)", trace.MarkFailed.Glyph(), a.N, a.Outcome, status)
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
		return dur.Text(d.Round(10 * time.Millisecond))
	case d >= time.Millisecond:
		return dur.Text(d.Round(time.Millisecond))
	}
	return dur.Text(d)
}

// Escape is s as Markdown text: what would break a table or start
// emphasis is escaped, a line break is a space. Other handouts (the
// session's, engine/lesson) write their text through it.
func Escape(s string) string { return mdEscape(s) }

// Paragraphs unwraps a YAML block (a scenario's teaches) into paragraphs.
func Paragraphs(s string) string { return paragraphs(s) }

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
