package tui

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Every colour of the themes renders, in every colour profile and on dark
// and light backgrounds, exactly as lipgloss renders the hex colour itself
// (converting it at each Render): inEveryProfile only does the conversion
// once.
func TestColoursRenderAsTheirHex(t *testing.T) {
	src, err := os.ReadFile("theme.go")
	if err != nil {
		t.Fatal(err)
	}
	hexes := regexp.MustCompile(`"(#[0-9A-Fa-f]{6})"`).FindAllStringSubmatch(string(src), -1)
	if len(hexes) < 40 {
		t.Fatalf("%d colours found in theme.go", len(hexes))
	}
	for _, profile := range []termenv.Profile{termenv.TrueColor, termenv.ANSI256, termenv.ANSI, termenv.Ascii} {
		for _, dark := range []bool{true, false} {
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(profile)
			r.SetHasDarkBackground(dark)
			for _, m := range hexes {
				hex := m[1]
				want := r.NewStyle().Foreground(lipgloss.Color(hex)).Background(lipgloss.Color(hex)).Render("x")
				c := lipgloss.CompleteAdaptiveColor{Light: inEveryProfile(hex), Dark: inEveryProfile(hex)}
				if got := r.NewStyle().Foreground(c).Background(c).Render("x"); got != want {
					t.Errorf("%s, profile %v, dark %v: %q, want %q", hex, profile, dark, got, want)
				}
				if profile == termenv.ANSI256 && !strings.Contains(want, "38;5;") {
					t.Fatalf("%s in 256 colours renders %q: no colour to compare", hex, want)
				}
			}
		}
	}
}
