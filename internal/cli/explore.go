package cli

import (
	"errors"
	"fmt"
	"os"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/tui"
)

// exploreFlags are the root command's explorer options.
type exploreFlags struct {
	run          string
	highContrast bool
	lesson       bool
	// temporal and namespace attach the explorer to a Temporal cluster
	// (by retrylab-temporal explore) instead of the database.
	temporal, namespace string
}

func (a *app) addExploreFlags(cmd *cobra.Command, f *exploreFlags) {
	cmd.Flags().StringVar(&f.run, "run", "", "start this scenario as soon as the explorer opens")
	cmd.Flags().BoolVar(&f.highContrast, "presenter", false, "high-contrast theme and roomier lesson text, for projectors")
	cmd.Flags().BoolVar(&f.lesson, "lesson", false, "open in lesson mode: the guided path, in the lessons' own database beside --db (never --db itself)")
	cmd.Flags().StringVar(&f.temporal, "temporal", "", "explore a Temporal cluster's workflows at this host:port instead, live and read-only (by retrylab-temporal explore)")
	cmd.Flags().StringVar(&f.namespace, "namespace", "default", "the Temporal namespace, with --temporal")
}

// explore opens the explorer on the database. It needs a terminal.
func (a *app) explore(f *exploreFlags) (err error) {
	// A --run the explorer could not start is said here, whole, not in a
	// status line cut to the terminal's width after the explorer opened.
	if f.run != "" {
		run, err := scenarioArg(f.run)
		if err != nil {
			return fmt.Errorf("--run: %w", err)
		}
		if _, err := scenario.NewCatalog(fixtures.FS).Get(run); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
		f.run = run
	}
	if !isatty.IsTerminal(os.Stdout.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return &exitError{code: 1, msg: "the explorer needs a terminal; without one use the headless commands, e.g.\n" +
			"  retrylab run naive     retrylab show     retrylab outbox     retrylab --help"}
	}
	if f.temporal != "" {
		return a.handToTemporal("explore", "--address", f.temporal, "--namespace", f.namespace)
	}
	h, _, err := a.connect()
	if err != nil {
		return err
	}
	defer a.releaseInto(h, &err)
	// The explorer filters executions: the host (this process's, or the
	// one attached to) builds the index the filter reads in the
	// background from now, so the first filter need not wait for it.
	if ix, ok := h.(interface{ IndexExecutions() }); ok {
		ix.IndexExecutions()
	}
	if tui.NoColor() {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	// Bubble Tea's init has already asked the terminal for its background
	// (once, before the program owns the terminal), so adaptive colours
	// never query it again.
	// A database of imported traces only is shown read-only: no scenario
	// of retrylab's ran there, so the explorer offers no run, resume, fault
	// or world key, and names no simulated outbox (engine.ImportsOnly).
	var src engine.Reader = h
	if f.run == "" {
		only, err := engine.OnlyImported(h)
		if err != nil {
			return err
		}
		if only {
			src = engine.ImportsOnly(h)
		}
	}
	opts := tui.Options{Source: src, Run: f.run, HighContrast: f.highContrast, Presenter: f.highContrast, Title: h.DBPath(), Lesson: f.lesson,
		FlashFor: tui.DefaultFlashFor}
	// Lessons wipe their database between steps, so they run in one of
	// their own beside the user's, opened the first time L is pressed.
	var (
		lessonMu   sync.Mutex
		lessonHost *control.Server
	)
	defer func() {
		lessonMu.Lock()
		defer lessonMu.Unlock()
		if lessonHost != nil {
			lessonHost.Close()
		}
	}()
	opts.OpenLessons = func() (*tui.LessonRoom, error) {
		lessonMu.Lock()
		defer lessonMu.Unlock()
		if lessonHost == nil {
			lh, err := a.openLessonHost()
			if err != nil {
				return nil, err
			}
			lessonHost = lh
		}
		s, err := lesson.Open(lessonHost.Host)
		if err != nil {
			return nil, err
		}
		// A fix's step ends with its difference from its mistake, as the
		// lesson command shows it (the mistake run on a scratch database
		// when this walk did not run it).
		pairs := lesson.NewPairs(lessonHost.Host, scratchOpener())
		return &tui.LessonRoom{Lessons: s, Source: lessonHost, Where: lessonHost.DBPath(), Diff: pairs.Line}, nil
	}
	return runOnTerminal(opts)
}

// runOnTerminal runs the explorer with opts on the terminal until it quits.
func runOnTerminal(opts tui.Options) error {
	defer collectLessOften()()
	m := tui.New(opts)
	defer m.Close()
	// Bubble Tea draws on a ticker, 60 times a second by default: a key's
	// frame waited up to 16.7 ms for it. At 120 (its most) the wait is at
	// most 8.3 ms; the idle cost stays under 1% of a core (BENCHMARKS.md 6).
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithFPS(explorerFPS))
	if _, err := p.Run(); errors.Is(err, tea.ErrInterrupted) {
		// A SIGINT from outside (the ctrl+c key is the explorer's own
		// quit, exit 0): an interrupted command's status, as when Ctrl-C
		// cuts short the wait for attached work after the screen closed.
		return &exitError{code: 130, msg: "interrupted"}
	} else if err != nil {
		return fmt.Errorf("explorer: %w", err)
	}
	return nil
}

// explorerFPS is the explorer's frame rate: Bubble Tea's highest.
const explorerFPS = 120
