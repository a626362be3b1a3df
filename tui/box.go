package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// fit truncates s to width cells and pads it with spaces to exactly width.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > width {
		s = ansi.Truncate(s, width, "…")
	}
	if pad := width - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// joinRow sets blocks side by side, their tops aligned. The screen's
// blocks are boxes of exact sizes (box fits every line to its width), so
// their lines are joined as they are, where lipgloss.JoinHorizontal
// measures every line of every block on every frame (a third of a frame's
// work); blocks of different heights go to lipgloss, which pads them.
func joinRow(blocks ...string) string {
	rows := make([][]string, len(blocks))
	size := 0
	for i, b := range blocks {
		rows[i] = strings.Split(b, "\n")
		if len(rows[i]) != len(rows[0]) {
			return lipgloss.JoinHorizontal(lipgloss.Top, blocks...)
		}
		size += len(b)
	}
	var sb strings.Builder
	sb.Grow(size)
	for l := range rows[0] {
		if l > 0 {
			sb.WriteByte('\n')
		}
		for _, r := range rows {
			sb.WriteString(r[l])
		}
	}
	return sb.String()
}

// stack sets blocks one under another: blocks as wide as each other (the
// screen's rows, each fitted to its width), which lipgloss.JoinVertical
// would measure line by line to pad none of them.
func stack(blocks ...string) string { return strings.Join(blocks, "\n") }

// pane is a focusable pane's box: when focused, its title starts with
// focusMark so focus shows without colour.
func (t Theme) pane(title string, lines []string, width, height int, focused bool) string {
	if focused {
		title = focusMark + title
	}
	return t.box(title, lines, width, height, focused)
}

// box draws a bordered pane of exactly width x height cells with a title in
// its top border. lines beyond the inner height are dropped; short content
// is padded. Drawing borders by hand keeps the size exact at every width.
func (t Theme) box(title string, lines []string, width, height int, focused bool) string {
	if width < 4 || height < 2 {
		return ""
	}
	style, titleStyle := t.Pane, t.Title
	if focused {
		style, titleStyle = t.PaneFocused, t.TitleFocused
	}
	b := style.GetBorderStyle()
	color := lipgloss.NewStyle().Foreground(style.GetBorderTopForeground())
	inner := width - 2
	title = ansi.Truncate(title, inner-3, "…")
	top := b.TopLeft + b.Top + " " + titleStyle.Render(title) + " "
	if rest := width - 1 - ansi.StringWidth(top); rest > 0 {
		top = color.Render(b.TopLeft+b.Top) + " " + titleStyle.Render(title) + " " + color.Render(strings.Repeat(b.Top, rest)+b.TopRight)
	} else {
		top = color.Render(fit(top, width-1) + b.TopRight)
	}
	var sb strings.Builder
	sb.WriteString(top)
	left, right := color.Render(b.Left), color.Render(b.Right)
	for i := 0; i < height-2; i++ {
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		sb.WriteString("\n" + left + fit(line, inner) + right)
	}
	sb.WriteString("\n" + color.Render(b.BottomLeft+strings.Repeat(b.Bottom, inner)+b.BottomRight))
	return sb.String()
}

// scrollTo keeps sel inside a window of height rows starting at top.
func scrollTo(sel, top, height, total int) int {
	if height <= 0 {
		return 0
	}
	if sel < top {
		top = sel
	}
	if sel >= top+height {
		top = sel - height + 1
	}
	if max := total - height; top > max {
		top = max
	}
	if top < 0 {
		top = 0
	}
	return top
}

func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}
