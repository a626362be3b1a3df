package tui

// The room view: a workshop room's participants on the teacher's
// projector, one row each, read live from the room the explorer hosts.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/internal/plural"
)

// RoomReader is what the room view reads of a workshop room: its status,
// one entry per participant, and a participant's runs as a source the
// explorer shows as any other (*room.Server is one).
type RoomReader interface {
	Status() (room.Status, error)
	Participant(name string) (engine.Reader, error)
}

// DefaultRoomEvery is how often the room view reads the room again.
const DefaultRoomEvery = time.Second

// roomMsg is the room's status as a read found it.
type roomMsg struct {
	st  room.Status
	err error
	// next: the read is the periodic one, which asks for the next.
	next bool
}

// roomTickMsg asks for the room's status again.
type roomTickMsg struct{}

// projector is what the explorer puts a room on a projector with: the
// room view (P) and the slide view (s), one field of the Model.
type projector struct {
	room  *roomPane
	slide *slideView
}

// roomPane is the room view (P): a row per participant with its latest
// scenario and outcome, its outbox with ⚠ on a duplicate and its
// predictions, and the class tally under them.
type roomPane struct {
	*Context
	src   RoomReader
	every time.Duration
	join  string
	// movedFrom is the last address the room could not come back to,
	// said under the join line until a participant is active after the
	// first read (latest: the latest activity that read found).
	movedFrom     string
	latest        time.Time
	seen          bool
	shown         bool
	st            room.Status
	read          bool
	err           string
	sel, top      int
	width, height int
	// home is the explorer's own source while a participant's runs are
	// shown in its place (enter); nil while its own are.
	home Source
}

// newRoomPane is the view of the room src, shown from the start when
// there is one; join is the line participants type.
func newRoomPane(ctx *Context, src RoomReader, every time.Duration, join string) *roomPane {
	if every == 0 {
		every = DefaultRoomEvery
	}
	return &roomPane{Context: ctx, src: src, every: every, join: join, shown: src != nil}
}

// On says the explorer has a room to show.
func (r *roomPane) On() bool { return r.src != nil }

// Shown says the room view is on screen.
func (r *roomPane) Shown() bool { return r.shown }

// Toggle shows or hides the room view.
func (r *roomPane) Toggle() { r.shown = r.src != nil && !r.shown }

// SetSize is the screen's size: the room view takes all of it.
func (r *roomPane) SetSize(width, height int) { r.width, r.height = width, height }

// load reads the room's status, off the UI goroutine; next makes it the
// periodic read (one chain of them runs, from Init).
func (r *roomPane) load(next bool) tea.Cmd {
	if r.src == nil {
		return nil
	}
	src := r.src
	return func() tea.Msg {
		st, err := src.Status()
		return roomMsg{st: st, err: err, next: next}
	}
}

// tick asks for the next read after the room view's period.
func (r *roomPane) tick() tea.Cmd {
	if r.src == nil || r.every < 0 {
		return nil
	}
	return tea.Tick(r.every, func(time.Time) tea.Msg { return roomTickMsg{} })
}

// Update takes the room's reads, its ticks and the keys that move the
// selection.
func (r *roomPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case roomTickMsg:
		return r.load(true)
	case roomMsg:
		r.read = true
		if msg.err != nil {
			r.err = oneLine(msg.err.Error())
		} else {
			var was string
			if p := r.selected(); p != nil {
				was = p.Name
			}
			r.st, r.err = byActivity(msg.st), ""
			r.clearMoved()
			// The selection stays on its participant as the list reorders.
			if i := slices.IndexFunc(r.st.Participants, func(p room.ParticipantStatus) bool { return p.Name == was }); i >= 0 {
				r.sel = i
			}
		}
		r.sel = clamp(r.sel, 0, max(0, len(r.st.Participants)-1))
		r.top = scrollTo(r.sel, r.top, r.rows(), len(r.st.Participants))
		if !msg.next {
			return nil
		}
		return r.tick()
	case tea.KeyMsg:
		if d, ok := r.keys.moveDelta(msg, r.rows()); ok {
			r.sel = clamp(r.sel+d, 0, max(0, len(r.st.Participants)-1))
			r.top = scrollTo(r.sel, r.top, r.rows(), len(r.st.Participants))
		}
	}
	return nil
}

// clearMoved drops the notice that the room moved once a participant is active later
// than at the first read (one joined again, or pushed a run): the room's
// new address has reached them. The first read only notes the latest
// activity, which came before the move.
func (r *roomPane) clearMoved() {
	if r.movedFrom == "" {
		return
	}
	var latest time.Time
	for _, p := range r.st.Participants {
		if p.Active.After(latest) {
			latest = p.Active
		}
	}
	if r.seen && latest.After(r.latest) {
		r.movedFrom = ""
		return
	}
	if !r.seen {
		r.seen, r.latest = true, latest
	}
}

// byActivity is st with its participants in the order of their last
// activity, the latest first (the room's status lists them by name); the
// room's order among those equally recent.
func byActivity(st room.Status) room.Status {
	ps := slices.Clone(st.Participants)
	slices.SortStableFunc(ps, func(a, b room.ParticipantStatus) int { return b.Active.Compare(a.Active) })
	st.Participants = ps
	return st
}

// lesson is the class's tally of the lesson at hand: the selected
// participant's last, else the last the class reached; nil before any.
func (r *roomPane) lesson() *room.LessonTally {
	ls := r.st.Lessons
	if len(ls) == 0 {
		return nil
	}
	if p := r.selected(); p != nil && p.Lesson != "" {
		if i := slices.IndexFunc(ls, func(l room.LessonTally) bool { return l.Lesson == p.Lesson }); i >= 0 {
			return &ls[i]
		}
	}
	return &ls[len(ls)-1]
}

// selected is the participant under the selection, if any.
func (r *roomPane) selected() *room.ParticipantStatus {
	if r.sel < 0 || r.sel >= len(r.st.Participants) {
		return nil
	}
	return &r.st.Participants[r.sel]
}

// tally is the class's lines under the rows: the lesson at hand's
// predictions (who said what, what it was); per scenario, how many of the
// participants who ran it saw their latest run of it duplicate a send (the
// room's Status.Scenarios); then the predictions.
func (r *roomPane) tally() []string {
	var out []string
	if l := r.lesson(); l != nil {
		out = append(out, "lesson "+l.Summary())
	}
	for _, s := range r.st.Scenarios {
		out = append(out, fmt.Sprintf("%s: %d of %d sent a duplicate", s.Scenario, s.Duplicated, s.Participants))
	}
	var right, asked, predicting int
	for _, p := range r.st.Participants {
		if p.Predictions.Asked > 0 {
			predicting++
			right += p.Predictions.Right
			asked += p.Predictions.Asked
		}
	}
	if asked > 0 {
		out = append(out, fmt.Sprintf("predictions: %d of %d right, from %s", right, asked, plural.Count(predicting, "participant")))
	}
	return out
}

// rows is how many participants fit on screen.
func (r *roomPane) rows() int { return max(1, r.height-3-len(r.shownTally())-2-r.joinLines()) }

// minTally is how many of the class's lines show however many
// participants want the screen.
const minTally = 4

// shownTally is the class's lines that fit: all of them where the rows
// leave room, else at least minTally (the rows scroll).
func (r *roomPane) shownTally() []string {
	t := r.tally()
	// Around the rows: the footer, the Class title, the box's borders, the
	// join line and the header.
	fixed := 1 + 1 + 2 + r.joinLines() + 1
	room := max(minTally, r.height-fixed-max(1, len(r.st.Participants)))
	room = max(0, min(room, r.height-fixed-1))
	return t[:min(len(t), room)]
}

// joinLines is how many lines the join line, and the notice that the
// room moved, take at the box's top.
func (r *roomPane) joinLines() int {
	n := 0
	if r.join != "" {
		n++
	}
	if r.movedFrom != "" {
		n++
	}
	return n
}

// roomColumns are the room view's column widths at a screen width: the
// name and the scenario share what the fixed columns leave.
func roomColumns(width int) (name, scenario int) {
	rest := width - 5 - 13 - 8 - 8 // outcome, outbox, predictions, borders and marks
	name = clamp(rest*2/5, 8, 26)
	return name, clamp(rest-name, 8, 24)
}

// View is the room view: the box of rows, the tally, the footer.
func (r *roomPane) View() string {
	nameW, scenW := roomColumns(r.width)
	tally := r.shownTally()
	head := "  " + fit("participant", nameW) + fit("scenario", scenW) + fit("outcome", 13) + fit("outbox", 8) + "guessed"
	var lines []string
	if r.join != "" {
		lines = append(lines, fit(" "+r.join, r.width-2))
	}
	if r.movedFrom != "" {
		lines = append(lines, r.theme.Bad.Render(fit(" ⚠ moved from "+r.movedFrom+" (taken): join again with the line above", r.width-2)))
	}
	lines = append(lines, r.theme.Dim.Render(fit(head, r.width-2)))
	ps := r.st.Participants
	switch {
	case r.err != "":
		lines = append(lines, r.theme.Bad.Render(fit(" the room cannot be read: "+r.err, r.width-2)))
	case !r.read:
		lines = append(lines, r.theme.Dim.Render(" reading the room…"))
	case len(ps) == 0:
		lines = append(lines, r.theme.Dim.Render(" nobody has joined yet: participants type the join line"))
	}
	rows := r.rows()
	for i := r.top; i < len(ps) && i < r.top+rows; i++ {
		lines = append(lines, r.row(ps[i], i == r.sel, nameW, scenW))
	}
	boxH := r.height - 1 - len(tally)
	if len(tally) > 0 {
		boxH--
	}
	title := "Room · " + plural.Count(len(ps), "participant")
	parts := []string{r.theme.pane(title, lines, r.width, boxH, true)}
	if len(tally) > 0 {
		parts = append(parts, fit(r.theme.Bold.Render(" Class"), r.width))
		for _, t := range tally {
			parts = append(parts, fit("  "+t, r.width))
		}
	}
	parts = append(parts, r.theme.Dim.Render(fit(" ↑/↓ select · enter runs · s slide · P/esc explorer · q quit", r.width)))
	return strings.Join(parts, "\n")
}

// row is one participant's line: its latest run's scenario, outcome and
// own outbox.
func (r *roomPane) row(p room.ParticipantStatus, sel bool, nameW, scenW int) string {
	badge, mk := roomBadge(p)
	outcome := orDash(p.Outcome)
	if p.Left {
		// Gone (retrylab leave): its runs stay, its name is free.
		badge, mk, outcome = "⏏", markNone, "left"
	}
	box := fmt.Sprintf("%d", p.LatestOutbox)
	if p.LatestDuplicates > 0 {
		box += " ⚠"
	}
	guess := "—"
	if p.Predictions.Asked > 0 {
		guess = fmt.Sprintf("%d/%d", p.Predictions.Right, p.Predictions.Asked)
	}
	name := fit(p.Name, nameW-1) + " "
	plain := selMark(sel) + " " + name + fit(orDash(p.Scenario), scenW) + fit(badge+" "+outcome, 13) + fit(box, 8) + guess
	if sel {
		return r.theme.Selected.Render(fit(plain, r.width-2))
	}
	styled := selMark(sel) + " " + name + fit(orDash(p.Scenario), scenW) +
		markStyle(r.theme, mk).Render(badge) + fit(" "+outcome, 12) + fit(box, 8) + guess
	return styled
}

// roomBadge is a participant's latest outcome as its trace says it (the
// outbox column carries the ⚠ of a duplicate).
func roomBadge(p room.ParticipantStatus) (string, marker) {
	if p.Outcome == "" {
		return " ", markNone
	}
	return statusBadge(execItem{x: history.Execution{Status: history.Status(p.Outcome)}})
}

// ShortHelp is the room view's keys.
func (r *roomPane) ShortHelp() []key.Binding {
	return []key.Binding{hint("↑/↓", "select"), hint("enter", "runs"), hint("s", "slide"), hint("P", "explorer"), r.keys.Quit}
}

// FullHelp is its keys, one column.
func (r *roomPane) FullHelp() [][]key.Binding { return [][]key.Binding{r.ShortHelp()} }

var _ component = (*roomPane)(nil)

// roomMode is the room view (P): it takes every key but quit's, so
// nothing under it moves unseen; s shows the selected participant's
// slide, P and esc go back to the explorer.
func (m *Model) roomMode() *mode {
	return &mode{name: "room", active: m.room.Shown,
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			switch {
			case key.Matches(msg, m.keys.Quit):
				return nil, false
			case key.Matches(msg, m.keys.Slide):
				return m.openSlide(), true
			case msg.String() == "enter":
				return m.enterParticipant(), true
			case key.Matches(msg, m.keys.Room), msg.String() == "esc":
				m.room.Toggle()
				return nil, true
			}
			return m.room.Update(msg), true
		},
		short: m.room.ShortHelp}
}

// openRoomView shows the room view, and reads the room at once.
func (m *Model) openRoomView() tea.Cmd {
	if !m.room.On() {
		return nil
	}
	m.room.Toggle()
	m.modes.push(m.roomMode())
	cmds := []tea.Cmd{m.room.load(false)}
	if m.room.home != nil {
		// Back from a participant's runs: the explorer's own are under
		// the room view again.
		cmds = append(cmds, m.useSource(m.room.home))
		m.room.home = nil
	}
	return tea.Batch(cmds...)
}

// participantMsg is a participant's runs as the room holds them, opened
// off the UI goroutine.
type participantMsg struct {
	name string
	src  Source
	err  error
}

// enterParticipant opens the selected participant's runs (enter): the
// explorer shows them in place of its own, their trace beside their
// outbox, until P goes back to the room.
func (m *Model) enterParticipant() tea.Cmd {
	p := m.room.selected()
	if p == nil {
		return nil
	}
	if m.lesson.On() {
		m.setFlash("leave the lesson first (L): it shows the lessons' own runs", false)
		return nil
	}
	src, name := m.room.src, p.Name
	return func() tea.Msg {
		r, err := src.Participant(name)
		return participantMsg{name: name, src: r, err: err}
	}
}

// onParticipant shows a participant's runs opened by enter.
func (m *Model) onParticipant(msg participantMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash(oneLine(msg.err.Error()), true)
		return nil
	}
	if m.room.home == nil {
		m.room.home = m.src
	}
	if m.room.Shown() {
		m.room.Toggle()
	}
	m.focus = paneTrace
	m.setFlash(msg.name+"'s runs, as the room holds them: P goes back to the room", false)
	cmd := m.useSource(msg.src)
	m.trace.ShowOwner(msg.name)
	return cmd
}

// slideMode is the slide view (s): it takes every key but quit's.
func (m *Model) slideMode() *mode {
	return &mode{name: "slide", active: m.slide.Shown,
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			if key.Matches(msg, m.keys.Quit) {
				return nil, false
			}
			return m.slide.Update(msg), true
		},
		short: m.slide.ShortHelp}
}

// openSlide shows the slide of the room's selected participant while the
// room view is on, else of the selected execution.
func (m *Model) openSlide() tea.Cmd {
	switch {
	case m.room.Shown():
		p := m.room.selected()
		if p == nil {
			m.setFlash("no participant to show yet", false)
			return nil
		}
		m.slide.Show(slideOfParticipant(*p))
	default:
		it := m.selectedExec()
		if it == nil {
			m.setFlash("no execution to show yet: press n", false)
			return nil
		}
		m.slide.Show(slideOfExec(*it))
	}
	m.modes.push(m.slideMode())
	return nil
}
