package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/list"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
)

// pickerInfoLines is how many lines under the scenario list tell what the
// selected scenario teaches and the keys it needs.
const pickerInfoLines = 7

// scenarioItem is a scenario in the picker.
type scenarioItem struct{ s *scenario.Scenario }

func (i scenarioItem) Title() string       { return i.s.Name }
func (i scenarioItem) Description() string { return i.s.Title }
func (i scenarioItem) FilterValue() string { return i.s.Name + " " + i.s.Title }

// newPicker builds the scenario picker: bubbles' list, filtered as you
// type after /, paged, with its own q and help turned off (q types into
// the filter; the explorer's help is ?).
func newPicker(scenarios []*scenario.Scenario) list.Model {
	items := make([]list.Item, len(scenarios))
	for i, s := range scenarios {
		items[i] = scenarioItem{s}
	}
	d := list.NewDefaultDelegate()
	d.SetSpacing(0)
	l := list.New(items, d, 0, 0)
	l.Title = "Run which scenario? enter: run · /: filter · esc: cancel"
	l.SetShowHelp(false)
	// The status bar counts the items and the filtered; the page dots
	// count pages of the unfiltered list while a filter shows.
	l.SetShowPagination(false)
	l.KeyMap.Quit.SetEnabled(false)
	l.KeyMap.ForceQuit.SetEnabled(false)
	l.KeyMap.ShowFullHelp.SetEnabled(false)
	l.KeyMap.CloseFullHelp.SetEnabled(false)
	return l
}

// openPicker shows the picker over the scenario catalogue.
func (m *Model) openPicker() tea.Cmd {
	if len(m.scenarios) == 0 {
		m.setFlash("no scenarios in the catalogue", true)
		return nil
	}
	m.picker = newPicker(m.scenarios)
	m.picking = true
	m.sizePicker()
	return nil
}

// sizePicker fits the open picker to the screen.
func (m *Model) sizePicker() {
	if !m.picking {
		return
	}
	m.picker.SetSize(max(10, m.width-2), max(4, m.height-2-pickerInfoLines))
}

// onPickerKey: enter runs the selected scenario, esc closes (or clears the
// filter first), the rest goes to the list.
func (m *Model) onPickerKey(msg tea.KeyMsg) tea.Cmd {
	filtering := m.picker.FilterState() == list.Filtering
	switch msg.String() {
	case "ctrl+c":
		return m.quit()
	case "enter":
		if !filtering {
			it, ok := m.picker.SelectedItem().(scenarioItem)
			if !ok {
				return nil
			}
			m.picking = false
			return m.start(it.s.Name)
		}
	case "esc":
		if m.picker.FilterState() == list.Unfiltered {
			m.picking = false
			return nil
		}
	}
	before := m.picker.FilterValue()
	var cmd tea.Cmd
	m.picker, cmd = m.picker.Update(msg)
	if m.picker.FilterValue() != before {
		m.pickSeq++ // answers for the filter as it was are stale now
	}
	return m.pickerTag(cmd)
}

// pickerMsg is a picker list's own message (its filter's matches), tagged
// with the filter text's number. The list filters each key in a command of
// its own, and answers for an older text may come back last: only the
// newest text's are applied.
type pickerMsg struct {
	seq int
	msg tea.Msg
}

// pickerTag tags the list's filter answers with the filter's number.
func (m *Model) pickerTag(cmd tea.Cmd) tea.Cmd {
	seq := m.pickSeq
	return wrapMsgs(cmd, func(msg tea.Msg) tea.Msg {
		if _, ok := msg.(list.FilterMatchesMsg); ok {
			return pickerMsg{seq: seq, msg: msg}
		}
		return msg
	})
}

// onPickerMsg hands the list the newest filter text's answer.
func (m *Model) onPickerMsg(msg pickerMsg) tea.Cmd {
	if !m.picking || msg.seq != m.pickSeq {
		return nil
	}
	var cmd tea.Cmd
	m.picker, cmd = m.picker.Update(msg.msg)
	return m.pickerTag(cmd)
}

// pickerView is the list, then what the selected scenario teaches and the
// keys it needs.
func (m *Model) pickerView() string {
	lines := strings.Split(m.picker.View(), "\n")
	lines = append(lines, "")
	if it, ok := m.picker.SelectedItem().(scenarioItem); ok {
		lines = append(lines, scenarioInfo(it.s, m.width-2, pickerInfoLines-2, 3)...)
	}
	for len(lines) < m.height-3 {
		lines = append(lines, "")
	}
	lines = append(lines[:m.height-3], fmt.Sprintf("this run: keys %s · journal %s (K, J before n)", short(m.keysOn), short(m.journalOn)))
	return m.theme.box("Run a scenario", lines, m.width, m.height, true)
}

// scenarioInfo says what a scenario teaches and the explorer keys its
// script needs ("keys: n (run the scenario) → A …"), wrapped to width, in
// at most room lines of which the teaching takes at most teach.
func scenarioInfo(s *scenario.Scenario, width, room, teach int) []string {
	keys := "keys: " + byHand(lesson.NewStep(s))
	if len(s.Expect.Script) == 0 {
		keys = "keys: n (run the scenario)"
	}
	keyLines := strings.Split(wrapText(keys, width), "\n")
	teaches := strings.Join(strings.Fields(s.Teaches), " ")
	if teaches == "" {
		teaches = s.Title
	}
	teach = min(teach, room-len(keyLines))
	var out []string
	for _, l := range strings.Split(wrapText("teaches: "+teaches, width), "\n") {
		if len(out) == teach {
			out[len(out)-1] = fit(out[len(out)-1]+" …", width)
			break
		}
		out = append(out, l)
	}
	return append(out, keyLines...)
}

// scenarioOf is the catalogue's scenario of the execution in the trace.
func (m *Model) scenarioOf() *scenario.Scenario {
	if m.tr == nil {
		return nil
	}
	for _, s := range m.scenarios {
		if s.Name == m.tr.exec.Scenario {
			return s
		}
	}
	return nil
}
