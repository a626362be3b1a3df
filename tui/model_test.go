package tui

import (
	"reflect"
	"testing"
)

// TestModelIsSmall: the explorer's Model holds the source and its
// components, whose state is their own; it stays at most 20 fields.
func TestModelIsSmall(t *testing.T) {
	const most = 20
	if n := reflect.TypeOf(Model{}).NumField(); n > most {
		t.Errorf("tui.Model has %d fields; at most %d: give the new state to the component it belongs to", n, most)
	}
}

// TestOverlayOnTopTakesKeysFirst: the help opened while a question waits
// is not reachable (the question takes every key), and a filter opened
// over lesson mode takes the keys the lesson would.
func TestOverlayOnTopTakesKeysFirst(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 160, 36)
	press(t, m, "R")
	if m.modes.confirm == nil {
		t.Fatal("R asks first")
	}
	press(t, m, "?")
	if m.help.open || m.modes.confirm != nil {
		t.Fatalf("? answered the question (help open %v, question %v)", m.help.open, m.modes.confirm != nil)
	}
	press(t, m, "/", "n")
	if !m.filter.open || m.picker.open || m.filter.text != "n" {
		t.Fatalf("n in the filter box typed (box open %v, picker open %v, text %q)", m.filter.open, m.picker.open, m.filter.text)
	}
	press(t, m, "esc", "?")
	if !m.help.open {
		t.Fatal("? after the box closed opens the help")
	}
	press(t, m, "n")
	if m.help.open || m.picker.open {
		t.Fatalf("n on the help closes the help only (help %v, picker %v)", m.help.open, m.picker.open)
	}
	if len(m.modes.stack) != 0 {
		t.Errorf("closed overlays stay on the stack: %d", len(m.modes.stack))
	}
}
