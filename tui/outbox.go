package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/plural"
)

// outboxPane is the provider's truth beside the trace: the selected
// execution's deliveries grouped by intent (o: the CRM's rows instead),
// the message caused by the selected attempt marked •, and the whole
// outbox's size; for an imported execution, the effects inferred from its
// trace (o does not leave them: no simulated provider saw them).
type outboxPane struct {
	*Context
	msgs       []world.Message // the selected execution's deliveries
	recent     []world.Message
	total      int // the whole outbox's size; -1 until read
	records    []world.Record
	recordsCut bool // more rows than crmWindow
	crmTab     bool
	sel, top   int
	// attempt is the selected trace attempt, whose deliveries are marked.
	attempt func() *link
	// inferred is, for an imported execution (no simulated provider saw its
	// effects), the effects inferred from its trace, width wide; ok is
	// false for an execution retrylab ran.
	inferred func(width int) (lines []inferredLine, ok bool)
	// moved is told the selection moved: the trace shows the attempt
	// behind the row selected.
	moved         func()
	width, height int
}

func newOutboxPane(ctx *Context, attempt func() *link, inferred func(int) ([]inferredLine, bool), moved func()) *outboxPane {
	return &outboxPane{Context: ctx, attempt: attempt, inferred: inferred, moved: moved, total: -1}
}

// bindings are the pane's keys, declared once: the moves, each followed
// by moved (the trace shows the attempt behind the row).
func (o *outboxPane) bindings() []binding {
	return moveBindings(o.keys, o.pageRows, func(delta int) tea.Cmd {
		o.move(delta)
		o.moved()
		return nil
	})
}

// ToggleCRM switches between the outbox and the CRM's rows (o), from the
// top.
func (o *outboxPane) ToggleCRM() {
	o.crmTab = !o.crmTab
	o.sel, o.top = 0, 0
}

// SetSize is the pane's box, borders included.
func (o *outboxPane) SetSize(width, height int) { o.width, o.height = width, height }

// Update takes what the outbox read brought (outboxMsg without an error,
// for the execution selected); its keys are its bindings.
func (o *outboxPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case outboxMsg:
		o.recent, o.total = msg.recent, msg.total
		if msg.forID != "" {
			o.msgs = msg.msgs
		}
		if msg.crm {
			o.records, o.recordsCut = msg.records, msg.cut
		}
	}
	return nil
}

// CRM says the pane shows the CRM's rows (o), not the outbox.
func (o *outboxPane) CRM() bool { return o.crmTab }

// ShowCRM puts the pane on the CRM's rows (or on the outbox), from its top.
func (o *outboxPane) ShowCRM(on bool) {
	if o.crmTab != on {
		o.crmTab, o.sel, o.top = on, 0, 0
	}
}

// Select starts the pane from its top for an execution newly selected
// (the tab, outbox or CRM, stays as o left it).
func (o *outboxPane) Select() { o.sel, o.top = 0, 0 }

// SetDeliveries are the selected execution's deliveries, read with its
// trace (nil: none selected).
func (o *outboxPane) SetDeliveries(msgs []world.Message) { o.msgs = msgs }

// clickDelta is how far a click on the pane's row moves the selection.
func (o *outboxPane) clickDelta(row int) int { return o.top + row - o.sel }

// move moves the selection by delta rows.
func (o *outboxPane) move(delta int) {
	o.sel = clamp(o.sel+delta, 0, max(0, o.count()-1))
	o.clampScroll()
}

func (o *outboxPane) pageRows() int { return max(1, o.height-3) }

// clampScroll keeps the selection in view.
func (o *outboxPane) clampScroll() { o.top = scrollTo(o.sel, o.top, o.height-2, o.count()) }

// Clear forgets what was read (another source shows).
func (o *outboxPane) Clear() {
	o.msgs, o.recent, o.records, o.sel, o.top, o.total = nil, nil, nil, 0, 0, -1
}

// count is how many rows the pane has.
func (o *outboxPane) count() int {
	if lines, ok := o.inferredLines(o.width - 2); ok {
		return len(lines)
	}
	if o.crmTab {
		return len(crmLines(o.records))
	}
	return len(outboxLines(o.msgs, o.total))
}

// inferredLines are the inferred effects of an imported execution.
func (o *outboxPane) inferredLines(width int) ([]inferredLine, bool) {
	if o.inferred == nil {
		return nil, false
	}
	return o.inferred(width - 1)
}

// selectedInferred is the attempt of the inferred effect under the
// selection, nil when there is none (or the pane shows the outbox).
func (o *outboxPane) selectedInferred() *link {
	lines, ok := o.inferredLines(o.width - 2)
	if !ok || o.sel < 0 || o.sel >= len(lines) {
		return nil
	}
	return lines[o.sel].at
}

// selected is the outbox message under the selection.
func (o *outboxPane) selected() *outboxLine {
	if _, inferred := o.inferredLines(o.width - 2); inferred || o.crmTab {
		return nil
	}
	lines := outboxLines(o.msgs, o.total)
	if o.sel < 0 || o.sel >= len(lines) || lines[o.sel].msg == nil {
		return nil
	}
	return &lines[o.sel]
}

// View is the pane's box.
func (o *outboxPane) View() string {
	title, lines := o.lines(o.height-2, o.width-2)
	return o.theme.pane(title, lines, o.width, o.height, o.focus == paneOutbox)
}

// Name is what the pane shows, as its tab names it: the outbox, the CRM's
// rows, or an imported execution's effects, inferred (the title says the
// same, and more).
func (o *outboxPane) Name() string {
	switch {
	case o.imported(), o.can.importsOnly:
		return "Effects"
	case o.crmTab:
		return "CRM"
	}
	return "Outbox"
}

// imported says the pane shows an imported execution's inferred effects.
func (o *outboxPane) imported() bool {
	_, ok := o.inferredLines(max(1, o.width-2))
	return ok
}

func (o *outboxPane) lines(height, width int) (string, []string) {
	focused := o.focus == paneOutbox
	// An imported execution's effects were seen by no simulated provider:
	// the pane infers them from its trace, whichever tab o last chose.
	if lines, ok := o.inferredLines(width); ok {
		return "Effects (inferred)", o.inferredWindow(lines, height, width, focused)
	}
	if o.can.importsOnly {
		// Imports only: no simulated provider here to show the outbox of.
		return "Effects (inferred)", []string{o.theme.Dim.Render(" no execution selected")}
	}
	if o.crmTab {
		title := "CRM (provider's truth) · o: outbox"
		if o.recordsCut {
			title = fmt.Sprintf("CRM (first %d rows) · o: outbox", crmWindow)
		}
		all := crmLines(o.records)
		return title, window(all, o.top, height, o.sel, focused, o.theme)
	}
	title := "Outbox (provider's truth) · o: CRM"
	ls := outboxLines(o.msgs, o.total)
	var highlight *link
	if o.attempt != nil {
		highlight = o.attempt()
	}
	var lines []string
	for i := o.top; i < len(ls) && len(lines) < height; i++ {
		l := ls[i]
		text := l.text
		switch l.status {
		case 1:
			text = o.theme.OK.Render(text)
		case 2:
			text = o.theme.Bad.Render(text)
		}
		switch {
		case focused && i == o.sel:
			text = o.theme.Selected.Render(fit(selMark(true)+l.text, width))
		case l.msg != nil && highlight != nil && l.msg.Attribution.Step == highlight.step && l.msg.Attribution.Attempt == highlight.attempt:
			text = o.theme.Linked.Render(fit("•"+l.text, width))
		default:
			text = " " + text
		}
		lines = append(lines, text)
	}
	return title, lines
}

// inferredWindow is the rows of the inferred effects in view: the
// selected one marked ›, those of the trace's selected attempt •.
func (o *outboxPane) inferredWindow(lines []inferredLine, height, width int, focused bool) []string {
	var highlight *link
	if o.attempt != nil {
		highlight = o.attempt()
	}
	var out []string
	for i := o.top; i < len(lines) && len(out) < height; i++ {
		l := lines[i]
		switch {
		case focused && i == o.sel:
			out = append(out, o.theme.Selected.Render(selMark(true)+l.text))
		case l.at != nil && highlight != nil && *l.at == *highlight:
			out = append(out, o.theme.Linked.Render(fit("•"+l.text, width)))
		default:
			out = append(out, " "+l.text)
		}
	}
	return out
}

// ShortHelp is the pane's keys in the footer.
func (o *outboxPane) ShortHelp() []key.Binding {
	k := o.keys
	return words(k.OutboxTab, k.Run, k.CrashAfterEffect, k.Resume, k.Help, k.Quit)
}

// FullHelp is the pane's keys: o and the moves.
func (o *outboxPane) FullHelp() [][]key.Binding {
	return [][]key.Binding{append([]key.Binding{o.keys.OutboxTab}, keysOf(o.bindings())...)}
}

// outboxLine is one row of the outbox pane; msg is nil for headers and totals.
type outboxLine struct {
	text   string
	msg    *world.Message
	status int // 0 plain, 1 ok, 2 duplicate
}

// outboxLines lays out an execution's deliveries grouped by intent, with
// the duplicate flag, then the whole outbox's size once it is read (total
// not negative): the selected execution's deliveries come with its trace,
// the size with the outbox's own read, and a size not read yet is not 0.
func outboxLines(msgs []world.Message, total int) []outboxLine {
	var out []outboxLine
	if len(msgs) == 0 {
		out = append(out, outboxLine{text: "no messages from this execution"})
	}
	for _, g := range narrate.GroupByIntent(msgs) {
		out = append(out, outboxLine{text: fmt.Sprintf("%s · %q", g.Intent.To, g.Intent.Subject)})
		for i := range g.Messages {
			m := g.Messages[i]
			at := m.Attribution
			cause := fmt.Sprintf("%s #%d", at.Step, at.Attempt)
			if at.Key != "" {
				cause += " · " + at.Key
			} else {
				cause += " · no key"
			}
			out = append(out, outboxLine{text: fmt.Sprintf("  %s  %s", m.ID, cause), msg: &m})
		}
		n := len(g.Messages)
		if g.Duplicate() {
			out = append(out, outboxLine{text: fmt.Sprintf("  %d messages ← duplicate send", n), status: 2})
		} else {
			out = append(out, outboxLine{text: "  1 message ✓", status: 1})
		}
	}
	if total >= 0 {
		out = append(out, outboxLine{text: ""}, outboxLine{text: "whole outbox: " + plural.Count(total, "message")})
	}
	return out
}

// crmLines lays out the CRM's rows.
func crmLines(records []world.Record) []string {
	if len(records) == 0 {
		return []string{"no CRM records"}
	}
	var out []string
	for _, r := range records {
		var fields []string
		for _, k := range []string{"message_id", "invoice", "customer", "status"} {
			if v, ok := r.Fields[k]; ok {
				fields = append(fields, fmt.Sprintf("%s=%v", k, v))
			}
		}
		out = append(out, fmt.Sprintf("%s v%d  %s", r.ID, r.Version, strings.Join(fields, " ")))
		if at := r.Attribution; at.Execution != "" {
			out = append(out, fmt.Sprintf("  by %s %s #%d", at.Execution, at.Step, at.Attempt))
		}
	}
	return out
}
