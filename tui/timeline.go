package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/timeline"
)

// timelineKey opens the Timeline view of the selected execution (w).
var timelineKey = key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "timeline of the execution"))

// timelinePane is the Timeline view (w) over the whole screen: the
// selected execution laid out on one time axis (engine/timeline), a lane
// per tool call and per provider, zoomed and scrolled in time, with a
// cursor on one attempt that enter selects in the trace. The layout is
// built once per state of the trace and the drawn rows are cached, so a
// frame draws only the lanes on screen.
type timelinePane struct {
	*Context
	open bool
	// tv is the trace shown when it opened: a live one grows under it.
	tv *traceView
	// tl is tv laid out as of builtAt events.
	tl      *timeline.Timeline
	builtAt int
	// moments are tl's moments in words, under the lanes.
	moments []timeline.Moment
	// win is the time shown; fitted keeps it the whole while not zoomed.
	win    timeline.Window
	fitted bool
	// sel is the cursor, an index in tl.Attempts; top the first lane shown.
	sel, top int
	// rows are the lanes drawn for drawnFor.
	rows     []string
	drawnFor timelineFrame
	// pick selects an attempt in the trace pane (enter).
	pick   func(call string, n int)
	footer help.Model
	// reading says tv is the trace pane's loaded pages of a longer
	// history, whose whole the Model is reading (wholeTimelineMsg); cut
	// that the history read was longer than timelineMaxEvents.
	reading, cut bool
}

// timelineMaxEvents bounds the history the timeline reads of one
// execution: 50 000 attempts or so, four times what the trace holds
// (maxTraceEvents). A longer one is laid out to there, and the title says
// so.
const timelineMaxEvents = 4 * maxTraceEvents

// wholeTimelineMsg is the whole history of an execution whose trace pane
// holds only its first pages, folded and laid out off the UI goroutine.
type wholeTimelineMsg struct {
	id  string
	tv  *traceView
	tl  *timeline.Timeline
	cut bool // the history goes on past timelineMaxEvents
	err error
}

// timelineFrame is what the drawn rows depend on.
type timelineFrame struct {
	tl                     *timeline.Timeline
	win                    timeline.Window
	width, lanes, sel, top int
	built                  int
}

func newTimelinePane(ctx *Context, pick func(call string, n int)) *timelinePane {
	return &timelinePane{Context: ctx, pick: pick, footer: newFooterHelp(ctx.theme)}
}

// Shown says the timeline is open.
func (p *timelinePane) Shown() bool { return p.open }

// Open shows tv's timeline, whole, the cursor on its first attempt;
// partial says tv is only the first pages of the history, whose whole is
// being read (Whole takes it).
func (p *timelinePane) Open(tv *traceView, partial bool) {
	p.open, p.tv, p.tl, p.builtAt, p.sel, p.top, p.fitted = true, tv, nil, -1, 0, 0, true
	p.reading, p.cut = partial, false
	p.layout()
}

// Whole takes the whole history the Model read for the timeline open: it
// replaces the loaded pages, the cursor kept on its attempt. A read for
// another execution, or after the timeline closed, is dropped.
func (p *timelinePane) Whole(msg wholeTimelineMsg) {
	if !p.open || !p.reading || p.tv == nil || p.tv.exec.ID != msg.id {
		return
	}
	p.reading = false
	if msg.err != nil || msg.tv == nil {
		return // the pages loaded stay, and the title no longer says more comes
	}
	p.tv, p.tl, p.builtAt, p.cut = msg.tv, msg.tl, msg.tv.t.Events, msg.cut
	p.moments = p.tl.Moments()
	if p.fitted {
		p.win = p.tl.Fit()
	}
	p.sel = max(0, min(p.sel, len(p.tl.Attempts)-1))
	p.drawnFor = timelineFrame{}
}

// buildTimeline lays out tv's trace, with the imported sources' options.
func buildTimeline(tv *traceView) *timeline.Timeline {
	opt := timeline.Options{}
	if tv.exec.Imported != "" {
		opt = timeline.ForImported(tv.t)
	}
	return timeline.Build(tv.t, opt)
}

// rebuildEvery is the share of a long trace's events that must be new
// before a live trace is laid out again: a build costs time in the length
// of the trace, so a run that goes on under an open timeline pays for it
// once every 1/rebuildEvery of its events (2%), not on each frame.
const rebuildEvery = 50

// layout builds the timeline again when the trace moved on since (a long
// live one only once it grew by a fiftieth).
func (p *timelinePane) layout() *timeline.Timeline {
	if p.tl != nil && (p.builtAt == p.tv.t.Events || (p.tv.t.Events-p.builtAt)*rebuildEvery < p.builtAt) {
		return p.tl
	}
	p.tl, p.builtAt = buildTimeline(p.tv), p.tv.t.Events
	p.moments = p.tl.Moments()
	if p.fitted {
		p.win = p.tl.Fit()
	}
	p.sel = max(0, min(p.sel, len(p.tl.Attempts)-1))
	return p.tl
}

// bindings are the timeline's keys, declared once: the footer and the
// dispatch both come from them.
func (p *timelinePane) bindings() []binding {
	zoom := func(f float64) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd {
			tl := p.layout()
			at := p.win.From.Add(p.win.Span / 2)
			if len(tl.Attempts) > 0 {
				at = tl.Item(tl.Attempts[p.sel]).From
			}
			p.win, p.fitted = tl.Zoom(p.win, f, at), false
			p.fitted = p.win == tl.Fit()
			return nil
		}
	}
	scroll := func(f float64) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd {
			p.win = p.layout().Scroll(p.win, f)
			return nil
		}
	}
	step := func(d int) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd {
			tl := p.layout()
			if len(tl.Attempts) == 0 {
				return nil
			}
			p.sel = max(0, min(p.sel+d, len(tl.Attempts)-1))
			p.win = tl.Reveal(p.win, tl.Attempts[p.sel])
			p.fitted = p.win == tl.Fit()
			return nil
		}
	}
	return []binding{
		{Binding: key.NewBinding(key.WithKeys("up", "k", "down", "j"), key.WithHelp("↑/↓", "step")), action: func(msg tea.KeyMsg) tea.Cmd {
			if s := msg.String(); s == "up" || s == "k" {
				return step(-1)(msg)
			}
			return step(1)(msg)
		}},
		{Binding: key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/→", "scroll")), action: scroll(-0.125)},
		{Binding: key.NewBinding(key.WithKeys("right", "l")), action: scroll(0.125)},
		{Binding: key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/-", "zoom")), action: zoom(0.5)},
		{Binding: key.NewBinding(key.WithKeys("-", "_")), action: zoom(2)},
		{Binding: key.NewBinding(key.WithKeys("0"), key.WithHelp("0", "all")), action: func(tea.KeyMsg) tea.Cmd {
			p.win, p.fitted = p.layout().Fit(), true
			return nil
		}},
		{Binding: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "to trace")), action: func(tea.KeyMsg) tea.Cmd {
			if tl := p.layout(); len(tl.Attempts) > 0 {
				it := tl.Item(tl.Attempts[p.sel])
				p.pick(it.Call, it.N)
			}
			p.open = false
			return nil
		}},
		{Binding: key.NewBinding(key.WithKeys("esc", "w", "q"), key.WithHelp("esc/w", "close")), action: func(tea.KeyMsg) tea.Cmd {
			p.open = false
			return nil
		}},
	}
}

// Update takes the keys while the timeline shows.
func (p *timelinePane) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok {
		cmd, _ := dispatch(p.bindings(), k)
		return cmd
	}
	return nil
}

// ShortHelp is the timeline's footer, from its bindings.
func (p *timelinePane) ShortHelp() []key.Binding { return shortOf(p.bindings()) }

// View draws the timeline over the screen: the axis and the lanes that
// fit, the attempt under the cursor in words, the legend, the footer.
func (p *timelinePane) View() string {
	tl := p.layout()
	inner := p.width - 2
	lanes := max(1, p.height-3-4) // the box's borders and footer; axis, blank, cursor, legend
	if len(tl.Attempts) > 0 {
		lane := tl.Attempts[p.sel].Lane
		p.top = scrollTo(lane, p.top, lanes, len(tl.Lanes))
	}
	frame := timelineFrame{tl: tl, win: p.win, width: inner, lanes: lanes, sel: p.sel, top: p.top, built: p.builtAt}
	if frame != p.drawnFor || p.rows == nil {
		p.rows, p.drawnFor = tl.Rows(inner, p.win, p.sel, p.top, lanes), frame
	}
	lines := make([]string, 0, lanes+4)
	lines = append(lines, p.rows...)
	// The room the lanes leave shows what happened in words, from the
	// window's start: "+0.011s mail delivered msg_… (step-4 #1)".
	if room := lanes + 1 - len(lines) - 1; room > 0 {
		lines = append(lines, "")
		lines = append(lines, p.momentLines(room, inner)...)
	}
	for len(lines) < lanes+1 {
		lines = append(lines, "")
	}
	lines = append(lines, "")
	if len(tl.Attempts) > 0 {
		it := tl.Item(tl.Attempts[p.sel])
		from, to := timeline.Offset(it.From.Sub(tl.Start), time.Millisecond), timeline.Offset(it.To.Sub(tl.Start), time.Millisecond)
		lines = append(lines, fit(fmt.Sprintf("▸ %s→%s  %s", from, to, it.Text), inner))
	} else {
		lines = append(lines, p.theme.Dim.Render(" no attempts yet"))
	}
	lines = append(lines, p.theme.Dim.Render(fit(timeline.Legend(), inner)))
	from, to := p.win.From.Sub(tl.Start), p.win.To().Sub(tl.Start)
	step := p.win.Span / 100
	what := p.tv.exec.ID
	if p.tv.exec.Scenario != "" {
		what += " · " + p.tv.exec.Scenario
	}
	title := fmt.Sprintf("Timeline  %s · %s–%s of %s", what,
		timeline.Offset(from, step), timeline.Offset(to, step), timeline.Offset(tl.End.Sub(tl.Start), step)[1:])
	switch {
	case p.reading:
		title += fmt.Sprintf(" · first %d events: reading the rest", p.tv.t.Events)
	case p.cut:
		title += fmt.Sprintf(" · first %d events of more", p.tv.t.Events)
	}
	return p.theme.box(title, lines, p.width, p.height-1, true) + "\n" + p.status(tl)
}

// momentLines are up to n of the moments from the window's start, width
// wide.
func (p *timelinePane) momentLines(n, width int) []string {
	from := p.win.From.Sub(p.tl.Start)
	i := sort.Search(len(p.moments), func(i int) bool { return p.moments[i].At >= from })
	out := make([]string, 0, n)
	for ; i < len(p.moments) && len(out) < n; i++ {
		mo := p.moments[i]
		out = append(out, fit(fmt.Sprintf("%10s  %s", timeline.Offset(mo.At, time.Millisecond), mo.Text), width))
	}
	return out
}

// status is the footer: where the cursor is, and the keys.
func (p *timelinePane) status(tl *timeline.Timeline) string {
	pos := ""
	if n := len(tl.Attempts); n > 0 {
		pos = fmt.Sprintf(" attempt %d/%d ", p.sel+1, n)
	}
	p.footer.Width = 0
	right := p.footer.ShortHelpView(p.ShortHelp())
	gap := p.width - ansi.StringWidth(pos) - ansi.StringWidth(right)
	if gap < 1 {
		return fit(pos+right, p.width)
	}
	return pos + strings.Repeat(" ", gap) + right
}

// openTimeline opens the Timeline view of the selected execution's trace.
func (m *Model) openTimeline() tea.Cmd {
	tv := m.trace.shown()
	if tv == nil {
		m.setFlash("select an execution first: the timeline draws its trace", true)
		return nil
	}
	partial := m.trace.Partial()
	m.timeline.Open(tv, partial)
	m.modes.push(&mode{name: "timeline", active: m.timeline.Shown,
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.timeline.Update(msg) }), short: m.timeline.ShortHelp})
	if partial {
		return m.readWholeTimeline(tv.exec)
	}
	return nil
}

// readWholeTimeline reads the whole history of x, whose trace pane holds
// only its first pages, up to timelineMaxEvents, and folds and lays it
// out, all in the command: the timeline of a 10 000-attempt execution
// covers it to its end, not to the pages scrolled through.
func (m *Model) readWholeTimeline(x history.Execution) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		events, err := src.Events(x.ID, 0, timelineMaxEvents+1)
		if err != nil {
			return wholeTimelineMsg{id: x.ID, err: err}
		}
		cut := len(events) > timelineMaxEvents
		if cut {
			events = events[:timelineMaxEvents]
		}
		tv := newTraceView(x, events)
		return wholeTimelineMsg{id: x.ID, tv: tv, tl: buildTimeline(tv), cut: cut}
	}
}

// shown is the trace the pane shows, nil while none is read.
func (t *tracePane) shown() *traceView { return t.tr }

// pickAttempt selects an attempt the timeline's enter chose in the trace.
func (m *Model) pickAttempt(call string, n int) {
	m.sizePanes()
	m.trace.SelectAttempt(call, n)
	m.focus = paneTrace
	m.clampScroll()
}
