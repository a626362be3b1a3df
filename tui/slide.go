package tui

// The slide view (s): the selected execution, or the room's selected
// participant, said large and plain for the back of the room: what the
// trace says beside what the outbox says.

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/internal/plural"
)

// slide is what the slide view says: whose run, and the two verdicts.
type slide struct {
	who, scenario string
	badge         string
	mark          marker
	outcome       string
	outbox        int
	duplicates    bool
	// audited: an imported execution, which has no outbox: its second
	// line is the audit's verdict (possible says POSSIBLE, not DUPLICATE).
	audited, possible bool
	// guessed is the participant's predictions, when from the room.
	guessed string
}

// slideOfExec is the slide of an execution of the source shown.
func slideOfExec(it execItem) slide {
	badge, mk := statusBadge(execItem{x: it.x}) // the trace's verdict, not the outbox's
	n := 0
	for _, c := range it.x.Sends {
		n += c
	}
	return slide{who: it.x.ID, scenario: it.x.Scenario, badge: badge, mark: mk, outcome: string(it.x.Status),
		outbox: n, duplicates: it.duplicates, audited: it.x.Imported != "", possible: it.possible}
}

// slideOfParticipant is the slide of a room participant's latest run: its
// scenario, its outcome and its own outbox.
func slideOfParticipant(p room.ParticipantStatus) slide {
	s := slide{who: p.Name, scenario: p.Scenario, outcome: p.Outcome, outbox: p.LatestOutbox, duplicates: p.LatestDuplicates > 0}
	s.badge, s.mark = roomBadge(p)
	if p.Predictions.Asked > 0 {
		s.guessed = fmt.Sprintf("%d of %d predictions right", p.Predictions.Right, p.Predictions.Asked)
	}
	return s
}

// slideView is the slide mode: it takes the whole screen until s or esc.
type slideView struct {
	*Context
	shown         bool
	s             slide
	width, height int
}

func newSlideView(ctx *Context) *slideView { return &slideView{Context: ctx} }

// Show puts s on screen.
func (v *slideView) Show(s slide) { v.s, v.shown = s, true }

// Shown says the slide is on screen.
func (v *slideView) Shown() bool { return v.shown }

// SetSize is the screen's size.
func (v *slideView) SetSize(width, height int) { v.width, v.height = width, height }

// Update closes the slide on s or esc.
func (v *slideView) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok && (k.String() == "s" || k.String() == "esc") {
		v.shown = false
	}
	return nil
}

// verdicts are the slide's two lines: the trace's word and the outbox's,
// or for an import (no outbox was watched) the audit's.
func (s slide) verdicts() (trace, outbox string) {
	trace = "the trace says   " + s.badge + " " + orDash(s.outcome)
	if s.audited {
		switch {
		case s.duplicates:
			return trace, "the audit says   a side effect happened twice  ← duplicate"
		case s.possible:
			return trace, "the audit says   a side effect possibly happened twice  ← possible"
		}
		return trace, "the audit says   no repeated side effects  ✓"
	}
	outbox = "the outbox says  " + plural.Count(s.outbox, "message")
	if s.duplicates {
		outbox += "  ← duplicate"
	} else if s.outbox > 0 {
		outbox += "  ✓"
	}
	return trace, outbox
}

// View is the slide, centred, a blank line between each of its lines.
func (v *slideView) View() string {
	s := v.s
	trace, outbox := s.verdicts()
	title := spaced(s.who, v.width/2)
	if s.scenario != "" {
		title += "  ·  " + spaced(s.scenario, v.width/2)
	}
	outStyle := v.theme.OK
	if s.duplicates || s.possible {
		outStyle = v.theme.Bad
	}
	body := []string{
		v.theme.Bold.Render(ansi.Truncate(title, v.width-4, "…")),
		"",
		"",
		strings.Replace(trace, s.badge, markStyle(v.theme, s.mark).Render(s.badge), 1),
		"",
		outStyle.Render(outbox),
	}
	if s.guessed != "" {
		body = append(body, "", v.theme.Dim.Render(s.guessed))
	}
	inner := lipgloss.JoinVertical(lipgloss.Left, body...)
	foot := v.theme.Dim.Render(fit(" s/esc: back · q: quit", v.width))
	page := lipgloss.Place(v.width, v.height-1, lipgloss.Center, lipgloss.Center, inner)
	return page + "\n" + foot
}

// spaced letter-spaces a title, so it reads larger, where it fits.
func spaced(s string, width int) string {
	r := []rune(s)
	wide := strings.Join(strings.Split(s, ""), " ")
	if len(r)*2-1 <= width {
		return wide
	}
	return s
}

// ShortHelp is the slide's keys.
func (v *slideView) ShortHelp() []key.Binding {
	return []key.Binding{hint("s/esc", "back"), v.keys.Quit}
}

// FullHelp is its keys, one column.
func (v *slideView) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

var _ component = (*slideView)(nil)
