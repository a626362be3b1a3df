package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// mode is an overlay: a box, page, question or mode over the panes (help,
// filter, picker, confirm, compare, lesson, the wait to quit) that takes
// keys before them while it is active. The top of the stack gets a key
// first; a mode that does not take it passes it down, and under the last
// one the explorer's bindings answer.
type mode struct {
	// name tells modes apart: a mode pushed again moves to the top.
	name string
	// active says it is still on; a mode no longer active leaves the stack.
	active func() bool
	// key answers a key; false passes it to what is under the mode.
	key func(msg tea.KeyMsg) (tea.Cmd, bool)
	// short is the footer's keys while it is the top; nil passes down.
	short func() []key.Binding
}

// modeStack is the explorer's overlays, the newest on top, and the state
// of leaving: a question waiting for y, a quit waiting for the runs.
type modeStack struct {
	stack []*mode
	// confirm is a destructive key waiting for y; waitingQuit says q
	// waits for the running workers to end; quitting that q or ctrl+c
	// ended the program.
	confirm               *confirmation
	waitingQuit, quitting bool
	// pendingQuit: q reads the running runs; typed holds the keys
	// typed meanwhile. killing: quitting waits for the kills it sent.
	pendingQuit, killing bool
	typed                []tea.KeyMsg
}

// push puts md on top (moving it there if it is on already).
func (s *modeStack) push(md *mode) {
	s.prune()
	for i, o := range s.stack {
		if o.name == md.name {
			s.stack = append(s.stack[:i], s.stack[i+1:]...)
			break
		}
	}
	s.stack = append(s.stack, md)
}

// prune drops the modes no longer active.
func (s *modeStack) prune() {
	kept := s.stack[:0]
	for _, md := range s.stack {
		if md.active() {
			kept = append(kept, md)
		}
	}
	s.stack = kept
}

// key offers msg to the modes, top down; ok is false when none took it.
func (s *modeStack) key(msg tea.KeyMsg) (tea.Cmd, bool) {
	s.prune()
	for i := len(s.stack) - 1; i >= 0; i-- {
		if cmd, ok := s.stack[i].key(msg); ok {
			s.prune()
			return cmd, true
		}
	}
	return nil, false
}

// shortHelp is the footer's keys of the top mode that has some; nil when
// none has (the panes' keys show).
func (s *modeStack) shortHelp() []key.Binding {
	s.prune()
	for i := len(s.stack) - 1; i >= 0; i-- {
		if s.stack[i].short == nil {
			continue
		}
		if keys := s.stack[i].short(); keys != nil {
			return keys
		}
	}
	return nil
}

// takesAll makes a mode's key function for a box that takes every key.
func takesAll(update func(tea.KeyMsg) tea.Cmd) func(tea.KeyMsg) (tea.Cmd, bool) {
	return func(msg tea.KeyMsg) (tea.Cmd, bool) { return update(msg), true }
}

// helpMode is the help page (?): any key pages it or closes it.
func (m *Model) helpMode() *mode {
	return &mode{name: "help", active: func() bool { return m.help.Shown() },
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.help.Update(msg) }), short: m.help.ShortHelp}
}

// filterMode is the executions filter's box (/): every key types.
func (m *Model) filterMode() *mode {
	return &mode{name: "filter", active: func() bool { return m.filter.Editing() },
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.updateFilter(msg) }), short: m.filter.ShortHelp}
}

// pickerMode is the scenario picker (n).
func (m *Model) pickerMode() *mode {
	return &mode{name: "picker", active: func() bool { return m.picker.Shown() },
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.picker.Update(msg) }), short: m.picker.ShortHelp}
}

// pickerWaitMode is an n pressed before the catalogue came: the keys typed
// after it are kept for the picker (its filter, enter), not taken by the
// panes under it; ctrl+c still quits.
func (m *Model) pickerWaitMode() *mode {
	return &mode{name: "picker-wait", active: m.picker.Pending,
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			if msg.String() == "ctrl+c" {
				return nil, false
			}
			m.picker.Queue(msg)
			return nil, true
		}}
}

// compareMode is the comparison (=): it draws its own footer.
func (m *Model) compareMode() *mode {
	return &mode{name: "compare", active: func() bool { return m.cmp.Shown() },
		key: takesAll(func(msg tea.KeyMsg) tea.Cmd { return m.cmp.Update(msg) })}
}

// confirmMode is a question waiting for y: its question is the footer.
func (m *Model) confirmMode() *mode {
	return &mode{name: "confirm", active: func() bool { return m.modes.confirm != nil },
		key: takesAll(m.onConfirmKey)}
}

// quitWaitMode is q waiting for the runs to end: esc stays.
func (m *Model) quitWaitMode() *mode {
	return &mode{name: "quit-wait", active: func() bool { return m.modes.waitingQuit },
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			if msg.String() != "esc" {
				return nil, false
			}
			m.modes.waitingQuit = false
			m.setFlash("staying: the run goes on", false)
			return nil, true
		},
		short: func() []key.Binding { return []key.Binding{hint("esc", "stay"), hint("ctrl+c", "quit now")} }}
}

// lessonMode is lesson mode (L): the lesson's bindings for the step in
// front, and every other key while a text has the keyboard (the
// prediction, the lesson to go to); the rest is the explorer's.
func (m *Model) lessonMode() *mode {
	return &mode{name: "lesson", active: func() bool { return m.lesson.On() },
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			if cmd, ok := dispatch(m.lesson.bindings(), msg); ok {
				return cmd, true
			}
			if m.lesson.Typing() && msg.String() != "ctrl+c" {
				return m.lesson.Type(msg), true
			}
			return nil, false
		},
		short: m.lesson.ShortHelp}
}
