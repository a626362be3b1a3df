package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

const (
	detailHeight = 8
	lessonHeight = 12
)

// rect is a pane's place on screen.
type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

func (m *Model) wide() bool { return m.width >= wideWidth }

// threeColumnWidth is where the outbox gets a column of its own. Below
// it (from wideWidth) the outbox sits under the trace, so the trace keeps
// at least 70 columns: three columns gave it 52 of 120, and cut its
// errors and arguments.
const threeColumnWidth = 140

// Where three columns cannot give every pane all it needs, the trace
// keeps traceRoom columns: the outbox gives what it has above its least
// width, then the executions down to execsRoom.
const (
	// traceRoom is the widest row of the article's traces: the naive
	// run's first attempt and its fault, "#1 ◆ timeout 1s · ambiguous:
	// provider delivered msg_3def2b  ⚡timeout-after-effect" (⚡ takes two
	// cells), indented under its call, with the borders.
	traceRoom = 93
	// outboxLeast is the outbox column's least width.
	outboxLeast = 38
	// execsRoom still shows an execution's first line whole, its badge,
	// id and scenario ("›✓ exec_3C5R  invoice-crm"), and 23 characters
	// of an imported one's id; the second line, the policy and times, is
	// cut first.
	execsRoom = 29
)

// columnWidths shares a wide terminal's width in proportion: about a fifth
// for the executions, a quarter for the outbox, the rest for the trace,
// within bounds that keep each readable; then the trace takes from the
// others what it lacks of traceRoom, down to their rooms (at 160 columns
// the fault of the naive run's first attempt was cut). Below
// threeColumnWidth the outbox has no column (0): the trace's is shared
// with it.
func columnWidths(width int) (execs, trace, outbox int) {
	execs = clamp(width*21/100, 30, 48)
	if width < threeColumnWidth {
		return execs, width - execs, 0
	}
	outbox = clamp(width*26/100, outboxLeast, 64)
	lack := traceRoom - (width - execs - outbox)
	give := func(col *int, room int) {
		if d := min(lack, *col-room); d > 0 {
			*col -= d
			lack -= d
		}
	}
	give(&outbox, outboxLeast)
	give(&execs, execsRoom)
	return execs, width - execs - outbox, outbox
}

// splitHeights shares a narrow terminal's height between the trace and the
// outbox under it, so the trace and its effects show together: the outbox
// gets two fifths, at least 6 rows.
func splitHeights(height int) (trace, outbox int) {
	outbox = max(6, height*2/5)
	return height - outbox, outbox
}

// layout places every pane for the current size. In narrow terminals the
// panes are tabs, but the trace and the outbox share one: the outbox under
// the trace.
func (m *Model) layout() map[pane]rect {
	if m.wide() {
		detailHeight := detailHeight
		if m.lesson.On() {
			detailHeight = lessonHeight
			if m.lesson.Presenter() {
				detailHeight += 4
			}
		}
		topH := m.height - m.footerHeight() - detailHeight
		execW, traceW, outW := columnWidths(m.width)
		if outW == 0 {
			traceH, outH := splitHeights(topH)
			return map[pane]rect{
				paneExecs:  {0, 0, execW, topH},
				paneTrace:  {execW, 0, traceW, traceH},
				paneOutbox: {execW, traceH, traceW, outH},
				paneDetail: {0, topH, m.width, detailHeight},
			}
		}
		return map[pane]rect{
			paneExecs:  {0, 0, execW, topH},
			paneTrace:  {execW, 0, traceW, topH},
			paneOutbox: {execW + traceW, 0, outW, topH},
			paneDetail: {0, topH, m.width, detailHeight},
		}
	}
	if m.focus == paneTrace || m.focus == paneOutbox {
		traceH, outH := splitHeights(m.height - 1 - m.footerHeight() - m.lesson.stripHeight())
		return map[pane]rect{
			paneTrace:  {0, 1, m.width, traceH},
			paneOutbox: {0, 1 + traceH, m.width, outH},
		}
	}
	return map[pane]rect{m.focus: {0, 1, m.width, m.height - 1 - m.footerHeight()}}
}

// sizePanes tells the panes that are components their boxes for the
// current layout (a pane not shown gets the screen under the tabs, as
// paneHeight says).
func (m *Model) sizePanes() {
	lay := m.layout()
	for p := pane(0); p < paneCount; p++ {
		r, ok := lay[p]
		if !ok {
			r = rect{w: m.width, h: m.height - 2}
		}
		m.pane(p).SetSize(r.w, r.h)
		if p == paneDetail {
			m.detail.SetSize(r.w, r.h) // its keys' page, while the lesson takes its place
		}
	}
}

// pane is the component that draws p: the lesson takes the Detail pane's
// place while lesson mode is on.
func (m *Model) pane(p pane) component {
	switch p {
	case paneExecs:
		return m.execs
	case paneOutbox:
		return m.outbox
	case paneDetail:
		if m.lesson.On() {
			return m.lesson
		}
		return m.detail
	}
	return m.trace
}

func (m *Model) paneHeight(p pane) int {
	if r, ok := m.layout()[p]; ok {
		return r.h
	}
	return m.height - 2
}

// View draws the screen.
func (m *Model) View() string {
	if m.width == 0 || m.height == 0 {
		return "loading…"
	}
	if m.width < MinWidth || m.height < MinHeight {
		return m.tooSmall()
	}
	if m.help.Shown() {
		return m.help.View()
	}
	if m.msgs.Shown() {
		return m.msgs.View()
	}
	if m.picker.Shown() {
		return m.picker.View()
	}
	if m.cmp.Shown() {
		return m.cmp.View()
	}
	if m.slide.Shown() {
		return m.slide.View()
	}
	if m.room.Shown() {
		return m.room.View()
	}
	if m.timeline.Shown() {
		return m.timeline.View()
	}
	lay := m.layout()
	if m.wide() {
		var top string
		if lay[paneOutbox].x == lay[paneTrace].x { // the outbox under the trace
			top = joinRow(m.paneView(paneExecs, lay), stack(m.paneView(paneTrace, lay), m.paneView(paneOutbox, lay)))
		} else {
			top = joinRow(m.paneView(paneExecs, lay), m.paneView(paneTrace, lay), m.paneView(paneOutbox, lay))
		}
		return stack(top, m.paneView(paneDetail, lay), m.statusBar())
	}
	if len(lay) == 2 { // the trace with the outbox under it, and a lesson's next key
		parts := []string{m.tabBar(), m.paneView(paneTrace, lay), m.paneView(paneOutbox, lay)}
		if h := m.lesson.stripHeight(); h > 0 {
			parts = append(parts, m.lesson.strip(h))
		}
		return stack(append(parts, m.statusBar())...)
	}
	return stack(m.tabBar(), m.paneView(m.focus, lay), m.statusBar())
}

func (m *Model) tooSmall() string {
	msg := fmt.Sprintf("retrylab needs a terminal of at least %d×%d; this one is %d×%d. Enlarge it, or use the headless commands (retrylab --help).", MinWidth, MinHeight, m.width, m.height)
	// Broken at spaces only: lipgloss alone also breaks at hyphens, and cut
	// "--help" into "-" and "-help" at 59 columns. A word wider than the
	// terminal is still broken by lipgloss.
	wrapped := lipgloss.NewStyle().Width(m.width).Render(wrapText(msg, m.width))
	lines := strings.Split(wrapped, "\n")
	if len(lines) > m.height {
		lines = lines[:m.height]
	}
	return strings.Join(lines, "\n")
}

func (m *Model) tabBar() string {
	var parts []string
	for p := pane(0); p < paneCount; p++ {
		name := paneNames[p]
		switch {
		case p == paneDetail && m.lesson.On():
			name = "Lesson" // the lesson takes the Detail tab
		case p == paneOutbox:
			name = m.outbox.Name() // Outbox, CRM or Effects
		}
		if p == paneOutbox && m.showsImported() {
			name = "Effects" // inferred: no provider was watched
		}
		label := fmt.Sprintf(" %s ", name)
		if p == m.focus {
			parts = append(parts, m.theme.TitleFocused.Render("["+label+"]"))
		} else {
			parts = append(parts, m.theme.Title.Render(" "+label+" "))
		}
	}
	return fit(strings.Join(parts, "")+m.theme.Dim.Render("  tab: next pane"), m.width)
}

func (m *Model) paneView(p pane, lay map[pane]rect) string {
	r := lay[p]
	c := m.pane(p)
	c.SetSize(r.w, r.h)
	return c.View()
}

// focusMark starts the focused pane's title, so focus shows without colour
// (NO_COLOR, monochrome projectors): › marks the selected row in every
// pane, and only this says which pane the keys move.
const focusMark = "▶ "

func (m *Model) markStyle(mk marker) lipgloss.Style { return markStyle(m.theme, mk) }

// markStyle is the style of a marker's glyph in theme t.
func markStyle(t Theme, mk marker) lipgloss.Style {
	switch mk {
	case markOK, markRecorded:
		return t.OK
	case markTimeout, markRetry, markRunning:
		return t.Warn
	case markDedup:
		return t.Dedup
	case markReplay:
		return t.Replay
	case markKilled, markFailed:
		return t.Killed
	case markAmbiguous, markEscalated, markFault:
		return t.Bad
	}
	return lipgloss.NewStyle()
}

// linkedAttempt is the attempt that caused the selected outbox message.
func (m *Model) linkedAttempt() *link {
	if m.focus != paneOutbox {
		return nil
	}
	if l := m.selectedMessage(); l != nil {
		return &link{l.msg.Attribution.Step, l.msg.Attribution.Attempt}
	}
	return m.outbox.selectedInferred()
}

// plain is a row's text with its glyph, without colour.
func (n *node) plain() string {
	if g, ok := markerGlyph[n.mark]; ok && n.kind != kindAttempt && n.kind != kindTurn && n.kind != kindStep && n.kind != kindRun && n.kind != kindGap {
		return g + " " + n.text
	}
	return n.text
}

// selectedAttemptLink is the selected trace attempt, whose deliveries the
// outbox highlights.
func (m *Model) selectedAttemptLink() *link {
	if m.focus == paneOutbox {
		return nil
	}
	if n := m.selectedRow(); n != nil {
		if k, ok := n.link(); ok {
			return &k
		}
	}
	return nil
}

func window(all []string, top, height, sel int, focused bool, t Theme) []string {
	var out []string
	for i := top; i < len(all) && len(out) < height; i++ {
		if focused && i == sel {
			out = append(out, t.Selected.Render(selMark(true)+all[i]))
			continue
		}
		out = append(out, " "+all[i])
	}
	return out
}

// selMark marks the selected row in text, so the selection shows without
// colour (NO_COLOR, monochrome projectors); the colour highlight is extra.
// Rows linked to the selection in another pane are marked •.
func selMark(selected bool) string {
	if selected {
		return "›"
	}
	return " "
}

// compact is a JSON value on one line as the source recorded it: its keys
// in their order, "<" not escaped; text that is not JSON as it is.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "—"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func lipglossWidth(s string) int { return lipgloss.Width(s) }

func short(v *bool) string {
	switch {
	case v == nil:
		return "scenario"
	case *v:
		return "on"
	}
	return "off"
}

// onMouse selects with a click and scrolls with the wheel, in the pane
// under the pointer.
func (m *Model) onMouse(msg tea.MouseMsg) tea.Cmd {
	if m.help.Shown() || m.picker.Shown() || m.msgs.Shown() {
		return nil
	}
	for p, r := range m.layout() {
		if !r.contains(msg.X, msg.Y) {
			continue
		}
		switch {
		case msg.Button == tea.MouseButtonWheelUp:
			m.focus = p
			return m.move(-3)
		case msg.Button == tea.MouseButtonWheelDown:
			m.focus = p
			return m.move(3)
		case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
			m.focus = p
			row := msg.Y - r.y - 1
			if row < 0 {
				return nil
			}
			switch p {
			case paneExecs:
				return m.move(m.execs.clickDelta(row))
			case paneTrace:
				return m.move(m.trace.clickDelta(row))
			case paneOutbox:
				return m.move(m.outbox.clickDelta(row))
			}
		}
		return nil
	}
	return nil
}
