package tui

import (
	"testing"

	"github.com/charmbracelet/x/exp/golden"
)

func TestGoldenHelpAt80x24(t *testing.T) {
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "execution completed", "?")
	mustShow(t, v, "help at 80×24", "Help · page 1 of 2", "Move", "Run", "next page")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenHelpAt80x24SecondPage(t *testing.T) {
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "execution completed", "?", "j")
	mustShow(t, v, "help page 2 at 80×24", "Help · page 2 of 2", "Markers", "Faults", "◆       unknown to caller; delivered")
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenTraceWithOutboxAt100x30(t *testing.T) {
	v := view(t, record(t, []string{"naive", "run"}), 100, 30, "duplicate send")
	mustShow(t, v, "100×30", "▶ Trace", "◆ timeout", "2 messages ← duplicate send")
	golden.RequireEqual(t, []byte(v))
}
