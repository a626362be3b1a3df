package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// filterBox is the executions filter (/): a text box that applies as you
// type: each change reads the matching page from the host's index (engine
// FindExecutions, a few milliseconds at a million executions; the rule is
// engine/execindex's), and an answer to text typed over since is dropped.
// enter keeps the text and closes the box, esc restores the filter the box
// opened with. Opened again on a kept filter, the box shows it selected:
// the first letter typed replaces it, backspace clears it, an arrow (or
// home, end) edits it. text is the filter applied: the Model reads the list again
// whenever an Update changes it.
type filterBox struct {
	*Context
	input textinput.Model
	open  bool
	// text is the filter applied; before, the one the box opened with.
	text, before string
	width        int
	// hidden counts the executions that arrived since the filter applied
	// and that it does not match; counted is the filter it counts for,
	// all and matched the list's length and the filter's at the last read.
	hidden, all, matched int
	counted              string
	// back is the tab the box was opened from where the panes are tabs
	// (the box shows over the executions), to go back to on esc; -1 where
	// they are not. undone says esc closed the box.
	back   pane
	undone bool
	// selected says the kept filter the box opened with is selected: the
	// next key typed replaces it (selectedStyle shows it so).
	selected bool
}

func newFilterBox(ctx *Context) *filterBox {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "scenario, id, status, or ⚠ (dup) ◇ (pos) ✓ ☠"
	in.CharLimit = 64
	in.Cursor.SetMode(cursor.CursorStatic) // no blinking on a projector
	return &filterBox{Context: ctx, input: in, back: -1}
}

// bindings are the box's keys, declared once: enter keeps the text and
// closes the box, esc restores the filter it opened with; every other key
// types (and ctrl+c quits, as everywhere).
func (f *filterBox) bindings() []binding {
	return []binding{
		{Binding: hint("enter", "keep"), action: func(tea.KeyMsg) tea.Cmd {
			f.open = false
			f.setSelected(false)
			f.input.Blur()
			f.text = f.input.Value()
			return nil
		}},
		{Binding: hint("esc", "undo"), action: func(tea.KeyMsg) tea.Cmd {
			f.open, f.undone = false, true
			f.setSelected(false)
			f.input.Blur()
			f.text = f.before
			return nil
		}},
		{Binding: hint("ctrl+c", "quit"), action: func(tea.KeyMsg) tea.Cmd { return nil }}, // the explorer's: listed here
	}
}

// Open shows the box with the filter applied, to edit; from is the tab
// to go back to when esc closes it (-1: none).
func (f *filterBox) Open(from pane) tea.Cmd {
	f.open, f.before = true, f.text
	f.back, f.undone = from, false
	f.input.SetValue(f.text)
	f.setSelected(f.text != "")
	return f.input.Focus()
}

// setSelected selects the box's text (the kept filter) or lets it go,
// and draws it so.
func (f *filterBox) setSelected(on bool) {
	f.selected = on
	f.input.TextStyle = lipgloss.NewStyle()
	if on {
		f.input.TextStyle = f.theme.Selected
	}
}

// unselect is what a key does to the selected text before it edits: a
// letter typed or backspace drops it (the letter then types on an empty
// box); any other key (an arrow, home, end) keeps it, to edit.
func (f *filterBox) unselect(km tea.KeyMsg) {
	if !f.selected {
		return
	}
	switch km.Type {
	case tea.KeyRunes, tea.KeySpace, tea.KeyBackspace, tea.KeyDelete, tea.KeyCtrlU:
		f.input.SetValue("")
	}
	f.setSelected(false)
}

// BackTo is the tab to show again once the box closed: the one it was
// opened from when esc closed it; ok false otherwise, or once asked.
func (f *filterBox) BackTo() (p pane, ok bool) {
	if f.open || f.back < 0 {
		return 0, false
	}
	p, ok = f.back, f.undone
	f.back = -1
	return p, ok
}

// Text is the filter applied ("" for none).
func (f *filterBox) Text() string { return f.text }

// Editing says the box is open and takes the keys.
func (f *filterBox) Editing() bool { return f.open }

// Clear drops the filter; false when there was none.
func (f *filterBox) Clear() bool {
	had := f.text != ""
	f.text = ""
	f.hidden, f.counted = 0, ""
	return had
}

// Observe takes a read of the list under filter: all executions, matched
// by the filter. Executions that arrived since the last read and that the
// filter does not match are counted (Hidden) while the filter stays.
func (f *filterBox) Observe(filter string, all, matched int) {
	if filter == "" || filter != f.text {
		return
	}
	if filter != f.counted {
		f.counted, f.hidden = filter, 0
	} else if grew := (all - f.all) - (matched - f.matched); grew > 0 {
		f.hidden += grew
	}
	f.all, f.matched = all, matched
}

// Hidden is how many executions arrived since the filter applied that it
// does not match.
func (f *filterBox) Hidden() int {
	if f.counted != f.text {
		return 0
	}
	return f.hidden
}

// State is the filter applied as the footer says it on every tab:
// "/naive", and the executions it hides that arrived since; "" for none.
func (f *filterBox) State() string {
	if f.text == "" {
		return ""
	}
	if n := f.Hidden(); n > 0 {
		return fmt.Sprintf("/%s (%d new, hidden by the filter)", f.text, n)
	}
	return "/" + f.text
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
	del := f.selected && (km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete || km.Type == tea.KeyCtrlU)
	f.unselect(km)
	var cmd tea.Cmd
	if !del { // backspace on the selection cleared it: no more to delete
		f.input, cmd = f.input.Update(km)
	}
	f.text = f.input.Value()
	return cmd
}

// View is the box's line, at the top of the executions pane.
func (f *filterBox) View() string { return f.input.View() }

// ShortHelp is the box's keys; every other key types.
func (f *filterBox) ShortHelp() []key.Binding { return shortOf(f.bindings()) }

// FullHelp is the box's keys in one group.
func (f *filterBox) FullHelp() [][]key.Binding { return [][]key.Binding{f.ShortHelp()} }

// openFilter opens the filter box over the executions pane. Where the
// panes are tabs, it shows the Executions tab while the box is open, so
// the list it filters is on screen; esc goes back to the tab it was
// opened from, enter stays on the list filtered.
func (m *Model) openFilter() tea.Cmd {
	from := pane(-1)
	if m.width > 0 && !m.wide() && m.focus != paneExecs {
		from, m.focus = m.focus, paneExecs
		m.sizePanes()
	}
	cmd := m.filter.Open(from)
	m.modes.push(m.filterMode())
	return cmd
}

// forgetFilterAndMark drops the filter and the comparison's mark: after
// an erase, a lesson's fresh database or another source, they would name
// executions that are gone.
func (m *Model) forgetFilterAndMark() {
	m.filter.Clear()
	m.cmp.Mark("")
}

// updateFilter hands msg to the filter box and reads the list again, from
// the first, when the filter applied changed.
func (m *Model) updateFilter(msg tea.Msg) tea.Cmd {
	before := m.filter.Text()
	cmd := m.filter.Update(msg)
	if back, ok := m.filter.BackTo(); ok {
		m.focus = back
		m.sizePanes()
	}
	if m.filter.Text() == before {
		return cmd
	}
	m.execs.Home()
	return tea.Batch(cmd, m.loadExecs())
}
