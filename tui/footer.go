package tui

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/internal/dur"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// DefaultFlashFor is how long a status message stays in the footer: long
// enough to read aloud, short enough not to describe a screen that moved on.
const DefaultFlashFor = 6 * time.Second

// statusLine is the footer's state: the status message (a flash: the
// newest one expires after a while), the source's armed faults and world
// clock, and bubbles' help drawing the keys.
type statusLine struct {
	text string
	bad  bool
	// seq counts status messages, so only the newest expires; after is
	// how long one stays (zero: until the next).
	seq   int
	after time.Duration
	// armed and worldOffset are the source's, as last read.
	armed       []fault.Point
	worldOffset time.Duration
	// pace is the source's slow motion for the runs to come (0: off).
	pace time.Duration
	// gone is said, and stays, once the source's notices ended while the
	// explorer ran: what shows is no longer live (its host quit or died).
	gone   string
	footer help.Model
}

func newStatusLine(t Theme, after time.Duration) *statusLine {
	return &statusLine{after: after, footer: newFooterHelp(t)}
}

// flashExpiredMsg clears the status message numbered seq, if still shown.
type flashExpiredMsg struct{ seq int }

// expireFlash clears the newest status message after flashFor; nil when
// messages stay (flashFor zero).
func (m *Model) expireFlash() tea.Cmd {
	if m.status.after <= 0 || m.status.text == "" {
		return nil
	}
	seq := m.status.seq
	return tea.Tick(m.status.after, func(time.Time) tea.Msg { return flashExpiredMsg{seq: seq} })
}

// statusBar is the footer: the policy for the next runs, armed faults and
// world clock on the left, a status message, and the key hints on the
// right. The hints always show (all but the optional ones when narrow); a
// status message goes beside the state, which shortens for it, and when it
// still does not fit, on a line of its own above: the state always shows.
// In lesson mode the policy is the lesson's, which its runs use.
func (m *Model) statusBar() string {
	t := m.theme
	armed := "—"
	if len(m.status.armed) > 0 {
		names := make([]string, len(m.status.armed))
		for i, p := range m.status.armed {
			names[i] = string(p)
		}
		armed = t.Bad.Render(strings.Join(names, ","))
	}
	clock := fmt.Sprintf("+%dh", int(m.status.worldOffset.Round(time.Hour)/time.Hour))
	// The state says only what the source has: the policy of the next runs
	// where it runs scenarios, the armed faults where it has faults, the
	// world clock where it has a world; a read-only source, nothing.
	can := m.can
	var full, compact, narrow []string
	// The filter applied, on every tab: the list it hides from is not
	// always on screen.
	if f := m.filter.State(); f != "" {
		full, compact, narrow = append(full, "filter "+f), append(compact, f), append(narrow, f)
	}
	if keys, journal, ok := m.lesson.Policy(); ok && can.run != nil {
		// A lesson's runs use its scenario's policy, whatever K and J
		// were before L.
		full = append(full, fmt.Sprintf("keys %s · journal %s (the lesson's)", onOff(keys), onOff(journal)))
		compact = append(compact, fmt.Sprintf("keys %s  journal %s", onOff(keys), onOff(journal)))
	} else if can.run != nil {
		full = append(full, fmt.Sprintf("keys %s · journal %s", short(m.runs.keysOn), short(m.runs.journalOn)))
		compact = append(compact, fmt.Sprintf("keys %s  journal %s", shorter(m.runs.keysOn), shorter(m.runs.journalOn)))
	}
	if can.faults != nil {
		full = append(full, "armed: "+armed)
		compact = append(compact, "armed "+armed)
		narrow = append(narrow, "armed "+armed)
	}
	if can.pace != nil && m.status.pace > 0 {
		slow := "slow " + dur.Text(m.status.pace)
		full, compact, narrow = append(full, "slow motion "+dur.Text(m.status.pace)), append(compact, slow), append(narrow, slow)
	}
	if can.world != nil {
		full = append(full, "world clock "+clock)
		compact = append(compact, clock)
		narrow = append(narrow, clock)
	}
	pad := func(parts []string, sep string) string {
		if len(parts) == 0 {
			return ""
		}
		return " " + strings.Join(parts, sep) + " "
	}
	states := []string{pad(full, " · "), pad(compact, "  ")}
	// What is armed matters more than the policy: when both do not fit
	// (80 columns, 'armed timeou…'), the armed faults and the clock alone.
	narrowest := states[1]
	if len(m.status.armed) > 0 {
		narrowest = pad(narrow, "  ")
	}
	hints := func(all bool) string {
		keys := m.shortHelp()
		if !all {
			kept := keys[:0:0]
			for _, b := range keys {
				if !optional[b.Help().Key] {
					kept = append(kept, b)
				}
			}
			keys = kept
		}
		return m.status.footer.ShortHelpView(keys)
	}
	right := hints(true)
	if lipgloss.Width(right)+40 > m.width {
		right = hints(false)
	}
	room := m.width - lipgloss.Width(right) - 2
	right = "  " + right
	if m.modes.confirm != nil {
		// A question needs its answer keys, not the usual hints.
		return fit(" "+t.Warn.Render(m.modes.confirm.question), m.width)
	}
	flash := ""
	style := t.Info
	if m.status.bad {
		style = t.Bad
	}
	if m.status.text != "" {
		flash = style.Render(m.status.text)
	}
	// The full state with the message; the compact state with it; else
	// the message on a line of its own above the state and the keys: the
	// policy, the armed faults and the clock never give way to a message.
	for _, state := range states[:2] {
		left := state
		switch {
		case flash != "" && state == "":
			left = " " + flash + " "
		case flash != "":
			left += "│ " + flash + " "
		}
		if lipgloss.Width(left) <= room {
			return fit(left, room) + right
		}
	}
	state := narrowest
	for _, s := range states[:2] {
		if lipgloss.Width(s) <= room {
			state = s
			break
		}
	}
	if flash == "" {
		return fit(state, room) + right
	}
	return messageLine(m.status.text, style, m.width) + "\n" + fit(state, room) + right
}

// messageLine is a status message too long to share the footer's line
// with the state, on a line of its own the whole width; what still does
// not fit ends in "… M: whole", the message log's key.
func messageLine(text string, style lipgloss.Style, width int) string {
	const more = "… M: whole"
	if lipgloss.Width(text) > width-2 {
		text = strings.TrimRight(ansi.Truncate(text, max(0, width-2-lipgloss.Width(more)), ""), " ") + more
	}
	return fit(" "+style.Render(text), width)
}

// footerHeight is the footer's lines: two while a status message too long
// to share the line with the state shows (messageLine), else one.
func (m *Model) footerHeight() int {
	if m.status.text == "" {
		return 1
	}
	return strings.Count(m.statusBar(), "\n") + 1
}

// onOff says a policy's part: "on" or "off".
func onOff(v bool) string { return short(&v) }

// shorter is short for a narrow footer.
func shorter(v *bool) string {
	if v == nil {
		return "scn"
	}
	return short(v)
}

// newFooterHelp is bubbles' help, drawing the footer's short help in the
// theme's status colours: "n run  c crash  ? help".
func newFooterHelp(t Theme) help.Model {
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles.ShortKey = t.StatusKey
	h.Styles.ShortDesc = t.Status
	h.Styles.ShortSeparator = t.Status
	h.Styles.Ellipsis = t.Status
	return h
}

// shortHelp is the keys that work now, in the pane and mode in front: a
// text box's keys while one has the keyboard (no q while a prediction is
// typed), the lesson's while it waits for a key, else the focused pane's.
// The overlays' keys first (the top one's), then the focused pane's, of
// which only those the source can do (Model.offers).
func (m *Model) shortHelp() []key.Binding {
	if keys := m.modes.shortHelp(); keys != nil {
		return keys
	}
	keys := m.pane(m.focus).ShortHelp()
	if keys == nil {
		keys = m.keys.ShortHelp()
	}
	all := m.bindings()
	out := keys[:0:0]
	for _, b := range keys {
		if m.offers(all, b) {
			out = append(out, b)
		}
	}
	return out
}
