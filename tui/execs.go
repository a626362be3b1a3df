package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/history"
)

// execsPane is the executions list: a window of the list read around the
// selection (two lines an execution), with the filter box on top while it
// is open. The Model reads the window again when a move leaves it
// (move says so) and the trace when the selection changes.
type execsPane struct {
	*Context
	// items is the window read; skip is the index of items[0] in the whole
	// list (filtered, when a filter applies), total its length.
	items       []execItem
	skip, total int
	sel, top    int
	filter      *filterBox
	now         func() time.Time
	// marked is the execution marked as side A of a comparison.
	marked        func() string
	width, height int
	// unreadableErr says why the list could not be read (a damaged
	// database), shown in the pane while it holds no executions.
	unreadableErr string
	// moved is told a move's outcome: whether the window is to be read
	// again; the Model reads it, or the trace of the new selection.
	moved func(reread bool) tea.Cmd
}

func newExecsPane(ctx *Context, filter *filterBox, now func() time.Time, marked func() string, moved func(reread bool) tea.Cmd) *execsPane {
	return &execsPane{Context: ctx, filter: filter, now: now, marked: marked, moved: moved}
}

// bindings are the list's keys, declared once: the moves, a page the
// pane's rows.
func (e *execsPane) bindings() []binding {
	return moveBindings(e.keys, e.pageRows, func(delta int) tea.Cmd { return e.moved(e.move(delta)) })
}

// pageRows is how far a page key moves.
func (e *execsPane) pageRows() int { return max(1, e.height-3) }

// SetSize is the pane's box, borders included.
func (e *execsPane) SetSize(width, height int) { e.width, e.height = width, height }

// Update takes a read of the window (execsMsg); a read that failed says
// why in the pane while it holds no executions.
func (e *execsPane) Update(msg tea.Msg) tea.Cmd {
	if msg, ok := msg.(execsMsg); ok {
		if msg.err != nil {
			e.unreadableErr = oneLine(msg.err.Error())
			return nil
		}
		e.unreadableErr = ""
		e.items, e.skip, e.total = msg.items, msg.skip, msg.total
		if e.sel >= e.total {
			e.sel = max(0, e.total-1)
		}
	}
	return nil
}

// Reset forgets the list (another source, or a clean start).
func (e *execsPane) Reset() {
	e.items, e.skip, e.total, e.sel, e.top = nil, 0, 0, 0, 0
}

// Home selects the first execution, at the top.
func (e *execsPane) Home() { e.sel, e.top = 0, 0 }

// Window is where the pane stands in the list: the first row shown, the
// selection's index and the list's length.
func (e *execsPane) Window() (top, sel, total int) { return e.top, e.sel, e.total }

// clickDelta is how far a click on the pane's row (inside its box) moves
// the selection: two lines an execution.
func (e *execsPane) clickDelta(row int) int { return e.top + row/2 - e.sel }

// visible is how many executions fit (two lines each).
func (e *execsPane) visible() int { return max(1, (e.height-2)/2) }

// pageSize is how many executions one read of the window asks for.
func (e *execsPane) pageSize() int {
	if e.Context.height < 4 {
		return 64
	}
	return e.Context.height
}

// move moves the selection by delta; true when the window must be read
// again (it scrolled, or the selection left what is read).
func (e *execsPane) move(delta int) bool {
	if e.total == 0 {
		return false
	}
	e.sel = clamp(e.sel+delta, 0, e.total-1)
	top := scrollTo(e.sel, e.top, e.visible(), e.total)
	if top != e.top || e.selected() == nil {
		e.top = top
		return true
	}
	return false
}

// moveTo selects the execution at index (a run followed), scrolling to it.
func (e *execsPane) moveTo(index int) {
	e.sel = index
	e.top = scrollTo(index, e.top, e.visible(), max(e.total, index+1))
}

// selected is the execution under the selection, if read.
func (e *execsPane) selected() *execItem {
	i := e.sel - e.skip
	if i < 0 || i >= len(e.items) {
		return nil
	}
	return &e.items[i]
}

// View is the pane's box.
func (e *execsPane) View() string {
	title, lines := e.lines(e.height-2, e.width-2)
	return e.theme.pane(title, lines, e.width, e.height, e.focus == paneExecs)
}

func (e *execsPane) lines(height, width int) (string, []string) {
	title := fmt.Sprintf("Executions %d", e.total)
	if e.filter.text != "" {
		title = fmt.Sprintf("Executions /%s %d", e.filter.text, e.total)
	}
	var lines []string
	if e.filter.open {
		lines = append(lines, e.filter.View())
	}
	if e.total == 0 && e.unreadableErr != "" {
		// Not "none yet": the list could not be read. The error in full,
		// since the status line cuts it short.
		title = "Executions ?"
		lines = append(lines, e.theme.Dim.Render(" they cannot be read:"))
		for _, l := range wrap(e.unreadableErr, width-1) {
			lines = append(lines, e.theme.Dim.Render(" "+l))
		}
		return title, lines
	}
	if e.total == 0 {
		switch {
		case e.filter.text != "": // there are executions; the filter hides them
			return title, append(lines, e.theme.Dim.Render(" none match the filter (/ to change it)"))
		case e.can.run == nil:
			return title, append(lines, e.theme.Dim.Render(" none yet"))
		}
		return title, append(lines, e.theme.Dim.Render(" none yet: press n"))
	}
	marked := ""
	if e.marked != nil {
		marked = e.marked()
	}
	for i := 0; len(lines)+1 < height+1 && e.top+i < e.skip+len(e.items); i++ {
		idx := e.top + i
		j := idx - e.skip
		if j < 0 {
			continue
		}
		it := e.items[j]
		badge, mk := statusBadge(it)
		sel := idx == e.sel
		plain := fmt.Sprintf("%s%s %s  %s", selMark(sel), badge, it.x.ID, it.x.Scenario)
		l1 := fmt.Sprintf("%s%s %s  %s", selMark(sel), markStyle(e.theme, mk).Render(badge), it.x.ID, it.x.Scenario)
		l2 := e.theme.Dim.Render(whenLine(markedTag(it.x.ID, marked), it.x.PolicyWords(), listTime(it.x.Started, e.now()), e.duration(it.x), width))
		if sel {
			l1 = e.theme.Selected.Render(fit(plain, width))
		}
		lines = append(lines, l1, l2)
	}
	return title, lines
}

// whenLine is an execution's second line in the list, at most width wide:
// the comparison's mark, the policy, when it started and how long it took,
// cut at the end where it does not fit. Where that cut would reach the
// start (a date makes it longer), the start comes before the policy, so it
// shows whole and the policy is what is cut.
func whenLine(tag, policy, when, took string, width int) string {
	line := tag + policy + "  " + when
	switch w := ansi.StringWidth(line); {
	case w < width:
		return ansi.Truncate(line+"  "+took, width, "…")
	case w == width:
		return line
	}
	return ansi.Truncate(tag+when+"  "+policy, width, "…")
}

// listTime is when an execution started, as the list says it: the time of
// day when it started today by the explorer's clock (today), else its date
// and minute, "2025-03-14 09:02" (imported traces span years).
func listTime(started, today time.Time) string {
	if today.IsZero() || sameDay(started, today) {
		return started.Format("15:04:05")
	}
	return started.Format("2006-01-02 15:04")
}

// duration is how long an execution took, as its list row says it: to
// its last activity; to now while retrylab runs it; for an imported
// execution still running at its source, the span its history recorded
// (start to last event), "recorded", never now minus a start that may be
// months old.
func (e *execsPane) duration(x history.Execution) string {
	switch {
	case x.Status == history.StatusRunning && x.Imported != "":
		return roundDur(x.Updated.Sub(x.Started)) + " recorded"
	case x.Status == history.StatusRunning:
		return roundDur(e.now().Sub(x.Started))
	}
	return roundDur(x.Updated.Sub(x.Started))
}

// ShortHelp is the pane's keys in the footer.
func (e *execsPane) ShortHelp() []key.Binding {
	k := e.keys
	return words(k.Run, k.Filter, k.Resume, k.MarkExec, k.Compare, k.Help, k.Quit)
}

// FullHelp is the pane's keys: the moves, the filter, marking.
func (e *execsPane) FullHelp() [][]key.Binding {
	k := e.keys
	return [][]key.Binding{append(keysOf(e.bindings()), k.Filter, k.Resume, k.MarkExec, k.Compare)}
}
