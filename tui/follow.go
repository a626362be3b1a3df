package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// locatedMsg says where an execution stands in the list, newest first.
type locatedMsg struct {
	id    string
	index int
	found bool
	err   error
}

// locate finds id's place in the executions list. A run started here
// goes first (the list is by last activity), unless another started since
// went above it, so the explorer looks rather than assume it is the
// newest.
func (m *Model) locate(id string) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		const page = 512
		for skip := 0; ; skip += page {
			list, total, err := src.Executions(skip, page)
			if err != nil {
				return locatedMsg{id: id, err: err}
			}
			for i, x := range list {
				if x.ID == id {
					return locatedMsg{id: id, index: skip + i, found: true}
				}
			}
			if len(list) == 0 || skip+page >= total {
				return locatedMsg{id: id}
			}
		}
	}
}

// onLocated moves the selection to the execution the explorer was told to
// follow (the run it started), so its trace is the one shown and x kills it.
func (m *Model) onLocated(msg locatedMsg) tea.Cmd {
	if msg.id != m.runs.follow {
		return nil // a newer run took over
	}
	if msg.err != nil {
		m.setFlash(oneLine(msg.err.Error()), true)
		return nil
	}
	if !msg.found {
		return nil
	}
	m.runs.follow = ""
	m.sizePanes()
	m.execs.moveTo(msg.index)
	// The trace follows the new run's tail: the selection on the last row
	// is what keeps it there as the run goes on.
	if m.selID != msg.id {
		m.selID = ""
		m.trace.Forget()
	} else {
		m.trace.SelectLast()
		m.clampScroll()
	}
	return m.loadExecs()
}

// killTarget is the execution x kills: the selected one when its worker
// runs, else the run this explorer started last, else any running one.
func killTarget(selected, started string, running []string) string {
	switch {
	case contains(running, selected):
		return selected
	case contains(running, started):
		return started
	case len(running) > 0:
		return running[0]
	}
	return selected
}
