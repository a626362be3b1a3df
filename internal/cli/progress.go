package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-isatty"
)

// onTerminal reports whether w is a terminal, where a progress bar can be
// drawn. A character device is not enough: /dev/null is one.
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressMsg is one report of a long job: how far it is, and the lines
// to show under the bar.
type progressMsg struct {
	frac  float64
	lines []string
}

type progressDoneMsg struct{}

// progressModel is the Bubble Tea program long jobs (chaos, gen) run
// under: a bubbles progress bar and a few lines of figures. q or ctrl+c
// cancel the job.
type progressModel struct {
	bar    progress.Model
	last   progressMsg
	cancel context.CancelFunc
}

func (m progressModel) Init() tea.Cmd { return nil }

func (m progressModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.bar.Width = max(min(msg.Width-6, 80), 10)
	case progressMsg:
		m.last = msg
	case progressDoneMsg:
		return m, tea.Quit
	case tea.KeyMsg:
		if s := msg.String(); s == "ctrl+c" || s == "q" {
			m.cancel()
			return m, tea.Quit
		}
	}
	return m, nil
}

// View draws the bar at the reported fraction rather than animating towards
// it: reports arrive in steps, and the last frame must say 100%.
func (m progressModel) View() string {
	return "\n  " + m.bar.ViewAs(m.last.frac) + "\n  " + strings.Join(m.last.lines, "\n  ") + "\n"
}

// withProgress runs job under a progress bar on out. job reports through
// report; cancel stops it when the user presses q or ctrl+c.
func withProgress[T any](ctx context.Context, cancel context.CancelFunc, out io.Writer,
	job func(report func(frac float64, lines ...string)) (T, error)) (T, error) {
	m := progressModel{bar: progress.New(progress.WithDefaultGradient()), cancel: cancel}
	prog := tea.NewProgram(m, tea.WithOutput(out), tea.WithContext(ctx))
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := job(func(frac float64, lines ...string) { prog.Send(progressMsg{frac: frac, lines: lines}) })
		prog.Send(progressDoneMsg{})
		done <- outcome{v, err}
	}()
	if _, err := prog.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		cancel()
		<-done
		var zero T
		return zero, fmt.Errorf("progress display: %w", err)
	}
	o := <-done
	return o.v, o.err
}
