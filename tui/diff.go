package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	xdiff "github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/trace"
)

// This file is the explorer's comparison of two executions: m marks the
// selected execution, = opens the marked one (A) beside the selected one
// (B), lined up by engine/diff. Both sides scroll together, as one table;
// rows that differ are highlighted and carry their marker (≠ < >) in text,
// so they show without colour too; what each execution did to the world
// stays at the bottom. Below wideWidth the sides are stacked: each row is
// two lines, A over B, so the view fits 80 columns.

// comparePane is the comparison (m, =) over the whole screen: both sides
// lined up, scrolled together, with its own footer of keys.
type comparePane struct {
	*Context
	// marked is the execution m marked: side A of the next comparison.
	marked string
	open   bool
	// loading is set while the two histories are read and compared.
	loading bool
	a, b    string
	res     *xdiff.Result
	sel     int // the selected row
	top     int // the first row shown
	// whatA and whatB are the widest subjects of each side, measured once
	// when the result arrives, so a frame measures only the rows it shows.
	whatA, whatB  int
	width, height int
	footer        help.Model
}

func newComparePane(ctx *Context) *comparePane {
	return &comparePane{Context: ctx, footer: newFooterHelp(ctx.theme)}
}

// bindings are the comparison's keys, declared once: the explorer's moves
// scroll both sides; esc, =, q or enter closes.
func (c *comparePane) bindings() []binding {
	move := func(msg tea.KeyMsg) tea.Cmd {
		d, _ := c.keys.moveDelta(msg, c.rowsShown())
		c.move(d)
		return nil
	}
	return []binding{
		{Binding: key.NewBinding(key.WithKeys("up", "k", "down", "j"), key.WithHelp("↑/↓", "scroll both")), action: move},
		{Binding: key.NewBinding(key.WithKeys("pgup", "ctrl+u", "pgdown", "ctrl+d"), key.WithHelp("pgup/pgdn", "page")), action: move},
		{Binding: key.NewBinding(key.WithKeys("g", "home", "G", "end")), action: move}, // not in the footer
		{Binding: key.NewBinding(key.WithKeys("esc", "=", "q", "enter"), key.WithHelp("esc/=", "close")), action: func(tea.KeyMsg) tea.Cmd {
			c.open, c.res = false, nil
			return nil
		}},
	}
}

// ShortHelp is the comparison's footer, from its bindings.
func (c *comparePane) ShortHelp() []key.Binding { return shortOf(c.bindings()) }

// FullHelp is the comparison's keys in one group.
func (c *comparePane) FullHelp() [][]key.Binding { return [][]key.Binding{c.ShortHelp()} }

// Shown says the comparison is open.
func (c *comparePane) Shown() bool { return c.open }

// Mark makes id side A of the next comparison.
func (c *comparePane) Mark(id string) { c.marked = id }

// Awaits says the comparison shown waits for a's and b's.
func (c *comparePane) Awaits(a, b string) bool { return c.open && c.a == a && c.b == b }

// Close closes the comparison.
func (c *comparePane) Close() { c.open, c.loading, c.res = false, false, nil }

// Marked is the execution m marked: side A of the next comparison.
func (c *comparePane) Marked() string { return c.marked }

// SetSize fits the comparison to the screen.
func (c *comparePane) SetSize(width, height int) { c.width, c.height = width, height }

// Start opens the comparison of a with b while it is read.
func (c *comparePane) Start(a, b string) {
	c.open, c.loading, c.a, c.b, c.res, c.sel, c.top, c.whatA, c.whatB = true, true, a, b, nil, 0, 0, 0, 0
}

// Update takes the comparison in (compareMsg without an error: the Model
// reports errors) and the keys while it shows: the explorer's moves scroll
// both sides, esc, =, q or enter closes.
func (c *comparePane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case compareMsg:
		c.onResult(msg)
	case tea.KeyMsg:
		cmd, _ := dispatch(c.bindings(), msg)
		return cmd
	}
	return nil
}

// compareMsg is the comparison, computed off the UI goroutine.
type compareMsg struct {
	a, b string
	res  *xdiff.Result
	err  error
}

// markExec marks the selected execution as side A.
func (m *Model) markExec() tea.Cmd {
	sel := m.selectedExec()
	if sel == nil {
		m.setFlash("select an execution to mark", true)
		return nil
	}
	m.cmp.Mark(sel.x.ID)
	m.setFlash(fmt.Sprintf("marked %s (%s): select another execution and press = to compare", sel.x.ID, sel.x.Scenario), false)
	return nil
}

// markedTag starts the second line of an execution in the list: " A " for
// the marked one (side A of the next comparison), else blanks.
func markedTag(id, marked string) string {
	if id != "" && id == marked {
		return " A "
	}
	return "   "
}

// openCompare starts comparing the marked execution with the selected one.
func (m *Model) openCompare() tea.Cmd {
	sel := m.selectedExec()
	switch {
	case m.cmp.Marked() == "":
		m.setFlash("press m on an execution first, then = on another to compare them", true)
		return nil
	case sel == nil:
		m.setFlash("select an execution to compare with "+m.cmp.Marked(), true)
		return nil
	case sel.x.ID == m.cmp.Marked():
		m.setFlash(sel.x.ID+" is the marked execution: select another and press = to compare the two", true)
		return nil
	}
	a, b, src := m.cmp.Marked(), sel.x.ID, m.src
	m.cmp.Start(a, b)
	m.modes.push(m.compareMode())
	return func() tea.Msg {
		// Both histories are read and folded at once.
		var tb *trace.Trace
		var errB error
		done := make(chan struct{})
		go func() {
			defer close(done)
			tb, errB = foldExecution(src, b)
		}()
		ta, err := foldExecution(src, a)
		<-done
		if err == nil {
			err = errB
		}
		if err != nil {
			return compareMsg{a: a, b: b, err: err}
		}
		return compareMsg{a: a, b: b, res: xdiff.Compare(ta, tb, "", "")}
	}
}

// foldExecution reads and folds one execution (imports.Fold), its history
// up to what the trace pane holds; an imported one as its source
// translates it (as the trace pane reads it).
func foldExecution(src Source, id string) (*trace.Trace, error) {
	return imports.Fold(src, id, maxTraceEvents)
}

// onCompare takes the comparison in, if it is still the one asked for.
func (m *Model) onCompare(msg compareMsg) tea.Cmd {
	if !m.cmp.Awaits(msg.a, msg.b) {
		return nil
	}
	if msg.err != nil {
		m.cmp.Close()
		m.setFlash("compare: "+oneLine(msg.err.Error()), true)
		return nil
	}
	return m.cmp.Update(msg)
}

// onResult shows the comparison read, from where the sides part.
func (c *comparePane) onResult(msg compareMsg) {
	c.loading = false
	c.res = msg.res
	c.sel, c.top = 0, 0
	for _, row := range msg.res.Rows {
		if row.A != nil {
			c.whatA = max(c.whatA, ansi.StringWidth(row.A.What()))
		}
		if row.B != nil {
			c.whatB = max(c.whatB, ansi.StringWidth(row.B.What()))
		}
	}
	if msg.res.Part > 0 {
		c.move(msg.res.Part) // open where they part
	}
}

func (c *comparePane) move(d int) {
	if c.res == nil {
		return
	}
	n := len(c.res.Rows)
	c.sel = clamp(c.sel+d, 0, max(0, n-1))
	c.top = scrollTo(c.sel, c.top, c.rowsShown(), n)
}

// compareStacked reports whether the sides are stacked (narrow terminals).
func (c *comparePane) stacked() bool { return c.width < wideWidth }

// compareLayout splits the box's inner height: the heads, the rows, the
// foot (where they part, the effects, the legend).
func (c *comparePane) layout() (head, foot []string, rowLines int) {
	w := c.width - 2
	r := c.res
	if r == nil {
		return nil, nil, 0
	}
	head = []string{fit(" A  "+r.A.Head(), w), fit(" B  "+r.B.Head(), w)}
	if !c.stacked() {
		aw, bw := c.columns()
		head = append(head, fit("   "+fit("A "+r.A.Label, aw)+" │ "+fit("B "+r.B.Label, bw), w))
	}
	foot = append(foot, strings.Repeat("─", w))
	if c.sel < len(r.Rows) {
		row := r.Rows[c.sel]
		why := row.Why
		if !row.Differs {
			why = "the same on both sides"
		}
		foot = append(foot, fit(fmt.Sprintf(" row %d %s %s", c.sel+1, row.Marker(), why), w))
	}
	foot = append(foot, wrap(r.Parting, w)...)
	for _, l := range r.EffectLines {
		foot = append(foot, wrap("effects  "+l, w)...)
	}
	foot = append(foot, wrap(r.Legend(), w)...)
	rowLines = c.height - 3 - len(head) - len(foot)
	if rowLines < 2 {
		// A short terminal keeps the effects and drops the legend first.
		keep := max(2, len(foot)+rowLines-2)
		foot = foot[:min(len(foot), keep)]
		rowLines = max(2, c.height-3-len(head)-len(foot))
	}
	return head, foot, rowLines
}

// compareRowsShown is how many rows of the comparison fit.
func (c *comparePane) rowsShown() int {
	_, _, lines := c.layout()
	if c.stacked() {
		return max(1, lines/2)
	}
	return max(1, lines)
}

// compareColumns are the widths of side A's and side B's columns.
func (c *comparePane) columns() (int, int) {
	w := c.width - 2 - 3 - 3 // the markers, the separator
	return w / 2, w - w/2
}

// View draws the comparison over the whole screen.
func (c *comparePane) View() string {
	title := fmt.Sprintf("Compare  A %s  ⇄  B %s", c.a, c.b)
	var lines []string
	switch {
	case c.loading || c.res == nil:
		lines = []string{c.theme.Dim.Render(" reading and lining up both histories…")}
	default:
		head, foot, rowLines := c.layout()
		lines = append(lines, head...)
		body := c.rows(rowLines)
		for len(body) < rowLines {
			body = append(body, "")
		}
		lines = append(lines, body...)
		lines = append(lines, foot...)
	}
	box := c.theme.box(title, lines, c.width, c.height-1, true)
	return box + "\n" + c.status()
}

// compareRows renders the rows from top, as many as fit in n lines.
func (c *comparePane) rows(n int) []string {
	r := c.res
	w := c.width - 2
	var out []string
	if c.stacked() {
		for i := c.top; i < len(r.Rows) && len(out)+2 <= n; i++ {
			row := r.Rows[i]
			a := fit(fmt.Sprintf("%s%s A %s", selMark(i == c.sel), row.Marker(), cell(row.A, 0)), w)
			b := fit("   B "+cell(row.B, 0), w)
			out = append(out, c.style(row, i == c.sel, a), c.style(row, i == c.sel, b))
		}
		return out
	}
	aw, bw := c.columns()
	whatA, whatB := c.whatA, c.whatB
	for i := c.top; i < len(r.Rows) && len(out) < n; i++ {
		row := r.Rows[i]
		line := fmt.Sprintf("%s%s %s │ %s", selMark(i == c.sel), row.Marker(), fit(cell(row.A, whatA), aw), fit(cell(row.B, whatB), bw))
		out = append(out, c.style(row, i == c.sel, fit(line, w)))
	}
	return out
}

// cell is one side of a row: place, subject (padded to what), attempts;
// "—" for a side without the row.
func cell(it *xdiff.Item, what int) string {
	if it == nil {
		return "—"
	}
	s := fmt.Sprintf("%-5s %s", it.Where(), it.What())
	if tries := it.Tries(); tries != "" {
		if pad := what - ansi.StringWidth(it.What()); pad > 0 {
			s += strings.Repeat(" ", pad)
		}
		s += "  " + tries
	}
	return s
}

// compareStyle highlights a selected row, and a row whose sides differ.
func (c *comparePane) style(row xdiff.Row, selected bool, line string) string {
	switch {
	case selected:
		return c.theme.Selected.Render(line)
	case row.Differs:
		return c.theme.Linked.Render(line)
	}
	return line
}

func (c *comparePane) status() string {
	pos := ""
	if r := c.res; r != nil && len(r.Rows) > 0 {
		pos = fmt.Sprintf(" row %d/%d ", c.sel+1, len(r.Rows))
	}
	c.footer.Width = 0
	right := c.footer.ShortHelpView(c.ShortHelp())
	gap := c.width - ansi.StringWidth(pos) - ansi.StringWidth(right)
	if gap < 1 {
		return fit(pos+right, c.width)
	}
	return pos + strings.Repeat(" ", gap) + right
}

// wrap breaks a line of text at spaces to the width, each line indented
// by one space.
func wrap(s string, width int) []string {
	if width <= 1 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(ansi.Wordwrap(s, width-1, " "), "\n") {
		out = append(out, fit(" "+strings.TrimLeft(l, " "), width))
	}
	return out
}
