package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// Keys typed after n, before the catalogue has come (a loaded machine, a
// host in another process), go to the picker when it opens: its filter,
// not the executions filter under it.
func TestPickerTypeAheadWaitsForTheCatalogue(t *testing.T) {
	t.Parallel()
	src := record(t, []string{"naive"})
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	// Only the size, not Init's reads: the catalogue has not come yet.
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	drive(t, m, cmd)
	for _, k := range []string{"n", "/", "j", "o", "u", "r"} {
		_, cmd := m.Update(keyMsg(k))
		drive(t, m, cmd)
	}
	if m.picker.Shown() || m.filter.Editing() {
		t.Fatalf("before the catalogue: picker shown %v, executions filter editing %v", m.picker.Shown(), m.filter.Editing())
	}
	drive(t, m, m.loadScenarios())
	if !m.picker.Shown() {
		t.Fatal("the picker did not open when the catalogue came")
	}
	if got := m.picker.list.FilterValue(); got != "jour" {
		t.Fatalf("picker filter %q, want the keys typed ahead: %q", got, "jour")
	}
	if m.filter.Editing() {
		t.Fatal("the keys typed ahead went to the executions filter")
	}
}
