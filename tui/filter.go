package tui

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/history"
)

// filterPause is how long the executions filter waits after a key before
// it reads: a word typed quickly costs one read, not one per letter.
const filterPause = 100 * time.Millisecond

// filterTypedMsg applies the filter text typed, unless more was typed since.
type filterTypedMsg struct{ text string }

// markerStatus is the status a list marker stands for.
var markerStatus = map[string]history.Status{
	"✓": history.StatusCompleted, "●": history.StatusRunning, "☠": history.StatusKilled,
	"⚑": history.StatusEscalated, "✖": history.StatusFailed,
}

// wantsDuplicates says whether a filter asks for executions whose
// deliveries include a duplicate: the ⚠ marker, or a word for it (a
// terminal seldom types ⚠).
func wantsDuplicates(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return t == "⚠" || t == "!" || (len(t) >= 3 && strings.HasPrefix("duplicates", t))
}

// matchExecution says whether x answers a filter: its id, scenario, status
// or policy contains the text, or the text is the badge x shows in the list
// (⚠, ✓, ☠, ●, ⚑, ✖; dup or ! for ⚠). Deliveries are read only for a marker.
func matchExecution(src Source, x history.Execution, text string) bool {
	t := strings.TrimSpace(text)
	dup := func() bool {
		msgs, err := src.MessagesFor(x.ID)
		return err == nil && hasDuplicate(msgs)
	}
	if st, ok := markerStatus[t]; ok {
		return x.Status == st && !dup() // ⚠ outranks the status badge
	}
	if wantsDuplicates(t) {
		return dup()
	}
	return containsFold(x.ID, t) || containsFold(x.Scenario, t) || containsFold(string(x.Status), t) || containsFold(x.Policy.String(), t)
}

// onFilterKey edits the executions filter, which applies as you type
// (after filterPause); enter keeps it and closes the box, esc restores the
// filter the box opened with.
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
		cmd = tea.Batch(cmd, tea.Tick(filterPause, func(time.Time) tea.Msg { return filterTypedMsg{text: text} }))
	}
	return cmd
}

// onFilterTyped applies the text typed if the box still holds it.
func (m *Model) onFilterTyped(msg filterTypedMsg) tea.Cmd {
	if !m.filtering || msg.text != m.filter.Value() {
		return nil
	}
	return m.applyFilter(msg.text)
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
