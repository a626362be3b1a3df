package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
)

// detailPane says everything about what is selected: the trace's row (an
// attempt's request, faults, outcome and effects; a run's scenario and the
// keys it needs) or, while the outbox has the focus, its message. It reads
// the selection of the two panes it describes; focused, its keys move the
// trace's selection (the Model routes them).
type detailPane struct {
	*Context
	trace  *tracePane
	outbox *outboxPane
	// scenarioOf is the catalogue's scenario of the execution traced.
	scenarioOf func() *scenario.Scenario
	// now is the clock: times of an execution not started today carry
	// their date.
	now           func() time.Time
	width, height int
	// top is the first line shown of the text about scrolledFor (] and
	// [ scroll it); another selection shows its text from the start.
	top         int
	scrolledFor any
}

func newDetailPane(ctx *Context, tr *tracePane, out *outboxPane, scenarioOf func() *scenario.Scenario, now func() time.Time) *detailPane {
	return &detailPane{Context: ctx, trace: tr, outbox: out, scenarioOf: scenarioOf, now: now}
}

// SetSize is the pane's box, borders included.
func (d *detailPane) SetSize(width, height int) { d.width, d.height = width, height }

// Update does nothing: the pane shows the other panes' selection.
func (d *detailPane) Update(tea.Msg) tea.Cmd { return nil }

// View is the pane's box: the text about the selection, wrapped to the
// pane (a body or arguments are not cut), from the line scrolled to; the
// title says which lines show when they do not all fit.
func (d *detailPane) View() string {
	all := d.wrapped(d.width - 2)
	rows := max(1, d.height-2)
	top := d.start(len(all))
	title := "Detail"
	if len(all) > rows {
		title = fmt.Sprintf("Detail · lines %d-%d of %d · ]/[: scroll", top+1, min(len(all), top+rows), len(all))
	}
	return d.theme.pane(title, all[top:], d.width, d.height, d.focus == paneDetail)
}

// wrapped is the text about the selection, each line wrapped to width:
// at spaces, and inside a word longer than the line (a JSON body).
func (d *detailPane) wrapped(width int) []string {
	var out []string
	for _, l := range d.lines(width) {
		if width < 10 || ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(ansi.Wrap(l, width, " ,"), "\n")...)
	}
	return out
}

// selection is what the pane describes: the outbox's line or the trace's
// row selected.
func (d *detailPane) selection() any {
	if d.focus == paneOutbox {
		if l := d.outbox.selected(); l != nil {
			return l.msg
		}
	}
	return d.trace.selected()
}

// start is the first line shown of n: where the text was scrolled to, if
// it is still the selection's, within the lines there are.
func (d *detailPane) start(n int) int {
	if d.scrolledFor != d.selection() {
		return 0
	}
	return clamp(d.top, 0, max(0, n-max(1, d.height-2)))
}

// Scroll moves the text by delta lines, within what there is.
func (d *detailPane) Scroll(delta int) {
	n := len(d.wrapped(d.width - 2))
	d.top = clamp(d.start(n)+delta, 0, max(0, n-max(1, d.height-2)))
	d.scrolledFor = d.selection()
}

// ShortHelp is the trace's keys: the detail follows the trace's selection.
func (d *detailPane) ShortHelp() []key.Binding { return d.keys.ShortHelp() }

// FullHelp is the moves of the selection it describes.
func (d *detailPane) FullHelp() [][]key.Binding { return [][]key.Binding{keysOf(d.bindings())} }

// bindings are the pane's keys, declared once: they move the trace's
// selection, which the pane describes, a page its own rows.
func (d *detailPane) bindings() []binding {
	page := func() int { return max(1, d.height-3) }
	return moveBindings(d.keys, page, func(delta int) tea.Cmd { return d.trace.moveBy(delta, page()) })
}

// lines describe the selected attempt, step, replay or message.
func (d *detailPane) lines(width int) []string {
	if d.focus == paneOutbox {
		if l := d.outbox.selected(); l != nil {
			msg := l.msg
			at := msg.Attribution
			return []string{
				fmt.Sprintf("%s → %s  %q  delivered %s (world clock)", msg.ID, msg.To, msg.Subject, stamp(msg.Time, msg.Time, d.now())),
				fmt.Sprintf("caused by %s %s attempt %d (run %d)  key %s", orDash(at.Execution), orDash(at.Step), at.Attempt, at.Run, orDash(at.Key)),
				"body: " + msg.Body,
			}
		}
	}
	n := d.trace.selected()
	if n == nil {
		return []string{d.theme.Dim.Render("select a row in the trace")}
	}
	return d.traceDetail(n, width)
}

func (d *detailPane) traceDetail(n *node, width int) []string {
	if d.trace.Imported() {
		if lines, ok := d.importedDetail(n); ok {
			return lines
		}
	}
	switch v := n.src.(type) {
	case *trace.Attempt:
		return attemptDetail(v)
	case *trace.Replay:
		return []string{
			fmt.Sprintf("%s %s  journal record: attempt %d of run %d  key %s", v.Tool, v.Call, v.Attempt, max(v.ResultRun, v.Run), orDash(v.Key)),
			"result: " + compact(v.Result),
			d.theme.Dim.Render("a replay answers from the journal: no request reaches the provider"),
		}
	case *trace.Note:
		if v.Kind == trace.StepRecorded {
			return []string{
				fmt.Sprintf("%s %s  journal record: attempt %d of run %d  key %s", v.Tool, v.Call, v.Attempt, v.Run, orDash(v.Key)),
				"result: " + compact(v.Result),
				d.theme.Dim.Render("a replay answers from the journal: no request reaches the provider"),
			}
		}
		lines := []string{n.plain(), fmt.Sprintf("%s at %s", eventName(v), stamp(v.Time, d.trace.tr.exec.Started, d.now()))}
		if v.Kind == trace.ClockMoved || v.Kind == trace.KeyExpired {
			lines = append(lines, d.theme.Dim.Render(narrate.ClockLesson))
		}
		return lines
	case *trace.Call:
		return []string{fmt.Sprintf("%s %s  (%s tool)", v.Tool, v.Call, v.Kind), "args: " + compact(v.Args)}
	case *trace.Turn:
		return []string{fmt.Sprintf("turn %d: %s", v.Number, v.Text)}
	case *trace.Run:
		head := fmt.Sprintf("run %d: worker pid %d started %s", v.Number, v.PID, v.Started.Format(time.RFC3339))
		if v.PID == 0 { // an imported run: no worker of retrylab's ran it
			head = fmt.Sprintf("run %d started %s", v.Number, v.Started.Format(time.RFC3339))
		}
		lines := []string{head, n.text}
		if s := d.scenarioOf(); s != nil {
			lines = append(lines, d.theme.Bold.Render(s.Name+" — "+s.Title))
			lines = append(lines, scenarioInfo(s, width, 4, 2)...)
		}
		return lines
	}
	return []string{n.plain()}
}

// importedDetail describes a row of an imported trace where the words of
// a native one would claim what the source never recorded (an HTTP
// exchange, a provider's deliveries, a tool kind) or drop its date; ok is
// false for rows described alike for both.
func (d *detailPane) importedDetail(n *node) (lines []string, ok bool) {
	tv := d.trace.tr
	today := d.now()
	switch v := n.src.(type) {
	case *trace.Attempt:
		return tv.importedAttemptDetail(v, today), true
	case *trace.Call:
		return []string{fmt.Sprintf("%s %s  started %s", v.Tool, v.Call, stamp(v.Time, tv.exec.Started, today)),
			"args " + recordedOr(v.Args)}, true
	case *trace.Note:
		if v.Kind == trace.StepRecorded {
			return nil, false
		}
		line := fmt.Sprintf("%s at %s", eventName(v), stamp(v.Time, tv.exec.Started, today))
		if v.Error != "" {
			return []string{n.plain(), line, "error " + v.Error}, true
		}
		return []string{n.plain(), line}, true
	}
	return nil, false
}
