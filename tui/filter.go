package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
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

// filterBox is the executions filter (/): a text box that applies as you
// type (after filterPause); enter keeps the text and closes the box, esc
// restores the filter the box opened with. text is the filter applied: the
// Model reads the list again whenever an Update changes it.
type filterBox struct {
	*Context
	input textinput.Model
	open  bool
	// text is the filter applied; before, the one the box opened with.
	text, before string
	width        int
}

func newFilterBox(ctx *Context) *filterBox {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "scenario, id, status, or ⚠ (dup) ✓ ☠"
	in.CharLimit = 64
	in.Cursor.SetMode(cursor.CursorStatic) // no blinking on a projector
	return &filterBox{Context: ctx, input: in}
}

var (
	filterKeep = hint("enter", "keep")
	filterUndo = hint("esc", "undo")
)

// Open shows the box with the filter applied, to edit.
func (f *filterBox) Open() tea.Cmd {
	f.open, f.before = true, f.text
	f.input.SetValue(f.text)
	return f.input.Focus()
}

// Clear drops the filter; false when there was none.
func (f *filterBox) Clear() bool {
	had := f.text != ""
	f.text = ""
	return had
}

// SetSize is the width of the executions pane the box shows in.
func (f *filterBox) SetSize(width, _ int) { f.width = width }

// Update edits the text on a key and applies the text typed once the
// pause after it passes (filterTypedMsg), unless more was typed since.
func (f *filterBox) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case filterTypedMsg:
		if f.open && msg.text == f.input.Value() {
			f.text = msg.text
		}
		return nil
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, filterKeep):
			f.open = false
			f.input.Blur()
			f.text = f.input.Value()
			return nil
		case key.Matches(msg, filterUndo):
			f.open = false
			f.input.Blur()
			f.text = f.before
			return nil
		}
		before := f.input.Value()
		var cmd tea.Cmd
		f.input, cmd = f.input.Update(msg)
		if text := f.input.Value(); text != before {
			cmd = tea.Batch(cmd, tea.Tick(filterPause, func(time.Time) tea.Msg { return filterTypedMsg{text: text} }))
		}
		return cmd
	}
	return nil
}

// View is the box's line, at the top of the executions pane.
func (f *filterBox) View() string { return f.input.View() }

// ShortHelp is the box's keys; every other key types.
func (f *filterBox) ShortHelp() []key.Binding {
	return []key.Binding{filterKeep, filterUndo, hint("ctrl+c", "quit")}
}

// FullHelp is the box's keys in one group.
func (f *filterBox) FullHelp() [][]key.Binding { return [][]key.Binding{f.ShortHelp()} }

// updateFilter hands msg to the filter box and reads the list again, from
// the first, when the filter applied changed.
func (m *Model) updateFilter(msg tea.Msg) tea.Cmd {
	before := m.filter.text
	cmd := m.filter.Update(msg)
	if m.filter.text == before {
		return cmd
	}
	m.execs.sel, m.execs.top = 0, 0
	return tea.Batch(cmd, m.loadExecs())
}
