package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine/trace"
)

// helpKeyWidth is the key column of the help screen.
const helpKeyWidth = 8

// helpPage is the full-screen help (?): every key of the keymap's FullHelp
// groups, the same bindings the footer's short help shows, and the marker
// legend, flowed into columns and paged to fit (80×24 takes two pages;
// bubbles' help.Model does not page, so the page is ours).
type helpPage struct {
	*Context
	// columns are the keys to list, a column per group (helpGroups):
	// the explorer's enabled bindings.
	columns       func() [][]key.Binding
	open          bool
	page          int
	width, height int
}

func newHelpPage(ctx *Context, columns func() [][]key.Binding) *helpPage {
	return &helpPage{Context: ctx, columns: columns}
}

// Shown says the help is open.
func (h *helpPage) Shown() bool { return h.open }

// Show opens the help at its first page.
func (h *helpPage) Show() { h.open, h.page = true, 0 }

// SetSize fits the help to the screen.
func (h *helpPage) SetSize(width, height int) { h.width, h.height = width, height }

// Update pages the help on its keys; any other key closes it.
func (h *helpPage) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok || !h.open {
		return nil
	}
	if !h.onKey(k) {
		h.open = false
	}
	return nil
}

// bindings are the help's keys, declared once: they page it; any other
// key closes it (onKey).
func (h *helpPage) bindings() []binding {
	return []binding{
		{Binding: key.NewBinding(key.WithKeys("j", "down", " ", "pgdown", "ctrl+d"), key.WithHelp("j/↓/space", "next page")),
			action: func(tea.KeyMsg) tea.Cmd { h.page = min(h.page+1, len(h.pages())-1); return nil }},
		{Binding: key.NewBinding(key.WithKeys("k", "up", "pgup", "ctrl+u"), key.WithHelp("k/↑", "previous")),
			action: func(tea.KeyMsg) tea.Cmd { h.page = max(h.page-1, 0); return nil }},
	}
}

// ShortHelp is the help's own keys: the paging keys where it has pages.
func (h *helpPage) ShortHelp() []key.Binding {
	if len(h.pages()) > 1 {
		return append(shortOf(h.bindings()), hint("other keys", "close"))
	}
	return []key.Binding{hint("any key", "close")}
}

// FullHelp is the help's keys in one group.
func (h *helpPage) FullHelp() [][]key.Binding { return [][]key.Binding{h.ShortHelp()} }

// helpBlocks is the help screen's text: a block of lines per key group,
// then the marker legend. No line is ever cut: the screen flows the blocks
// into as many columns as fit, and pages when they do not.
func (h *helpPage) helpBlocks() [][]string {
	t := h.theme
	var out [][]string
	for i, g := range h.columns() {
		block := []string{t.TitleFocused.Render(helpGroups[i])}
		for _, b := range g {
			block = append(block, t.StatusKey.Render(fmt.Sprintf("%-*s", helpKeyWidth, b.Help().Key))+b.Help().Desc)
		}
		if len(block) > 1 {
			out = append(out, block)
		}
	}
	legend := []string{t.TitleFocused.Render("Markers")}
	for _, mk := range legendEntries() {
		// Padded by cells, not runes: ⚡ takes two.
		legend = append(legend, mk[0]+strings.Repeat(" ", max(1, helpKeyWidth-lipgloss.Width(mk[0])))+mk[1])
	}
	return append(out, legend)
}

// helpPages lays the help out for the screen: pages of columns of lines. A
// block starts a new column rather than break, unless it is taller than one.
func (h *helpPage) pages() [][]string {
	blocks := h.helpBlocks()
	colW := 0
	for _, b := range blocks {
		for _, l := range b {
			colW = max(colW, lipgloss.Width(l)+2)
		}
	}
	perPage := max(1, (h.width-2)/colW)
	rows := max(1, h.height-2-4) // title and blank above, blank and hint below
	var cols [][]string
	var col []string
	for _, b := range blocks {
		if len(col) > 0 && len(col)+1+len(b) > rows && len(b) <= rows {
			cols, col = append(cols, col), nil
		}
		if len(col) > 0 && len(col) < rows {
			col = append(col, "")
		}
		// A block taller than a column goes on in the next; a column is
		// never longer than rows (at 60×16 the legend ran off the box).
		for _, l := range b {
			if len(col) >= rows {
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

// View draws the current page of the help; its hint says the paging keys.
func (h *helpPage) View() string {
	t := h.theme
	pages := h.pages()
	page := clamp(h.page, 0, len(pages)-1)
	hint := "any key: close"
	title := "Help"
	if len(pages) > 1 {
		title = fmt.Sprintf("Help · page %d of %d", page+1, len(pages))
		hint = "j/↓/space: next page · k/↑: previous · other keys: close"
	}
	lines := append([]string{t.Bold.Render("retrylab — keys"), ""}, pages[page]...)
	for len(lines) < h.height-4 {
		lines = append(lines, "")
	}
	lines = append(lines, "", t.Dim.Render(hint))
	return t.box(title, lines, h.width, h.height, true)
}

// onKey pages the help; false means the key closes it.
func (h *helpPage) onKey(k tea.KeyMsg) bool {
	if len(h.pages()) < 2 {
		return false // one page: every key closes it, as its hint says
	}
	_, paged := dispatch(h.bindings(), k)
	return paged
}

// legendEntries is the help's marker legend, each glyph once: the
// trace's marks from the one glyph table, then those the trace shows
// beside them in every workshop (⚡ on each fault, ↻ on each retry, ✂ in
// the journal exercise, ┆ before a resumed run), then the executions
// list's ● for a running execution and ◇ for an imported one whose audit
// finds a possible duplicate. ⏱ and ↻ mean more in the list (an imported
// workflow that timed out, or continued as new: listWords), and say so.
func legendEntries() [][2]string {
	ms := append(append([]trace.Mark(nil), trace.LegendMarks...), trace.MarkFault, trace.MarkRetry, trace.MarkDeleted, trace.MarkGap)
	out := make([][2]string, 0, len(ms)+1)
	for _, mk := range ms {
		w := mk.Word()
		if also, ok := listWords[mk]; ok {
			w += "; " + also
		}
		out = append(out, [2]string{mk.Glyph(), w})
	}
	return append(out, [2]string{"●", "running"}, [2]string{possibleGlyph, "possible duplicate (audit)"})
}

// listWords are what a trace mark means besides in the executions list
// (statusBadge), where an execution's status takes its glyph.
var listWords = map[trace.Mark]string{
	trace.MarkTimeout: "list: timed out",
	trace.MarkRetry:   "list: continued as new",
}
