package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	xdiff "github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/trace"
)

// This file is the explorer's comparison of two executions: m marks the
// selected execution, = opens the marked one (A) beside the selected one
// (B), lined up by engine/diff. Both sides scroll together, as one table;
// rows that differ are highlighted and carry their marker (≠ < >) in text,
// so they show without colour too; what each execution did to the world
// stays at the bottom. Below wideWidth the sides are stacked: each row is
// two lines, A over B, so the view fits 80 columns.

// compareState is the comparison's part of the Model.
type compareState struct {
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
	whatA, whatB int
}

// compareMsg is the comparison, computed off the UI goroutine.
type compareMsg struct {
	a, b string
	res  *xdiff.Result
	err  error
}

// compareKey handles m, = and, while the comparison shows, every key; ok
// is false for a key it leaves to the explorer.
func (m *Model) compareKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	if !m.cmp.open {
		if m.showHelp {
			return nil, false // the help is closed by any key first
		}
		switch {
		case key.Matches(msg, k.MarkExec):
			return m.markExec(), true
		case key.Matches(msg, k.Compare):
			return m.openCompare(), true
		}
		return nil, false
	}
	switch {
	case msg.String() == "ctrl+c":
		return m.quit(), true
	case key.Matches(msg, k.Up):
		m.moveCompare(-1)
	case key.Matches(msg, k.Down):
		m.moveCompare(1)
	case key.Matches(msg, k.PageUp):
		m.moveCompare(-m.compareRowsShown())
	case key.Matches(msg, k.PageDown):
		m.moveCompare(m.compareRowsShown())
	case key.Matches(msg, k.Top):
		m.moveCompare(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.moveCompare(1 << 30)
	case key.Matches(msg, k.Compare), key.Matches(msg, k.Disarm), key.Matches(msg, k.Quit), msg.String() == "enter":
		m.cmp.open, m.cmp.res = false, nil
	}
	return nil, true
}

// markExec marks the selected execution as side A.
func (m *Model) markExec() tea.Cmd {
	sel := m.selectedExec()
	if sel == nil {
		m.setFlash("select an execution to mark", true)
		return nil
	}
	m.cmp.marked = sel.x.ID
	m.setFlash(fmt.Sprintf("marked %s (%s): select another execution and press = to compare", sel.x.ID, sel.x.Scenario), false)
	return nil
}

// markedTag starts the second line of an execution in the list: " A " for
// the marked one (side A of the next comparison), else blanks.
func (m *Model) markedTag(id string) string {
	if id != "" && id == m.cmp.marked {
		return " A "
	}
	return "   "
}

// openCompare starts comparing the marked execution with the selected one.
func (m *Model) openCompare() tea.Cmd {
	sel := m.selectedExec()
	switch {
	case m.cmp.marked == "":
		m.setFlash("press m on an execution first, then = on another to compare them", true)
		return nil
	case sel == nil:
		m.setFlash("select an execution to compare with "+m.cmp.marked, true)
		return nil
	}
	a, b, src := m.cmp.marked, sel.x.ID, m.src
	m.cmp = compareState{marked: a, open: true, loading: true, a: a, b: b}
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

// foldExecution reads and folds one history, up to what the trace pane
// holds; an imported execution has no history, but its spans or Temporal
// history translated (as the trace pane reads them).
func foldExecution(src Source, id string) (*trace.Trace, error) {
	x, err := src.Execution(id)
	if err != nil {
		return nil, err
	}
	if x.Imported != "" {
		events, err := src.ImportedEvents(id)
		if err != nil {
			return nil, err
		}
		return trace.Fold(id, events), nil
	}
	events, err := src.Events(id, 0, maxTraceEvents)
	if err != nil {
		return nil, err
	}
	return trace.FoldHistory(id, events), nil
}

// onCompare takes the comparison in, if it is still the one asked for.
func (m *Model) onCompare(msg compareMsg) tea.Cmd {
	if !m.cmp.open || msg.a != m.cmp.a || msg.b != m.cmp.b {
		return nil
	}
	m.cmp.loading = false
	if msg.err != nil {
		m.cmp.open = false
		m.setFlash("compare: "+oneLine(msg.err.Error()), true)
		return nil
	}
	m.cmp.res = msg.res
	m.cmp.sel, m.cmp.top = 0, 0
	for _, row := range msg.res.Rows {
		if row.A != nil {
			m.cmp.whatA = max(m.cmp.whatA, ansi.StringWidth(row.A.What()))
		}
		if row.B != nil {
			m.cmp.whatB = max(m.cmp.whatB, ansi.StringWidth(row.B.What()))
		}
	}
	if msg.res.Part > 0 {
		m.moveCompare(msg.res.Part) // open where they part
	}
	return nil
}

func (m *Model) moveCompare(d int) {
	if m.cmp.res == nil {
		return
	}
	n := len(m.cmp.res.Rows)
	m.cmp.sel = clamp(m.cmp.sel+d, 0, max(0, n-1))
	shown := m.compareRowsShown()
	if m.cmp.sel < m.cmp.top {
		m.cmp.top = m.cmp.sel
	}
	if m.cmp.sel >= m.cmp.top+shown {
		m.cmp.top = m.cmp.sel - shown + 1
	}
	m.cmp.top = clamp(m.cmp.top, 0, max(0, n-shown))
}

// compareStacked reports whether the sides are stacked (narrow terminals).
func (m *Model) compareStacked() bool { return !m.wide() }

// compareLayout splits the box's inner height: the heads, the rows, the
// foot (where they part, the effects, the legend).
func (m *Model) compareLayout() (head, foot []string, rowLines int) {
	w := m.width - 2
	r := m.cmp.res
	if r == nil {
		return nil, nil, 0
	}
	head = []string{fit(" A  "+r.A.Head(), w), fit(" B  "+r.B.Head(), w)}
	if !m.compareStacked() {
		aw, bw := m.compareColumns()
		head = append(head, fit("   "+fit("A "+r.A.Label, aw)+" │ "+fit("B "+r.B.Label, bw), w))
	}
	foot = append(foot, strings.Repeat("─", w))
	if m.cmp.sel < len(r.Rows) {
		row := r.Rows[m.cmp.sel]
		why := row.Why
		if !row.Differs {
			why = "the same on both sides"
		}
		foot = append(foot, fit(fmt.Sprintf(" row %d %s %s", m.cmp.sel+1, row.Marker(), why), w))
	}
	foot = append(foot, wrap(r.Parting, w)...)
	for _, l := range r.EffectLines {
		foot = append(foot, wrap("effects  "+l, w)...)
	}
	foot = append(foot, wrap(r.Legend(), w)...)
	rowLines = m.height - 3 - len(head) - len(foot)
	if rowLines < 2 {
		// A short terminal keeps the effects and drops the legend first.
		keep := max(2, len(foot)+rowLines-2)
		foot = foot[:min(len(foot), keep)]
		rowLines = max(2, m.height-3-len(head)-len(foot))
	}
	return head, foot, rowLines
}

// compareRowsShown is how many rows of the comparison fit.
func (m *Model) compareRowsShown() int {
	_, _, lines := m.compareLayout()
	if m.compareStacked() {
		return max(1, lines/2)
	}
	return max(1, lines)
}

// compareColumns are the widths of side A's and side B's columns.
func (m *Model) compareColumns() (int, int) {
	w := m.width - 2 - 3 - 3 // the markers, the separator
	return w / 2, w - w/2
}

// compareView draws the comparison over the whole screen.
func (m *Model) compareView() string {
	title := fmt.Sprintf("Compare  A %s  ⇄  B %s", m.cmp.a, m.cmp.b)
	var lines []string
	switch {
	case m.cmp.loading || m.cmp.res == nil:
		lines = []string{m.theme.Dim.Render(" reading and lining up both histories…")}
	default:
		head, foot, rowLines := m.compareLayout()
		lines = append(lines, head...)
		body := m.compareRows(rowLines)
		for len(body) < rowLines {
			body = append(body, "")
		}
		lines = append(lines, body...)
		lines = append(lines, foot...)
	}
	box := m.theme.box(title, lines, m.width, m.height-1, true)
	return box + "\n" + m.compareStatus()
}

// compareRows renders the rows from top, as many as fit in n lines.
func (m *Model) compareRows(n int) []string {
	r := m.cmp.res
	w := m.width - 2
	var out []string
	if m.compareStacked() {
		for i := m.cmp.top; i < len(r.Rows) && len(out)+2 <= n; i++ {
			row := r.Rows[i]
			a := fit(fmt.Sprintf("%s%s A %s", selMark(i == m.cmp.sel), row.Marker(), cell(row.A, 0)), w)
			b := fit("   B "+cell(row.B, 0), w)
			out = append(out, m.compareStyle(row, i == m.cmp.sel, a), m.compareStyle(row, i == m.cmp.sel, b))
		}
		return out
	}
	aw, bw := m.compareColumns()
	whatA, whatB := m.cmp.whatA, m.cmp.whatB
	for i := m.cmp.top; i < len(r.Rows) && len(out) < n; i++ {
		row := r.Rows[i]
		line := fmt.Sprintf("%s%s %s │ %s", selMark(i == m.cmp.sel), row.Marker(), fit(cell(row.A, whatA), aw), fit(cell(row.B, whatB), bw))
		out = append(out, m.compareStyle(row, i == m.cmp.sel, fit(line, w)))
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
func (m *Model) compareStyle(row xdiff.Row, selected bool, line string) string {
	switch {
	case selected:
		return m.theme.Selected.Render(line)
	case row.Differs:
		return m.theme.Linked.Render(line)
	}
	return line
}

func (m *Model) compareStatus() string {
	t := m.theme
	pos := ""
	if r := m.cmp.res; r != nil && len(r.Rows) > 0 {
		pos = fmt.Sprintf(" row %d/%d ", m.cmp.sel+1, len(r.Rows))
	}
	keys := []string{t.StatusKey.Render("↑/↓") + " " + t.Status.Render("scroll both"),
		t.StatusKey.Render("pgup/pgdn") + " " + t.Status.Render("page"),
		t.StatusKey.Render("esc/=") + " " + t.Status.Render("close")}
	right := strings.Join(keys, "  ")
	gap := m.width - ansi.StringWidth(pos) - ansi.StringWidth(right)
	if gap < 1 {
		return fit(pos+right, m.width)
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
