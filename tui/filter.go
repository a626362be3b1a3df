package tui

import tea "github.com/charmbracelet/bubbletea"

// onFilterKey edits the executions filter, which applies as you type: each
// change reads the matching page from the host's index (engine
// FindExecutions, a few milliseconds at a million executions), and an
// answer to text typed over since is dropped. Enter keeps the filter and
// closes the box; esc restores the filter the box opened with.
func (m *Model) onFilterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "enter":
		m.filtering = false
		m.filter.Blur()
		return m.applyFilter(m.filter.Value())
	case "esc":
		m.filtering = false
		m.filter.Blur()
		return m.applyFilter(m.filterBefore)
	}
	before := m.filter.Value()
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(msg)
	if text := m.filter.Value(); text != before {
		cmd = tea.Batch(cmd, m.applyFilter(text))
	}
	return cmd
}

// applyFilter shows the executions that answer text, from the first.
func (m *Model) applyFilter(text string) tea.Cmd {
	if text == m.filterText {
		return nil
	}
	m.filterText = text
	m.execSel, m.execTop = 0, 0
	return m.loadExecs()
}
