package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestKeysInOneBurstAllCount: the reader hands keys typed together over as
// one message with several runes; each must act.
func TestKeysInOneBurstAllCount(t *testing.T) {
	m := open(t, article(t), 160, 40)
	press(t, m, "shift+tab")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	drive(t, m, cmd)
	if m.selID != "exec_7K2Q" {
		t.Fatalf("jj in one burst: selected %q, want the third execution exec_7K2Q", m.selID)
	}
	// A burst that opens the filter types the rest into it.
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/safe")})
	drive(t, m, cmd)
	if !m.filtering || m.filter.Value() != "safe" {
		t.Fatalf("/safe in one burst: filtering=%v value %q", m.filtering, m.filter.Value())
	}
}
