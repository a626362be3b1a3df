package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/verify"
)

// Lessons is the guided path the explorer's lesson mode walks;
// *lesson.Session is one. Begin resets the lessons' own database for a
// step, Act plays one of its actions, Outcome reads what they left, Record
// saves a finished step, Reset forgets every step done (the path starts
// over): those run in commands. Path, Next and Score are called from
// Update and View and must answer from memory.
type Lessons interface {
	Path() []lesson.Step
	Next() (lesson.Step, bool)
	Score() (done, right int)
	Begin(step lesson.Step) error
	Act(ctx context.Context, step lesson.Step, i int) (string, error)
	Outcome() (verify.Outcome, error)
	Record(step lesson.Step, fb lesson.Feedback) error
	Reset() error
}

// LessonRoom is where lessons run: a database of their own, never the
// user's, shown through Source while lesson mode is on.
type LessonRoom struct {
	Lessons Lessons
	Source  Source
	// Where names the lessons' database, for the lesson pane.
	Where string
	// Diff, when set, is told each finished step and its outcome and
	// returns, for a fix, its difference from its mistake in one line
	// ("diff: …", lesson.Pairs.Line); "" for a step that fixes nothing.
	// It is called off the UI goroutine, before Record.
	Diff func(ctx context.Context, step lesson.Step, out verify.Outcome) (string, error)
}

// lessonPhase is where the current step stands.
type lessonPhase int

const (
	phasePredict  lessonPhase = iota // waiting for the learner's number
	phaseActing                      // waiting for the key of the next action
	phaseRunning                     // an action is playing
	phaseFeedback                    // confirmed or explained
	phaseFinished                    // the whole path is done
)

// lessonPane is the explorer's lesson mode: the step's text, prediction
// box and verdict where the Detail pane is (a tab of its own when narrow,
// with a strip under the trace and outbox for the step's next key). It
// owns the step's state and plays it through the room's Lessons, in
// commands; the Model switches the database shown and reads it again.
type lessonPane struct {
	*Context
	presenter bool
	// opener opens the lessons' room (nil: no lesson mode here); startOn
	// says the explorer opens in lesson mode.
	opener  func() (*LessonRoom, error)
	startOn bool
	// leave leaves lesson mode, the user's database back (esc; enter after
	// the last step).
	leave    func() tea.Cmd
	on       bool
	opening  bool
	room     *LessonRoom
	userSrc  Source // the user's source, back when the lesson ends
	step     lesson.Step
	phase    lessonPhase
	input    textinput.Model
	guess    int
	next     int    // the action the learner's next key plays
	after    string // what the last action left: "worker killed · 1 message in the outbox"
	feedback lesson.Feedback
	// diff is a fix's difference from its mistake, once read.
	diff string
	// jumping is set while the learner types the lesson to go to (#),
	// in jumpIn; jumpErr says why the last one typed was refused.
	jumping       bool
	jumpIn        textinput.Model
	jumpErr       error
	err           error
	width, height int

	// userSel is the execution selected in the user's database when the
	// lesson began; restore is it, once the lesson ends, until the user's
	// list is read again with the selection put back on it.
	userSel, restore string
	// userCRM is whether the user's outbox pane showed the CRM when the
	// lesson began: a lesson shows what its step counts, and leaving puts
	// the user's tab back.
	userCRM bool
}

func newLessonPane(ctx *Context, presenter bool, opener func() (*LessonRoom, error), startOn bool, leave func() tea.Cmd) *lessonPane {
	return &lessonPane{Context: ctx, presenter: presenter, opener: opener, startOn: startOn, leave: leave}
}

// flashMsg puts a status message in the footer for a component.
type flashMsg struct {
	text string
	bad  bool
}

func flash(text string, bad bool) tea.Cmd {
	return func() tea.Msg { return flashMsg{text: text, bad: bad} }
}

// narrow says the screen's size is known and the panes are tabs. Before
// the first size is known nothing is decided: the Model decides then
// (sized).
func (l *lessonPane) narrow() bool { return l.Context.width > 0 && l.Context.width < wideWidth }

// sized is told the screen's first size: in a narrow screen a prediction
// asked before it is asked on the lesson's tab.
func (l *lessonPane) sized() {
	if l.on && l.phase == phasePredict && l.narrow() {
		l.focus = paneDetail
	}
}

// SetSize is the lesson's box, borders included.
func (l *lessonPane) SetSize(width, height int) { l.width, l.height = width, height }

// View is the lesson's box where the Detail pane is.
func (l *lessonPane) View() string {
	title, lines := l.lines(l.width - 2)
	return l.theme.pane(title, lines, l.width, l.height, l.focus == paneDetail)
}

// FullHelp is the lesson's keys in one group.
func (l *lessonPane) FullHelp() [][]key.Binding { return [][]key.Binding{l.ShortHelp()} }

// lessonMsg reports lesson work done off the UI goroutine.
type lessonMsg struct {
	kind    lessonMsgKind
	room    *LessonRoom
	step    lesson.Step
	action  int
	exec    string
	outcome verify.Outcome
	diff    string
	err     error
	// gen, index and found, for lessonRestored: the source shown when the
	// search began, and where exec stands in its list, if it is there.
	gen   int
	index int
	found bool
}

type lessonMsgKind int

const (
	lessonOpened    lessonMsgKind = iota // the room is open
	lessonBegun                          // the lessons' database is reset for step
	lessonActed                          // action ran; outcome is the state after it
	lessonRecorded                       // the finished step is saved; diff is its diff line
	lessonRestored                       // the user's selection before the lesson is found again
	lessonReset                          // the path's progress is forgotten: it starts over
	lessonNextGroup                      // the next group's reset is done (nextgroup.go)
)

func newLessonInput() textinput.Model {
	in := textinput.New()
	in.Prompt = "your prediction > "
	in.CharLimit = 4
	in.Placeholder = "a number, or nothing to skip"
	// No blinking on a projector, as the filter: a blink is also a redraw
	// twice a second while the room reads the question.
	in.Cursor.SetMode(cursor.CursorStatic)
	return in
}

// startLesson enters lesson mode at the first unfinished step, opening the
// lessons' own database the first time and showing it instead of the
// user's until the lesson ends.
func (m *Model) startLesson() tea.Cmd {
	if !m.lesson.Ready() {
		open, text, bad := m.lesson.openRoom()
		if text != "" {
			m.setFlash(text, bad)
		}
		return open
	}
	room := m.lesson.Begin(m.src, m.selID, m.outbox.CRM())
	m.modes.push(m.lessonMode())
	if m.width > 0 && !m.wide() {
		m.focus = paneDetail // the lesson takes the Detail tab
	}
	return tea.Batch(m.useSource(room.Source), m.lesson.ask())
}

// leaveLesson ends lesson mode and brings the user's database back.
func (m *Model) leaveLesson() tea.Cmd {
	src, crm, ok := m.lesson.End()
	if !ok {
		return nil
	}
	m.showCRM(crm)
	m.setFlash("left the lesson: your database is back; L returns to the lesson", false)
	return m.useSource(src)
}

// On says lesson mode is on.
func (l *lessonPane) On() bool { return l.on }

// Presenter says the lesson's text is spaced out for a projector.
func (l *lessonPane) Presenter() bool { return l.presenter }

// StartsOn says the explorer opens in lesson mode.
func (l *lessonPane) StartsOn() bool { return l.startOn }

// Finished says the whole path is done.
func (l *lessonPane) Finished() bool { return l.phase == phaseFinished }

// Ready says the lessons' room is open.
func (l *lessonPane) Ready() bool { return l.room != nil }

// openRoom is the command that opens the lessons' room the first time,
// with the status message to show; nil while it opens already, or where
// there is no lesson mode.
func (l *lessonPane) openRoom() (open tea.Cmd, text string, bad bool) {
	switch {
	case l.opener == nil:
		return nil, "lesson mode is not available here: run `retrylab lesson` in a terminal", true
	case l.opening:
		return nil, "", false
	}
	l.opening = true
	opener := l.opener
	return func() tea.Msg {
		room, err := opener()
		return lessonMsg{kind: lessonOpened, room: room, err: err}
	}, "opening the lessons' own database…", false
}

// opened takes the room the opener opened, unless it failed.
func (l *lessonPane) opened(room *LessonRoom, err error) {
	l.opening = false
	if err == nil {
		l.room = room
	}
}

// Begin turns lesson mode on over the user's source, the execution
// selected there and its outbox tab, which End gives back; it returns
// the room, whose source is shown meanwhile.
func (l *lessonPane) Begin(userSrc Source, userSel string, userCRM bool) *LessonRoom {
	l.on = true
	l.userSrc, l.userSel, l.restore, l.userCRM = userSrc, userSel, "", userCRM
	return l.room
}

// End turns lesson mode off and gives back the user's source and outbox
// tab; ok is false when no lesson had taken them. The execution selected
// before is selected again once the user's list is read (takeRestore).
func (l *lessonPane) End() (src Source, crm, ok bool) {
	l.on = false
	if l.userSrc == nil {
		return nil, false, false
	}
	src, l.userSrc = l.userSrc, nil
	l.restore, l.userSel = l.userSel, ""
	return src, l.userCRM, true
}

// takeRestore is, once lesson mode is off, the execution to select again
// in the user's list, once; "" when there is none.
func (l *lessonPane) takeRestore() string {
	if l.on {
		return ""
	}
	id := l.restore
	l.restore = ""
	return id
}

// showCRM puts the outbox pane on the CRM's rows (or on the outbox), from
// its top; the rows are read by the next loadOutbox.
func (m *Model) showCRM(on bool) {
	m.outbox.ShowCRM(on)
}

// useSource shows another source: the lessons' database or the user's.
// Subscribing may be I/O (a client attached to a host in another process
// opens a stream), so it runs in a command; the reads start once the
// subscription is in (subscribedMsg), so no notice falls between.
func (m *Model) useSource(src Source) tea.Cmd {
	if m.feed.unsubscribe != nil {
		m.feed.unsubscribe() // ends the wait on the old notices
	}
	m.src = src
	m.showing(src)
	m.feed.gen++
	m.feed.notices, m.feed.unsubscribe = nil, nil
	m.execs.Reset()
	m.selID = ""
	m.trace.Reset()
	m.trace.ShowOwner("") // the explorer's own, unless the caller says whose
	m.forgetFilterAndMark()
	m.runs.follow, m.runs.started = "", ""
	m.outbox.Clear()
	m.status.armed = nil
	gen := m.feed.gen
	return func() tea.Msg {
		ch, unsub := src.Subscribe(4096)
		return subscribedMsg{gen: gen, notices: ch, unsubscribe: unsub}
	}
}

// subscribedMsg is a subscription to the notices of the source numbered
// gen, made off the UI goroutine.
type subscribedMsg struct {
	gen         int
	notices     <-chan notice.Notice
	unsubscribe func()
}

// onSubscribed starts following the source and reading it; a subscription
// to a source no longer shown is ended.
func (m *Model) onSubscribed(msg subscribedMsg) tea.Cmd {
	if msg.gen != m.feed.gen {
		return func() tea.Msg { msg.unsubscribe(); return nil }
	}
	m.feed.notices, m.feed.unsubscribe = msg.notices, msg.unsubscribe
	m.feed.cur = m.feed.window // a new source starts quiet
	execs := m.loadExecs()
	if id := m.lesson.takeRestore(); id != "" {
		execs = m.restoreSelection(id)
	}
	return tea.Batch(execs, m.loadOutbox(), m.loadScenarios(), m.waitNotices())
}

// restoreSelection finds id's place in the list shown, in a command; the
// list is read once it is found (onLesson), with the selection on it.
func (m *Model) restoreSelection(id string) tea.Cmd {
	gen, locate := m.feed.gen, m.locate(id)
	return func() tea.Msg {
		msg := lessonMsg{kind: lessonRestored, gen: gen, exec: id}
		if loc, ok := locate().(locatedMsg); ok {
			msg.index, msg.found, msg.err = loc.index, loc.found, loc.err
		}
		return msg
	}
}

// ask asks for the prediction of the first unfinished step.
func (l *lessonPane) ask() tea.Cmd {
	step, ok := l.room.Lessons.Next()
	if !ok {
		l.phase = phaseFinished
		return nil
	}
	return l.askStep(step)
}

// jumpKey opens the box that takes the lesson to go to, by number or
// name, whenever no step is playing.
const jumpKey = "#"

// Jumping says the box for the lesson to go to is open: esc closes it,
// not the lesson.
func (l *lessonPane) Jumping() bool { return l.jumping }

// startJump opens the box for the lesson to go to.
func (l *lessonPane) startJump() tea.Cmd {
	l.jumping, l.jumpErr = true, nil
	l.jumpIn = textinput.New()
	l.jumpIn.Prompt = "go to lesson > "
	l.jumpIn.CharLimit = 40
	l.jumpIn.Placeholder = fmt.Sprintf("1 to %d, or a name", len(l.room.Lessons.Path()))
	l.jumpIn.Cursor.SetMode(cursor.CursorStatic)
	return l.jumpIn.Focus()
}

// closeJump closes the box for the lesson to go to (esc), back to the
// step.
func (l *lessonPane) closeJump() tea.Cmd {
	l.jumping, l.jumpErr = false, nil
	if l.phase == phasePredict {
		return l.input.Focus()
	}
	return nil
}

// goJump goes to the lesson typed (enter), asking for its prediction
// whether it is done or not.
func (l *lessonPane) goJump() tea.Cmd {
	step, err := lesson.FindStep(l.room.Lessons.Path(), l.jumpIn.Value())
	if err != nil {
		l.jumpErr = err
		return nil
	}
	l.jumping, l.jumpErr = false, nil
	return l.askStep(step)
}

// askStep asks for the prediction of step.
func (l *lessonPane) askStep(step lesson.Step) tea.Cmd {
	l.step, l.phase, l.err, l.after, l.diff = step, phasePredict, nil, "", ""
	l.input = newLessonInput()
	if l.narrow() {
		l.focus = paneDetail // the prediction is asked on the lesson's tab
	}
	return l.input.Focus()
}

// lessonKeyFor is the explorer key that plays a script verb.
func lessonKeyFor(verb string) string {
	switch verb {
	case "run", "submit", "submit-twice":
		return "n"
	case "resume":
		return "r"
	case "delete-journal":
		return "D"
	case "advance":
		return "A"
	case "reset-world":
		return "R"
	}
	return "enter"
}

// Update takes the results of the lesson's commands (lessonMsg: begun,
// acted, recorded). Its keys are its bindings, which lesson mode runs.
func (l *lessonPane) Update(msg tea.Msg) tea.Cmd {
	if msg, ok := msg.(lessonMsg); ok {
		return l.onResult(msg)
	}
	return nil
}

// bindings are the lesson's keys while it has the keyboard, declared once:
// lesson mode runs those with an action and the footer shows those with a
// help line, in order. Which there are follows the step in front (the
// phase) and the box for the lesson to go to (#). A binding with no action
// is a hint of a key the lesson leaves to the explorer: ? and q while a
// step waits, ctrl+c (which quits from anywhere). While a text has the
// keyboard (Typing), every other key types.
func (l *lessonPane) bindings() []binding {
	do := func(k, desc string, action func() tea.Cmd) binding {
		return binding{Binding: hint(k, desc), action: func(tea.KeyMsg) tea.Cmd { return action() }}
	}
	quitNow := binding{Binding: hint("ctrl+c", "quit")}
	if l.jumping {
		return []binding{do("enter", "go", l.goJump), do("esc", "back", l.closeJump), quitNow}
	}
	leave := do("esc", "leave lesson", l.leave)
	jump := do(jumpKey, "go to lesson", func() tea.Cmd {
		l.input.Blur()
		return l.startJump()
	})
	help, quit := binding{Binding: word(l.keys.Help)}, binding{Binding: word(l.keys.Quit)}
	switch l.phase {
	case phasePredict:
		return []binding{do("enter", "start", l.begin), leave, jump, quitNow}
	case phaseActing:
		a := l.step.Actions[l.next]
		return []binding{do(lessonKeyFor(a.Verb), strings.ToLower(a.Verb), l.act), leave, jump, help, quit, l.notNow(), l.lessonSets()}
	case phaseRunning:
		return []binding{leave, quit, l.notNow(), l.lessonSets()}
	case phaseFeedback:
		return []binding{do("enter", "next lesson", l.ask), leave, jump, help, quit, l.lessonSets()}
	case phaseFinished:
		return []binding{do("r", "start over", l.startOver), do("enter", "back to your database", l.leave), jump, quit,
			{Binding: key.NewBinding(key.WithKeys("esc")), action: func(tea.KeyMsg) tea.Cmd { return l.leave() }}, l.lessonSets()}
	}
	return nil
}

// lessonSets refuses, in lesson mode, the keys that would change what a
// step runs: the faults armed by hand (t T c C), the policy (K J) and the
// kill (x). The lesson sets its scenario's faults and policy, and its
// verdict is the scenario's; a crash armed before n would make the run
// say one thing and the verdict another.
func (l *lessonPane) lessonSets() binding {
	k := l.keys
	var keys []string
	for _, b := range []key.Binding{k.TimeoutAfter, k.TimeoutBefore, k.CrashAfterEffect, k.CrashAfterRecord, k.ToggleKeys, k.ToggleJournal, k.KillNow} {
		keys = append(keys, b.Keys()...)
	}
	return binding{Binding: key.NewBinding(key.WithKeys(keys...)), action: func(msg tea.KeyMsg) tea.Cmd {
		return flash(fmt.Sprintf("%s: not in lesson mode, the lesson sets the faults and the policy; esc leaves to try your own", msg.String()), true)
	}}
}

// Policy is the policy of the step in front, which its runs use: the
// scenario's own, since lesson mode takes no overrides; ok is false
// before a step is asked.
func (l *lessonPane) Policy() (keys, journal bool, ok bool) {
	if !l.on || l.step.Scenario == nil {
		return false, false, false
	}
	p := l.step.Scenario.Policy
	return p.Keys, p.Journal, true
}

// notNow takes the explorer's action keys while a step waits for its own
// key or plays (they would run what the lesson did not ask for), and says
// what the lesson waits for.
func (l *lessonPane) notNow() binding {
	return binding{Binding: key.NewBinding(key.WithKeys("n", "r", "D", "A", "R", "E")), action: func(tea.KeyMsg) tea.Cmd {
		if l.phase == phaseRunning {
			return flash("the lesson is running: watch the trace and the outbox", false)
		}
		a := l.step.Actions[l.next]
		return flash(fmt.Sprintf("the lesson's next key is %s: %s", lessonKeyFor(a.Verb), strings.ToLower(a.Say)), true)
	}}
}

// Typing says a text has the keyboard: the prediction, or the lesson to
// go to (#).
func (l *lessonPane) Typing() bool { return l.jumping || l.phase == phasePredict }

// Type types a key into the text that has the keyboard.
func (l *lessonPane) Type(msg tea.KeyMsg) tea.Cmd {
	var cmd tea.Cmd
	if l.jumping {
		l.jumpIn, cmd = l.jumpIn.Update(msg)
		l.jumpErr = nil
		return cmd
	}
	l.input, cmd = l.input.Update(msg)
	l.err = nil
	return cmd
}

// begin starts the step once its prediction reads (enter).
func (l *lessonPane) begin() tea.Cmd {
	guess, err := lesson.ParsePrediction(l.input.Value(), l.step.Measure)
	if err != nil {
		l.err = err
		return nil
	}
	l.guess, l.err = guess, nil
	l.phase = phaseRunning
	lessons, step := l.room.Lessons, l.step
	return func() tea.Msg {
		return lessonMsg{kind: lessonBegun, step: step, err: lessons.Begin(step)}
	}
}

// act plays the step's next action (its key).
func (l *lessonPane) act() tea.Cmd {
	lessons, step, i := l.room.Lessons, l.step, l.next
	l.phase = phaseRunning
	return func() tea.Msg {
		exec, err := lessons.Act(context.Background(), step, i)
		out, oerr := lessons.Outcome()
		if err == nil {
			err = oerr
		}
		return lessonMsg{kind: lessonActed, step: step, action: i, exec: exec, outcome: out, err: err}
	}
}

// startOver empties the lessons' database, to take the path again (r).
func (l *lessonPane) startOver() tea.Cmd {
	lessons := l.room.Lessons
	return func() tea.Msg { return lessonMsg{kind: lessonReset, err: lessons.Reset()} }
}

// onResult takes a step's progress: begun (its keys are next), an action
// played (what it left; the verdict after the last), recorded (the diff
// line).
func (l *lessonPane) onResult(msg lessonMsg) tea.Cmd {
	switch msg.kind {
	case lessonBegun:
		if msg.err != nil {
			l.err, l.phase = msg.err, phaseFeedback
			return nil
		}
		l.phase, l.next = phaseActing, 0
		if l.narrow() {
			l.focus = paneTrace // the trace and outbox, with the lesson's next key under them
		}
		if len(msg.step.Actions) == 0 {
			return l.finish(verify.Outcome{})
		}
	case lessonActed:
		if msg.err != nil {
			l.err, l.phase = msg.err, phaseFeedback
			return nil
		}
		l.after = afterAction(msg.outcome, l.step.Measure)
		l.next = msg.action + 1
		if l.next >= len(l.step.Actions) {
			return l.finish(msg.outcome)
		}
		l.phase = phaseActing
	case lessonReset:
		if msg.err != nil {
			l.err = msg.err
			return nil
		}
		return l.ask()
	case lessonRecorded:
		if msg.step.Name != l.step.Name {
			return nil
		}
		l.diff = msg.diff
		if msg.err != nil {
			l.err = msg.err
		}
	}
	return nil
}

// onLesson takes lesson work's results.
func (m *Model) onLesson(msg lessonMsg) tea.Cmd {
	switch msg.kind {
	case lessonNextGroup:
		return m.onNextGroup(msg)
	case lessonOpened:
		m.lesson.opened(msg.room, msg.err)
		if msg.err != nil {
			m.setFlash("lesson mode: "+oneLine(msg.err.Error()), true)
			return nil
		}
		m.setFlash("lessons run in "+msg.room.Where+"; your database is not touched", false)
		return m.startLesson()
	case lessonBegun:
		if !m.lesson.On() {
			return nil
		}
		cmd := m.lesson.Update(msg)
		if msg.err != nil {
			return nil
		}
		m.execs.Home()
		m.selID = ""
		m.forgetFilterAndMark() // the lesson's database starts empty
		// The pane beside the trace shows what the step counts: a
		// CRM lesson's rows, not an empty outbox.
		m.showCRM(msg.step.Measure == lesson.MeasureCRMRows)
		return tea.Batch(cmd, m.loadExecs(), m.loadOutbox())
	case lessonActed:
		cmds := []tea.Cmd{m.loadExecs(), m.loadOutbox()}
		if !m.lesson.On() {
			return nil // left while the action played; the user's database shows
		}
		if msg.exec != "" {
			m.runs.follow, m.runs.started = msg.exec, msg.exec
			m.runs.ownRun(msg.exec)
			cmds = append(cmds, m.locate(msg.exec))
		}
		return tea.Batch(append(cmds, m.lesson.Update(msg))...)
	case lessonRecorded, lessonReset:
		if !m.lesson.On() {
			return nil
		}
		if msg.kind == lessonReset && msg.err == nil {
			m.forgetFilterAndMark() // the path starts over for the next group
		}
		return m.lesson.Update(msg)
	case lessonRestored:
		if msg.gen != m.feed.gen {
			return nil // another source is shown since
		}
		if msg.err != nil {
			m.setFlash(oneLine(msg.err.Error()), true)
		}
		if msg.found {
			m.sizePanes()
			m.execs.moveTo(msg.index)
		}
		return m.loadExecs()
	}
	return nil
}

// finish checks the prediction against the step's outcome, then, in a
// command, reads a fix's diff line and saves the step as done.
func (l *lessonPane) finish(out verify.Outcome) tea.Cmd {
	step := l.step
	fb := lesson.Check(step, l.guess, out)
	l.feedback, l.phase = fb, phaseFeedback
	room := l.room
	return func() tea.Msg {
		var line string
		if room.Diff != nil {
			var err error
			if line, err = room.Diff(context.Background(), step, out); err != nil {
				line = "diff: cannot compare with its mistake: " + oneLine(err.Error())
			}
		}
		fb.Diff = line
		return lessonMsg{kind: lessonRecorded, step: step, diff: line, err: room.Lessons.Record(step, fb)}
	}
}

// afterAction says what an action left, the state the lesson pauses on:
// "worker killed · 1 message in the outbox".
func afterAction(out verify.Outcome, measure lesson.Measure) string {
	status := string(out.Status)
	if out.Status == history.StatusKilled {
		status = "worker killed"
	}
	count := measure.Count(measure.Of(out))
	if status == "" {
		return count
	}
	return status + " · " + count
}

// byHand names the explorer keys that play a step's actions.
func byHand(step lesson.Step) string {
	var parts []string
	for _, a := range step.Actions {
		parts = append(parts, fmt.Sprintf("%s (%s)", lessonKeyFor(a.Verb), strings.ToLower(a.Say)))
	}
	return strings.Join(parts, " → ")
}

// lines are the lesson's title and text.
func (l *lessonPane) lines(width int) (string, []string) {
	st := l.step
	done, right := l.room.Lessons.Score()
	title := fmt.Sprintf("Lesson %d/%d · %s — %s · %d done, %d predicted right · esc: leave", st.Number, st.Of, st.Name, st.Title, done, right)
	wrap := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(wrapText(s, width), "\n")
	}
	// Every line of the lesson's own text wraps: a projector at 80
	// columns must show the whole question, not its first 70 cells.
	styled := func(style lipgloss.Style, s string) []string {
		ws := wrap(s)
		for i, w := range ws {
			ws[i] = style.Render(w)
		}
		return ws
	}
	// The text is paragraphs: the presenter's spacing goes between them,
	// never between the lines of one wrapped sentence.
	var paras [][]string
	add := func(p ...string) {
		if len(p) > 0 {
			paras = append(paras, p)
		}
	}
	where := styled(l.theme.Dim, "in "+l.room.Where+" (your database is untouched; esc brings it back)")
	switch l.phase {
	case phaseFinished:
		title = fmt.Sprintf("Lessons · all done: %d of %d predicted right", right, done)
		add(wrap("Every lesson of the path is done. r starts the path over for the next workshop (as `retrylab lesson --reset` does): the progress is forgotten.")...)
		if l.err != nil {
			add(styled(l.theme.Bad, oneLine(l.err.Error()))...)
		}
		if !l.presenter {
			add("") // the presenter's spacing is there already
		}
		add("r: start over · enter: back to your database")
	case phasePredict:
		add(wrap(st.Intro)...)
		add(styled(l.theme.Dim, "what you will do: "+byHand(st))...)
		add(styled(l.theme.Bold, "Predict: "+st.Predict)...)
		// "enter: start" where it fits beside the box; the footer says it too.
		in := l.input.View()
		if hint := l.theme.Dim.Render("   enter: start"); lipgloss.Width(in+hint) <= width {
			in += hint
		}
		add(in)
		if l.err != nil {
			add(styled(l.theme.Bad, l.err.Error())...)
		}
		add(where...)
	case phaseActing, phaseRunning:
		add(wrap(fmt.Sprintf("you predicted %s", predicted(l.guess, st.Measure)))...)
		for i, a := range st.Actions {
			mark, head, say, bold := "  ", lessonKeyFor(a.Verb)+"  ", a.Say, false
			switch {
			case i < l.next:
				mark = "✓ "
			case i == l.next && l.phase == phaseRunning:
				mark, say = "● ", say+" … watch the trace and the outbox"
			case i == l.next:
				mark, head, bold = "▶ ", "press "+head, true
			}
			// What the key does wraps under itself, past the mark and key.
			indent := strings.Repeat(" ", lipgloss.Width(mark+head))
			var p []string
			for j, w := range strings.Split(wrapText(say, width-len(indent)), "\n") {
				if j == 0 {
					w = head + w
				}
				if bold {
					w = l.theme.Bold.Render(w)
				}
				if j == 0 {
					w = mark + w
				} else {
					w = indent + w
				}
				p = append(p, w)
			}
			add(p...)
		}
		if l.after != "" {
			add(styled(l.theme.Warn, "now: "+l.after)...)
		}
		add(where...)
	case phaseFeedback:
		if l.err != nil {
			add(l.theme.Bad.Render(oneLine(l.err.Error())))
		} else {
			style := l.theme.OK
			if !l.feedback.Correct {
				style = l.theme.Warn
			}
			for i, para := range strings.Split(l.feedback.Text, "\n") {
				if i == 0 {
					add(styled(style, para)...)
				} else {
					add(wrap(para)...)
				}
			}
			// A fix is shown as a difference from its mistake.
			add(styled(l.theme.Info, l.diff)...)
		}
		add(l.theme.Dim.Render("enter: next lesson · esc: back to your database"))
	}
	if l.jumping {
		add(l.jumpIn.View())
		if l.jumpErr != nil {
			add(styled(l.theme.Bad, oneLine(l.jumpErr.Error()))...)
		}
	}
	var lines []string
	for i, p := range paras {
		if i > 0 && l.presenter {
			lines = append(lines, "")
		}
		lines = append(lines, p...)
	}
	return title, lines
}

// predicted says a prediction: "2 messages in the outbox", or "nothing".
func predicted(guess int, m lesson.Measure) string {
	if guess < 0 {
		return "nothing (no prediction)"
	}
	return m.Count(guess)
}

// wrapText breaks s into lines of at most width cells, at spaces.
func wrapText(s string, width int) string {
	if width < 10 {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			switch {
			case line == "":
				line = w
			case len([]rune(line))+1+len([]rune(w)) > width:
				out = append(out, line)
				line = w
			default:
				line += " " + w
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// stripHeight is the height of the lesson's strip under the trace and
// outbox in a narrow terminal, while a step waits for or plays its keys and
// while its verdict shows; 0 when there is none.
func (l *lessonPane) stripHeight() int {
	if l.Context.width >= wideWidth || !l.on || l.phase == phasePredict || l.phase == phaseFinished {
		return 0
	}
	return 4
}

// strip is the narrow layout's reminder of the lesson: the next key
// and what the last one left, or the verdict.
func (l *lessonPane) strip(height int) string {
	st := l.step
	var lines []string
	if i := l.next; i < len(st.Actions) {
		a := st.Actions[i]
		if l.phase == phaseRunning {
			lines = append(lines, fmt.Sprintf("● %s  %s … watch the trace and the outbox", lessonKeyFor(a.Verb), a.Say))
		} else {
			lines = append(lines, l.theme.Bold.Render(fmt.Sprintf("▶ press %s  %s", lessonKeyFor(a.Verb), a.Say)))
		}
	}
	title := fmt.Sprintf("Lesson %d/%d · %s · tab tab: the lesson's text", st.Number, st.Of, st.Name)
	if l.phase == phaseFeedback {
		// The verdict beside the outbox it counts; the why is a tab away.
		verdict := oneLine(l.feedback.Text)
		if l.err != nil {
			verdict = oneLine(l.err.Error())
		}
		title = fmt.Sprintf("Lesson %d/%d · %s · tab tab: why", st.Number, st.Of, st.Name)
		lines = []string{l.theme.Bold.Render(verdict), l.theme.Dim.Render("enter: next lesson · esc: back to your database")}
	} else if l.after != "" {
		lines = append(lines, l.theme.Warn.Render("now: "+l.after))
	}
	return l.theme.box(title, lines, l.Context.width, height, false)
}

// ShortHelp is the footer's keys while the lesson has the keyboard, from
// its bindings: while a prediction is typed, enter and esc (q types a q);
// while it waits for a key, that key; nil when the explorer's keys work.
func (l *lessonPane) ShortHelp() []key.Binding { return shortOf(l.bindings()) }
