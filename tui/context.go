package tui

import (
	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
)

// Context is what the explorer's components share: the theme, the keymap
// and the screen size. The Model owns it and every component holds the
// same pointer, so a resize or a theme is set once (the shape of
// soft-serve's ui/common and gh-dash's program context).
type Context struct {
	theme         Theme
	keys          KeyMap
	width, height int
	// focus is the pane the keys move.
	focus pane
	// can is what the source shown can do besides reading.
	can roles
}

// newContext is the shared context of a new explorer.
func newContext(highContrast bool) *Context {
	return &Context{theme: NewTheme(highContrast), keys: DefaultKeyMap(), focus: paneTrace}
}

// showing is told the source shown (at the start, and at each switch):
// the bindings of what it cannot do are off from then (binding.enabled),
// so neither the dispatch nor the footer nor the help offers them.
func (c *Context) showing(src Source) { c.can = rolesOf(src) }

// component is one pane or overlay of the explorer: it takes messages in
// Update, draws itself in View, is told its size in SetSize, and says its
// own keys (help.KeyMap) for the footer's short help and the help page.
// Update and View never block: reads and actions are tea.Cmds.
type component interface {
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(width, height int)
	help.KeyMap
}

// The explorer's components.
var (
	_ component = (*helpPage)(nil)
	_ component = (*filterBox)(nil)
	_ component = (*scenarioPicker)(nil)
	_ component = (*comparePane)(nil)
	_ component = (*outboxPane)(nil)
	_ component = (*execsPane)(nil)
	_ component = (*tracePane)(nil)
	_ component = (*detailPane)(nil)
	_ component = (*lessonPane)(nil)
)
