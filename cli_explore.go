package main

import (
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/tui"
)

// exploreFlags are the root command's explorer options.
type exploreFlags struct {
	run          string
	highContrast bool
	lesson       bool
}

func (a *app) addExploreFlags(cmd *cobra.Command, f *exploreFlags) {
	cmd.Flags().StringVar(&f.run, "run", "", "start this scenario as soon as the explorer opens")
	cmd.Flags().BoolVar(&f.highContrast, "presenter", false, "high-contrast theme and roomier lesson text, for projectors")
	cmd.Flags().BoolVar(&f.lesson, "lesson", false, "open in lesson mode: the guided path through the catalogue")
}

// explore opens the explorer on the database. It needs a terminal.
func (a *app) explore(f *exploreFlags) error {
	if !isatty.IsTerminal(os.Stdout.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return &exitError{code: 1, msg: "the explorer needs a terminal; without one use the headless commands, e.g.\n" +
			"  retrylab run naive     retrylab show     retrylab outbox     retrylab --help"}
	}
	h, err := a.service()
	if err != nil {
		return err
	}
	defer h.Close()
	if tui.NoColor() {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	// Bubble Tea's init has already asked the terminal for its background
	// (once, before the program owns the terminal), so adaptive colours
	// never query it again.
	opts := tui.Options{Source: h, Run: f.run, HighContrast: f.highContrast, Presenter: f.highContrast, Title: h.DBPath(), Lesson: f.lesson}
	if host, ok := h.(*engine.Host); ok {
		// Lessons reset the database between steps, so only the process
		// that owns it offers them.
		if s, err := lesson.Open(host); err == nil {
			opts.Lessons = s
		} else if f.lesson {
			return err
		}
	} else if f.lesson {
		return &exitError{code: 1, msg: "lesson mode needs its own database: another retrylab owns " + a.dbPath + " (close it, or use --db)"}
	}
	m := tui.New(opts)
	defer m.Close()
	// Bubble Tea draws on a ticker, 60 times a second by default: a key's
	// frame waited up to 16.7 ms for it. At 120 (its most) the wait is at
	// most 8.3 ms; the idle cost stays under 1% of a core (BENCHMARKS.md 6).
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithFPS(explorerFPS))
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("explorer: %w", err)
	}
	return nil
}

// explorerFPS is the explorer's frame rate: Bubble Tea's highest.
const explorerFPS = 120
