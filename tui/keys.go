package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyMap is every key the explorer answers to, with its help text.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Expand, Collapse, Toggle                key.Binding
	NextPane, PrevPane, Filter              key.Binding
	// Escape is esc where no fault is to disarm: it clears a kept filter
	// (and closes a box, as it does everywhere).
	Escape key.Binding

	Run, Resume, KillNow                       key.Binding
	TimeoutAfter, TimeoutBefore                key.Binding
	CrashAfterEffect, CrashAfterRecord, Disarm key.Binding

	ToggleKeys, ToggleJournal, DeleteJournal key.Binding
	AdvanceClock, ResetWorld, FinalOnly      key.Binding
	StartClean, NextGroup                    key.Binding
	OutboxTab, Lesson, Help, Quit            key.Binding
	// QuitNow is ctrl+c, which quits from anywhere without asking
	// (Model.onKey reads it before any binding): listed for the help.
	QuitNow                key.Binding
	MarkExec, Compare      key.Binding
	Slide, Room            key.Binding
	Messages, ScrollDetail key.Binding
	Slow                   key.Binding
}

// DefaultKeyMap is the explorer's keymap.
func DefaultKeyMap() KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Up:       b("↑/k", "up", "up", "k"),
		Down:     b("↓/j", "down", "down", "j"),
		PageUp:   b("pgup/^u", "page up", "pgup", "ctrl+u"),
		PageDown: b("pgdn/^d", "page down", "pgdown", "ctrl+d"),
		Top:      b("g/home", "first", "g", "home"),
		Bottom:   b("G/end", "last", "G", "end"),
		Expand:   b("→/l", "expand", "right", "l"),
		Collapse: b("←/h", "collapse", "left", "h"),
		Toggle:   b("enter", "expand/collapse", "enter", " "),
		NextPane: b("tab", "next pane", "tab"),
		PrevPane: b("S-tab", "previous pane", "shift+tab"),
		Filter:   b("/", "filter executions", "/"),
		Escape:   b("esc", "clear the filter / close", "esc"),
		// One binding, two keys: ] scrolls down, [ up.
		ScrollDetail: b("]/[", "scroll the detail", "]", "["),

		Run:              b("n", "run a scenario (picker)", "n"),
		Resume:           b("r", "resume selected execution", "r"),
		KillNow:          b("x", "kill the worker now", "x"),
		TimeoutAfter:     b("t", "arm: timeout after effect", "t"),
		TimeoutBefore:    b("T", "arm: timeout before effect", "T"),
		CrashAfterEffect: b("c", "arm: crash, effect unrecorded", "c"),
		CrashAfterRecord: b("C", "arm: crash after recording", "C"),
		Disarm:           b("esc", "clear filter / disarm / close", "esc"),

		ToggleKeys:    b("K", "toggle idempotency keys", "K"),
		ToggleJournal: b("J", "toggle journal", "J"),
		DeleteJournal: b("D", "delete journal record (asks)", "D"),
		AdvanceClock:  b("A", "clock +25 h: keys expire", "A"),
		ResetWorld:    b("R", "reset the world (asks)", "R"),
		StartClean:    b("E", "erase all: start clean (asks)", "E"),
		NextGroup:     b("N", "next group: E, lessons over", "N"),
		FinalOnly:     b("f", "final attempt only / all", "f"),

		OutboxTab: b("o", "outbox / CRM", "o"),
		Lesson:    b("L", "lesson mode: the guided path", "L"),
		Help:      b("?", "help", "?"),
		Quit:      b("q", "quit", "q", "ctrl+c"),
		QuitNow:   b("ctrl+c", "quit at once", "ctrl+c"),

		MarkExec: b("m", "mark to compare", "m"),
		Compare:  b("=", "compare with the marked one", "="),

		Slide:    b("s", "slide: the selection, large", "s"),
		Room:     b("P", "the room: every participant", "P"),
		Messages: b("M", "status messages in full", "M"),
		Slow:     b("S", "slow motion on/off: runs wait 2s per attempt", "S"),
	}
}

// footerWords are the footer's words for the keys the short help shows:
// the help page's line is the binding's own description, the footer's is
// this word for the same binding.
var footerWords = map[string]string{
	"n": "run", "t": "timeout", "c": "crash", "r": "resume", "f": "final-only", "?": "help", "q": "quit",
	"/": "filter", "m": "mark", "=": "compare", "o": "outbox/CRM", "x": "kill", "esc": "disarm",
	"↑/k": "up", "↓/j": "down", "enter": "expand",
}

// optional are the footer's keys it drops first when narrow; run, crash,
// resume, filter, help and quit stay.
var optional = map[string]bool{"t": true, "f": true, "m": true, "=": true, "x": true, "esc": true, "o": true}

// word is b as the footer shows it: the same keys, the footer's word.
func word(b key.Binding) key.Binding {
	w, ok := footerWords[b.Help().Key]
	if !ok {
		return b
	}
	c := b
	c.SetHelp(b.Help().Key, w)
	return c
}

// words is word of each binding.
func words(bs ...key.Binding) []key.Binding {
	out := make([]key.Binding, len(bs))
	for i, b := range bs {
		out[i] = word(b)
	}
	return out
}

// hint is a binding shown in the footer only, for a key a pane reads
// itself (a text box's enter, a lesson's esc).
func hint(k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}

// ShortHelp is the footer's reminder over the trace: the keys a presenter
// reaches for.
func (k KeyMap) ShortHelp() []key.Binding {
	return words(k.Run, k.TimeoutAfter, k.CrashAfterEffect, k.Resume, k.FinalOnly, k.Help, k.Quit)
}

// moveDelta is how many rows a move key moves a selection: ±1 for up and
// down, ±page for the page keys, far past either end for top and bottom (the
// pane clamps). ok is false for any other key.
func (k KeyMap) moveDelta(msg tea.KeyMsg, page int) (delta int, ok bool) {
	switch {
	case key.Matches(msg, k.Up):
		return -1, true
	case key.Matches(msg, k.Down):
		return 1, true
	case key.Matches(msg, k.PageUp):
		return -page, true
	case key.Matches(msg, k.PageDown):
		return page, true
	case key.Matches(msg, k.Top):
		return -1 << 30, true
	case key.Matches(msg, k.Bottom):
		return 1 << 30, true
	}
	return 0, false
}
