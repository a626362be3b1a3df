package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// messageLogSize is how many status messages the log keeps, newest last.
const messageLogSize = 200

// logged is a status message as the log keeps it: when it was shown.
type logged struct {
	at   time.Time
	text string
	bad  bool
}

// messageLog is every status message shown, whole (M): the footer shows
// one at a time, for a few seconds, and may have to cut it. It pages like
// the help: j/k scroll, any other key closes.
type messageLog struct {
	*Context
	entries       []logged
	open          bool
	top           int
	width, height int
}

func newMessageLog(ctx *Context) *messageLog { return &messageLog{Context: ctx} }

// Add keeps a message shown in the footer; one repeated at once is kept once.
func (l *messageLog) Add(at time.Time, text string, bad bool) {
	if text == "" {
		return
	}
	if n := len(l.entries); n > 0 && l.entries[n-1].text == text && l.entries[n-1].bad == bad {
		l.entries[n-1].at = at
		return
	}
	if len(l.entries) == messageLogSize {
		l.entries = append(l.entries[:0], l.entries[1:]...)
	}
	l.entries = append(l.entries, logged{at: at, text: text, bad: bad})
}

// Shown says the log is open.
func (l *messageLog) Shown() bool { return l.open }

// Show opens the log at its newest messages.
func (l *messageLog) Show() {
	l.open = true
	l.top = max(0, len(l.lines())-l.rows())
}

// SetSize fits the log to the screen.
func (l *messageLog) SetSize(width, height int) { l.width, l.height = width, height }

// rows is how many lines of messages the box holds.
func (l *messageLog) rows() int { return max(1, l.height-2) }

// lines is every message, oldest first, wrapped to the box: its time,
// then its text.
func (l *messageLog) lines() []string {
	if len(l.entries) == 0 {
		return []string{l.theme.Dim.Render(" no messages yet")}
	}
	var out []string
	for _, e := range l.entries {
		style := l.theme.Info
		if e.bad {
			style = l.theme.Bad
		}
		stamp := e.at.Format("15:04:05") + "  "
		indent := strings.Repeat(" ", len(stamp))
		for i, part := range strings.Split(wrapText(e.text, max(10, l.width-3-len(stamp))), "\n") {
			lead := indent
			if i == 0 {
				lead = stamp
			}
			out = append(out, " "+l.theme.Dim.Render(lead)+style.Render(part))
		}
	}
	return out
}

// bindings are the log's keys: they scroll it; any other key closes it.
func (l *messageLog) bindings() []binding {
	scroll := func(d func() int) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd {
			l.top = clamp(l.top+d(), 0, max(0, len(l.lines())-l.rows()))
			return nil
		}
	}
	return []binding{
		{Binding: key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/k", "scroll")), action: scroll(func() int { return 1 })},
		{Binding: key.NewBinding(key.WithKeys("k", "up")), action: scroll(func() int { return -1 })},
		{Binding: key.NewBinding(key.WithKeys("pgdown", "ctrl+d", " ")), action: scroll(l.rows)},
		{Binding: key.NewBinding(key.WithKeys("pgup", "ctrl+u")), action: scroll(func() int { return -l.rows() })},
	}
}

// Update scrolls the log on its keys; any other key closes it.
func (l *messageLog) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok || !l.open {
		return nil
	}
	if cmd, ok := dispatch(l.bindings(), k); ok {
		return cmd
	}
	l.open = false
	return nil
}

// View is the log's box over the whole screen.
func (l *messageLog) View() string {
	all := l.lines()
	end := min(len(all), l.top+l.rows())
	title := fmt.Sprintf("Messages (%d) · j/k: scroll · other keys: close", len(l.entries))
	return l.theme.box(title, all[min(l.top, end):end], l.width, l.height, true)
}

// ShortHelp is the log's keys.
func (l *messageLog) ShortHelp() []key.Binding {
	return append(shortOf(l.bindings()), hint("other keys", "close"))
}

// FullHelp is the log's keys in one group.
func (l *messageLog) FullHelp() [][]key.Binding { return [][]key.Binding{l.ShortHelp()} }

// messagesMode is the message log (M): any key scrolls it or closes it.
func (m *Model) messagesMode() *mode {
	return &mode{name: "messages", active: func() bool { return m.msgs.Shown() },
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.msgs.Update(msg) }), short: m.msgs.ShortHelp}
}
