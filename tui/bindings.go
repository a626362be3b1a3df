package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/internal/dur"
)

// binding is one key of the explorer, declared once: its keys and help
// line (the key.Binding), the help page's column it is listed in, whether
// it works now (enabled; nil: always) and what it does. The dispatch, the
// footer's short help and the help page are all built from the one list
// (Model.bindings), and each shows or runs only the enabled bindings: a
// key the source cannot do is neither offered nor run.
type binding struct {
	key.Binding
	group   string
	enabled func() bool
	action  func(msg tea.KeyMsg) tea.Cmd
}

// on says the binding works now.
func (b binding) on() bool { return b.enabled == nil || b.enabled() }

// The help page's columns, in order.
const (
	groupMove   = "Move"
	groupRun    = "Run"
	groupFaults = "Faults"
)

// helpGroups are the help page's columns, in order.
var helpGroups = []string{groupMove, groupRun, groupFaults}

// bindings is the explorer's own keys, under its overlays and under the
// focused pane's (paneBindings: the moves), in the help page's order.
func (m *Model) bindings() []binding {
	k := m.keys
	can := func(role func(roles) bool) func() bool { return func() bool { return role(m.can) } }
	runs := can(func(r roles) bool { return r.run != nil })
	faults := can(func(r roles) bool { return r.faults != nil })
	world := can(func(r roles) bool { return r.world != nil })
	erase := can(func(r roles) bool { return r.erase != nil })
	pacer := can(func(r roles) bool { return r.pace != nil })
	simulated := can(func(r roles) bool { return !r.importsOnly }) // an outbox and a CRM to show
	arm := func(p fault.Point) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd { return m.arm(p) }
	}
	return []binding{
		{Binding: k.NextPane, group: groupMove, action: func(tea.KeyMsg) tea.Cmd { m.focus = m.nextPane(1); return nil }},
		{Binding: k.PrevPane, group: groupMove, action: func(tea.KeyMsg) tea.Cmd { m.focus = m.nextPane(-1); return nil }},
		{Binding: k.Filter, group: groupMove, action: func(tea.KeyMsg) tea.Cmd { return m.openFilter() }},
		{Binding: k.Escape, group: groupMove, enabled: func() bool { return !faults() }, action: func(tea.KeyMsg) tea.Cmd {
			if m.filter.Clear() {
				return m.loadExecs()
			}
			return nil
		}},
		{Binding: k.ScrollDetail, group: groupMove, action: func(msg tea.KeyMsg) tea.Cmd {
			m.sizePanes()
			if msg.String() == "[" {
				m.detail.Scroll(-max(1, m.paneHeight(paneDetail)-3))
			} else {
				m.detail.Scroll(max(1, m.paneHeight(paneDetail)-3))
			}
			return nil
		}},

		{Binding: k.Run, group: groupRun, enabled: runs, action: func(tea.KeyMsg) tea.Cmd { return m.openPicker() }},
		{Binding: k.Resume, group: groupRun, enabled: runs, action: func(tea.KeyMsg) tea.Cmd { return m.resume() }},
		{Binding: k.ToggleKeys, group: groupRun, enabled: runs, action: func(tea.KeyMsg) tea.Cmd {
			m.runs.keysOn = cycle(m.runs.keysOn)
			m.setFlash("next runs: idempotency keys "+tri(m.runs.keysOn), false)
			return nil
		}},
		{Binding: k.ToggleJournal, group: groupRun, enabled: runs, action: func(tea.KeyMsg) tea.Cmd {
			m.runs.journalOn = cycle(m.runs.journalOn)
			m.setFlash("next runs: journal "+tri(m.runs.journalOn), false)
			return nil
		}},
		{Binding: k.DeleteJournal, group: groupRun, enabled: world, action: func(tea.KeyMsg) tea.Cmd { return m.deleteJournal() }},
		{Binding: k.FinalOnly, group: groupRun, action: func(tea.KeyMsg) tea.Cmd {
			m.sizePanes()
			m.trace.ToggleFinalOnly()
			m.clampScroll()
			if m.trace.FinalOnly() {
				m.setFlash("showing each step's final attempt only — what many engines record", false)
			} else {
				m.setFlash("showing every attempt", false)
			}
			return nil
		}},
		{Binding: k.OutboxTab, group: groupRun, enabled: simulated, action: func(tea.KeyMsg) tea.Cmd {
			if m.showsImported() {
				m.setFlash("no simulated outbox or CRM here: effects are inferred", false)
				return nil
			}
			m.outbox.ToggleCRM()
			if m.outbox.CRM() {
				return m.loadOutbox() // the CRM rows are read only while shown
			}
			return nil
		}},
		{Binding: k.MarkExec, group: groupRun, action: func(tea.KeyMsg) tea.Cmd { return m.markExec() }},
		{Binding: k.Compare, group: groupRun, action: func(tea.KeyMsg) tea.Cmd { return m.openCompare() }},
		{Binding: timelineKey, group: groupRun, action: func(tea.KeyMsg) tea.Cmd { return m.openTimeline() }},
		{Binding: k.Lesson, group: groupRun, action: func(tea.KeyMsg) tea.Cmd {
			if m.lesson.On() {
				return m.leaveLesson()
			}
			return m.startLesson()
		}},
		{Binding: k.Slide, group: groupRun, action: func(tea.KeyMsg) tea.Cmd { return m.openSlide() }},
		{Binding: k.Room, group: groupRun, enabled: m.room.On, action: func(tea.KeyMsg) tea.Cmd { return m.openRoomView() }},
		{Binding: k.Help, group: groupRun, action: func(tea.KeyMsg) tea.Cmd {
			m.help.Show()
			m.modes.push(m.helpMode())
			return nil
		}},
		{Binding: k.Messages, group: groupRun, action: func(tea.KeyMsg) tea.Cmd {
			m.msgs.Show()
			m.modes.push(m.messagesMode())
			return nil
		}},
		{Binding: k.Quit, group: groupRun, action: func(tea.KeyMsg) tea.Cmd { return m.askQuit() }},
		{Binding: k.QuitNow, group: groupRun}, // onKey quits on it first: listed only

		{Binding: k.TimeoutAfter, group: groupFaults, enabled: faults, action: arm(fault.TimeoutAfterEffect)},
		{Binding: k.TimeoutBefore, group: groupFaults, enabled: faults, action: arm(fault.TimeoutBeforeEffect)},
		{Binding: k.CrashAfterEffect, group: groupFaults, enabled: faults, action: arm(fault.CrashAfterEffect)},
		{Binding: k.CrashAfterRecord, group: groupFaults, enabled: faults, action: arm(fault.CrashAfterRecord)},
		{Binding: k.KillNow, group: groupFaults, enabled: runs, action: func(tea.KeyMsg) tea.Cmd { return m.killNow() }},
		{Binding: k.Disarm, group: groupFaults, enabled: faults, action: func(tea.KeyMsg) tea.Cmd {
			if m.filter.Clear() {
				return m.loadExecs()
			}
			return m.disarm()
		}},
		{Binding: k.AdvanceClock, group: groupFaults, enabled: world, action: func(tea.KeyMsg) tea.Cmd {
			src := m.can.world
			// The message says the total too (a second A: now +50h), as
			// the footer does under it.
			return func() tea.Msg {
				if err := src.AdvanceClock(retentionJump); err != nil {
					return actionMsg{err: err}
				}
				return actionMsg{text: fmt.Sprintf("world clock advanced %s: now +%s; keys older than their retention are forgotten",
					dur.Text(retentionJump), dur.Text(src.WorldOffset().Round(time.Minute)))}
			}
		}},
		{Binding: k.ResetWorld, group: groupFaults, enabled: world, action: func(tea.KeyMsg) tea.Cmd {
			src := m.can.world
			return m.ask("Reset the world (outbox, keys, CRM; histories stay)? y: reset · else: keep",
				func() tea.Cmd { return act("world reset: outbox, keys and CRM are empty", src.ResetWorld) })
		}},
		{Binding: k.Slow, group: groupFaults, enabled: pacer, action: func(tea.KeyMsg) tea.Cmd { return m.toggleSlow() }},
		{Binding: k.StartClean, group: groupFaults, enabled: erase, action: func(tea.KeyMsg) tea.Cmd { return m.startClean() }},
		{Binding: k.NextGroup, group: groupFaults, enabled: func() bool { return erase() && !m.lesson.On() }, action: func(tea.KeyMsg) tea.Cmd { return m.nextGroup() }},
		// esc clears the filter where faults cannot be disarmed: listed
		// nowhere, since Disarm's line says it.
		{Binding: key.NewBinding(key.WithKeys("esc")), action: func(tea.KeyMsg) tea.Cmd {
			if m.filter.Clear() {
				return m.loadExecs()
			}
			return nil
		}},
	}
}

// dispatch runs the first enabled binding of bs that msg matches; ok is
// false when none does. A binding with no action is a hint (a key shown
// in a footer that is left to what is under it): it matches nothing.
func dispatch(bs []binding, msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	for _, b := range bs {
		if b.on() && b.action != nil && key.Matches(msg, b.Binding) {
			return b.action(msg), true
		}
	}
	return nil, false
}

// shortOf is a component's footer: its enabled bindings that have a help
// line, in the order declared.
func shortOf(bs []binding) []key.Binding {
	var out []key.Binding
	for _, b := range bs {
		if b.on() && b.Help().Key != "" {
			out = append(out, b.Binding)
		}
	}
	return out
}

// helpColumns are the help page's columns: the enabled bindings of each
// group, built from the same lists the dispatch runs: the panes' (each
// key once, the trace's first: it has the most) and the explorer's.
func (m *Model) helpColumns() [][]key.Binding {
	var all []binding
	for _, p := range []pane{paneTrace, paneExecs, paneOutbox, paneDetail} {
		all = append(all, m.paneBindings(p)...)
	}
	all = append(all, m.bindings()...)
	out := make([][]key.Binding, len(helpGroups))
	for i, g := range helpGroups {
		listed := map[string]bool{}
		for _, b := range all {
			if b.group == g && b.on() && !listed[b.Help().Key] {
				listed[b.Help().Key] = true
				out[i] = append(out[i], b.Binding)
			}
		}
	}
	return out
}

// moveBindings are the moves of a pane with a selection, declared once
// for all of them: a row up or down, a page (page rows), to either end.
// move moves the selection by delta rows (the pane clamps).
func moveBindings(k KeyMap, page func() int, move func(delta int) tea.Cmd) []binding {
	by := func(delta func() int) func(tea.KeyMsg) tea.Cmd {
		return func(tea.KeyMsg) tea.Cmd { return move(delta()) }
	}
	return []binding{
		{Binding: k.Up, group: groupMove, action: by(func() int { return -1 })},
		{Binding: k.Down, group: groupMove, action: by(func() int { return 1 })},
		{Binding: k.PageUp, group: groupMove, action: by(func() int { return -page() })},
		{Binding: k.PageDown, group: groupMove, action: by(page)},
		{Binding: k.Top, group: groupMove, action: by(func() int { return -1 << 30 })},
		{Binding: k.Bottom, group: groupMove, action: by(func() int { return 1 << 30 })},
	}
}

// keysOf are the bindings' keys with a help line, for a pane's FullHelp.
func keysOf(bs []binding) []key.Binding {
	var out []key.Binding
	for _, b := range bs {
		if b.Help().Key != "" {
			out = append(out, b.Binding)
		}
	}
	return out
}

// paneBindings are the keys pane p declares: the Detail's move the
// trace's selection (also while the lesson takes its place).
func (m *Model) paneBindings(p pane) []binding {
	switch p {
	case paneExecs:
		return m.execs.bindings()
	case paneOutbox:
		return m.outbox.bindings()
	case paneDetail:
		return m.detail.bindings()
	}
	return m.trace.bindings()
}

// paneKey runs the focused pane's binding msg matches, its boxes sized
// first (a page is the rows shown) and its selection kept in view after.
func (m *Model) paneKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	m.sizePanes()
	cmd, ok := dispatch(m.paneBindings(m.focus), msg)
	if ok {
		m.clampScroll()
	}
	return cmd, ok
}

// offers says a key the footer would show works now: a key of the
// explorer's list only where it is enabled; any other (a component's own
// hint) always.
func (m *Model) offers(all []binding, b key.Binding) bool {
	for _, own := range all {
		if own.group != "" && own.Help().Key == b.Help().Key {
			return own.on()
		}
	}
	return true
}

// onKey answers a key: the overlays first, top down (each mode's box or
// question takes its keys before anything under it), then the focused
// pane's bindings, then the explorer's. ctrl+c quits from anywhere
// (killing the runs started here first, see interrupt).
func (m *Model) onKey(msg tea.KeyMsg) tea.Cmd {
	if burst := splitBurst(msg); burst != nil {
		cmds := make([]tea.Cmd, 0, len(burst))
		for _, one := range burst {
			cmds = append(cmds, m.onKey(one))
		}
		return tea.Batch(cmds...)
	}
	if msg.String() == "ctrl+c" {
		return m.interrupt()
	}
	if cmd, ok := m.modes.key(msg); ok {
		return cmd
	}
	if cmd, ok := m.paneKey(msg); ok {
		return cmd
	}
	cmd, _ := dispatch(m.bindings(), msg)
	return cmd
}
