package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine/trace"
)

// helpKeyWidth is the key column of the help screen.
const helpKeyWidth = 8

// helpBlocks is the help screen's text: a block of lines per key group,
// then the marker legend. No line is ever cut: the screen flows the blocks
// into as many columns as fit, and pages when they do not.
func (m *Model) helpBlocks() [][]string {
	t := m.theme
	var out [][]string
	for i, g := range m.keys.FullHelp() {
		block := []string{t.TitleFocused.Render(helpGroups[i])}
		for _, b := range g {
			block = append(block, t.StatusKey.Render(fmt.Sprintf("%-*s", helpKeyWidth, b.Help().Key))+b.Help().Desc)
		}
		out = append(out, block)
	}
	legend := []string{t.TitleFocused.Render("Markers")}
	for _, mk := range legendEntries() {
		legend = append(legend, fmt.Sprintf("%-*s", helpKeyWidth, mk[0])+mk[1])
	}
	return append(out, legend)
}

// helpPages lays the help out for the screen: pages of columns of lines. A
// block starts a new column rather than break, unless it is taller than one.
func (m *Model) helpPages() [][]string {
	blocks := m.helpBlocks()
	colW := 0
	for _, b := range blocks {
		for _, l := range b {
			colW = max(colW, lipgloss.Width(l)+2)
		}
	}
	perPage := max(1, (m.width-2)/colW)
	rows := max(1, m.height-2-4) // title and blank above, blank and hint below
	var cols [][]string
	var col []string
	for _, b := range blocks {
		if len(col) > 0 && len(col)+1+len(b) > rows && len(b) <= rows {
			cols, col = append(cols, col), nil
		}
		if len(col) > 0 {
			col = append(col, "")
		}
		for _, l := range b {
			if len(col) == rows {
				cols, col = append(cols, col), nil
			}
			col = append(col, l)
		}
	}
	cols = append(cols, col)
	var pages [][]string
	for start := 0; start < len(cols); start += perPage {
		var rendered []string
		for _, c := range cols[start:min(len(cols), start+perPage)] {
			rendered = append(rendered, lipgloss.NewStyle().Width(colW).Render(strings.Join(c, "\n")))
		}
		pages = append(pages, strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, rendered...), "\n"))
	}
	return pages
}

// helpView draws the current page of the help.
func (m *Model) helpView() string {
	t := m.theme
	pages := m.helpPages()
	page := clamp(m.helpPage, 0, len(pages)-1)
	hint := "any key: close"
	title := "Help"
	if len(pages) > 1 {
		title = fmt.Sprintf("Help · page %d of %d", page+1, len(pages))
		hint = "j/↓/space: next page · k/↑: previous · other keys: close"
	}
	lines := append([]string{t.Bold.Render("retrylab — keys"), ""}, pages[page]...)
	for len(lines) < m.height-4 {
		lines = append(lines, "")
	}
	lines = append(lines, "", t.Dim.Render(hint))
	return t.box(title, lines, m.width, m.height, true)
}

// onHelpKey pages the help; false means the key closes it.
func (m *Model) onHelpKey(s string) bool {
	switch s {
	case "j", "down", " ", "pgdown", "ctrl+d":
		m.helpPage = min(m.helpPage+1, len(m.helpPages())-1)
		return true
	case "k", "up", "pgup", "ctrl+u":
		m.helpPage = max(m.helpPage-1, 0)
		return true
	}
	return false
}

// legendEntries is the help's marker legend: the trace's marks from the one
// glyph table, then the executions list's ● for a running execution.
func legendEntries() [][2]string {
	out := make([][2]string, 0, len(trace.LegendMarks)+1)
	for _, mk := range trace.LegendMarks {
		out = append(out, [2]string{mk.Glyph(), mk.Word()})
	}
	return append(out, [2]string{"●", "running"})
}
