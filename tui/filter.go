package tui

import (
	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// filterBox is the executions filter (/): a text box that applies as you
// type: each change reads the matching page from the host's index (engine
// FindExecutions, a few milliseconds at a million executions; the rule is
// engine/execindex's), and an answer to text typed over since is dropped.
// enter keeps the text and closes the box, esc restores the filter the box
// opened with. text is the filter applied: the Model reads the list again
// whenever an Update changes it.
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

// bindings are the box's keys, declared once: enter keeps the text and
// closes the box, esc restores the filter it opened with; every other key
// types (and ctrl+c quits, as everywhere).
func (f *filterBox) bindings() []binding {
	return []binding{
		{Binding: hint("enter", "keep"), action: func(tea.KeyMsg) tea.Cmd {
			f.open = false
			f.input.Blur()
			f.text = f.input.Value()
			return nil
		}},
		{Binding: hint("esc", "undo"), action: func(tea.KeyMsg) tea.Cmd {
			f.open = false
			f.input.Blur()
			f.text = f.before
			return nil
		}},
		{Binding: hint("ctrl+c", "quit"), action: func(tea.KeyMsg) tea.Cmd { return nil }}, // the explorer's: listed here
	}
}

// Open shows the box with the filter applied, to edit.
func (f *filterBox) Open() tea.Cmd {
	f.open, f.before = true, f.text
	f.input.SetValue(f.text)
	return f.input.Focus()
}

// Text is the filter applied ("" for none).
func (f *filterBox) Text() string { return f.text }

// Editing says the box is open and takes the keys.
func (f *filterBox) Editing() bool { return f.open }

// Clear drops the filter; false when there was none.
func (f *filterBox) Clear() bool {
	had := f.text != ""
	f.text = ""
	return had
}

// SetSize is the width of the executions pane the box shows in.
func (f *filterBox) SetSize(width, _ int) { f.width = width }

// Update edits the text on a key; the text typed applies at once.
func (f *filterBox) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if cmd, ok := dispatch(f.bindings(), km); ok {
		return cmd
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(km)
	f.text = f.input.Value()
	return cmd
}

// View is the box's line, at the top of the executions pane.
func (f *filterBox) View() string { return f.input.View() }

// ShortHelp is the box's keys; every other key types.
func (f *filterBox) ShortHelp() []key.Binding { return shortOf(f.bindings()) }

// FullHelp is the box's keys in one group.
func (f *filterBox) FullHelp() [][]key.Binding { return [][]key.Binding{f.ShortHelp()} }

// openFilter opens the filter box over the executions pane.
func (m *Model) openFilter() tea.Cmd {
	cmd := m.filter.Open()
	m.modes.push(m.filterMode())
	return cmd
}

// updateFilter hands msg to the filter box and reads the list again, from
// the first, when the filter applied changed.
func (m *Model) updateFilter(msg tea.Msg) tea.Cmd {
	before := m.filter.Text()
	cmd := m.filter.Update(msg)
	if m.filter.Text() == before {
		return cmd
	}
	m.execs.Home()
	return tea.Batch(cmd, m.loadExecs())
}
