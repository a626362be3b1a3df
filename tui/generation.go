package tui

import tea "github.com/charmbracelet/bubbletea"

// sourced is a read's or action's result tagged with the source it came
// from. The explorer switches sources (the lessons' database and back), and
// a result of the old one that arrives after the switch must not land in
// the new one's panes.
type sourced struct {
	gen int
	msg tea.Msg
}

// fromSource says whether msg is a result of the shown source's reads or
// actions: the messages sourced tags.
func fromSource(msg tea.Msg) bool {
	switch msg.(type) {
	case execsMsg, wholeTimelineMsg, traceMsg, outboxMsg, scenariosMsg, noticesMsg, actionMsg, locatedMsg, armedMsg:
		return true
	}
	return false
}

// tag makes cmd's source results carry the current source generation,
// through batches; every other message passes as it is.
func (m *Model) tag(cmd tea.Cmd) tea.Cmd {
	gen := m.feed.gen
	return wrapMsgs(cmd, func(msg tea.Msg) tea.Msg {
		if fromSource(msg) {
			return sourced{gen: gen, msg: msg}
		}
		return msg
	})
}

// wrapMsgs applies wrap to the messages cmd produces, through batches.
func wrapMsgs(cmd tea.Cmd, wrap func(tea.Msg) tea.Msg) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case tea.BatchMsg:
			out := make(tea.BatchMsg, len(msg))
			for i, inner := range msg {
				out[i] = wrapMsgs(inner, wrap)
			}
			return out
		case sourced, pickerMsg:
			return msg
		default:
			return wrap(msg)
		}
	}
}
