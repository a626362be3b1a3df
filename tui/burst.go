package tui

import tea "github.com/charmbracelet/bubbletea"

// splitBurst breaks keys typed faster than the terminal reader reads them
// (tmux send-keys -l jjj, a held key, a fast typist) into one message per
// key. The reader hands such a burst over as one KeyRunes message with
// several runes, and the keymap matches single keys only, so without this
// every key of the burst is dropped. Each key goes through onKey in turn,
// so a key that opens a text box (/) sends the rest of the burst into it.
// A bracketed paste is text for a box and stays whole; nil means msg is a
// single key.
func splitBurst(msg tea.KeyMsg) []tea.KeyMsg {
	if msg.Type != tea.KeyRunes || len(msg.Runes) < 2 || msg.Paste {
		return nil
	}
	out := make([]tea.KeyMsg, len(msg.Runes))
	for i, r := range msg.Runes {
		out[i] = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}
	}
	return out
}
