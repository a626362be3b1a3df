package tui

import (
	"os"
	"strconv"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Theme holds every style the explorer uses, built once. Colours adapt to
// dark and light terminals; the high-contrast theme is for projectors.
type Theme struct {
	Pane, PaneFocused     lipgloss.Style
	Title, TitleFocused   lipgloss.Style
	Selected, Linked      lipgloss.Style
	Dim, Bold             lipgloss.Style
	OK, Warn, Bad, Info   lipgloss.Style
	Dedup, Replay, Killed lipgloss.Style
	Status, StatusKey     lipgloss.Style
}

// inEveryProfile is a hex colour as each colour profile a terminal may
// have shows it, worked out once: lipgloss converts a hex colour to a 256-
// or 16-colour terminal's nearest at every Render (distances in HSLuv, a
// tenth of the explorer's CPU while spans arrive and the list redraws), and
// takes these codes as they are. They are termenv's own conversions, so a
// terminal shows what it showed.
func inEveryProfile(hex string) lipgloss.CompleteColor {
	code := func(c termenv.Color) string {
		switch v := c.(type) {
		case termenv.ANSI256Color:
			return strconv.Itoa(int(v))
		case termenv.ANSIColor:
			return strconv.Itoa(int(v))
		}
		return ""
	}
	return lipgloss.CompleteColor{TrueColor: hex, ANSI256: code(termenv.ANSI256.Color(hex)), ANSI: code(termenv.ANSI.Color(hex))}
}

// NoColor reports whether the NO_COLOR convention asks for no colour.
func NoColor() bool {
	_, set := os.LookupEnv("NO_COLOR")
	return set
}

// NewTheme builds the default theme, or the high-contrast one.
func NewTheme(highContrast bool) Theme {
	c := func(light, dark string) lipgloss.TerminalColor {
		return lipgloss.CompleteAdaptiveColor{Light: inEveryProfile(light), Dark: inEveryProfile(dark)}
	}
	accent, border, dim := c("#5A56E0", "#7D79F6"), c("#BBBBBB", "#555555"), c("#777777", "#8A8A8A")
	green, yellow, red, blue, magenta := c("#1A7F37", "#3FB950"), c("#9A6700", "#D29922"), c("#CF222E", "#F85149"), c("#0969DA", "#58A6FF"), c("#8250DF", "#BC8CFF")
	selBg := c("#DDDDFF", "#2F2F5F")
	linkBg := c("#FFF1C2", "#4A3F10")
	if highContrast {
		accent, border, dim = c("#000000", "#FFFFFF"), c("#000000", "#FFFFFF"), c("#333333", "#DDDDDD")
		green, yellow, red, blue, magenta = c("#005A00", "#7CFF7C"), c("#6B4A00", "#FFE14D"), c("#A00000", "#FF7070"), c("#003C9E", "#8CC8FF"), c("#5A00A0", "#E0A0FF")
		selBg, linkBg = c("#FFFF00", "#0000AA"), c("#C0FFC0", "#005500")
	}
	t := Theme{
		Pane:         lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(border),
		PaneFocused:  lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent),
		Title:        lipgloss.NewStyle().Foreground(dim),
		TitleFocused: lipgloss.NewStyle().Foreground(accent).Bold(true),
		Selected:     lipgloss.NewStyle().Background(selBg).Bold(true),
		Linked:       lipgloss.NewStyle().Background(linkBg),
		Dim:          lipgloss.NewStyle().Foreground(dim),
		Bold:         lipgloss.NewStyle().Bold(true),
		OK:           lipgloss.NewStyle().Foreground(green),
		Warn:         lipgloss.NewStyle().Foreground(yellow).Bold(true),
		Bad:          lipgloss.NewStyle().Foreground(red).Bold(true),
		Info:         lipgloss.NewStyle().Foreground(blue),
		Dedup:        lipgloss.NewStyle().Foreground(blue).Bold(true),
		Replay:       lipgloss.NewStyle().Foreground(magenta).Bold(true),
		Killed:       lipgloss.NewStyle().Foreground(red).Bold(true),
		Status:       lipgloss.NewStyle().Foreground(dim),
		StatusKey:    lipgloss.NewStyle().Foreground(accent).Bold(true),
	}
	if highContrast {
		t.Pane = t.Pane.Border(lipgloss.ThickBorder())
		t.PaneFocused = t.PaneFocused.Border(lipgloss.DoubleBorder())
	}
	return t
}
