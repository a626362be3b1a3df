package main

import (
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

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
	h, owned, err := a.connect()
	if err != nil {
		return err
	}
	defer a.release(h)
	if tui.NoColor() {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	// Bubble Tea's init has already asked the terminal for its background
	// (once, before the program owns the terminal), so adaptive colours
	// never query it again.
	opts := tui.Options{Source: h, Run: f.run, HighContrast: f.highContrast, Presenter: f.highContrast, Title: h.DBPath(), Lesson: f.lesson}
	if owned != nil {
		// Lessons reset the database between steps, so only the process
		// that owns it offers them.
		if s, err := lesson.Open(owned); err == nil {
			opts.Lessons = s
		} else if f.lesson {
			return err
		}
	} else if f.lesson {
		return &exitError{code: 1, msg: "lesson mode needs its own database: another retrylab owns " + a.dbPath + " (close it, or use --db)"}
	}
	m := tui.New(opts)
	defer m.Close()
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion())
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("explorer: %w", err)
	}
	return nil
}
