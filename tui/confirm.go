package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// confirmation is a destructive key waiting for y. Until answered it holds
// the keyboard and its question holds the footer.
type confirmation struct {
	question string
	yes      func() tea.Cmd
	// wait, when set, is what w does (q during a run: quit once it ends).
	wait func() tea.Cmd
}

// ask puts a destructive action behind a question.
func (m *Model) ask(question string, yes func() tea.Cmd) tea.Cmd {
	m.modes.confirm = &confirmation{question: question, yes: yes}
	m.modes.push(m.confirmMode())
	return nil
}

// onConfirmKey answers the pending question: y does it, w waits (when
// offered), any other key keeps things as they are.
func (m *Model) onConfirmKey(msg tea.KeyMsg) tea.Cmd {
	c := m.modes.confirm
	m.modes.confirm = nil
	switch msg.String() {
	case "y", "Y":
		return c.yes()
	case "w":
		if c.wait != nil {
			return c.wait()
		}
	case "ctrl+c":
		return m.quit()
	}
	m.setFlash("cancelled: nothing changed", false)
	return nil
}

// runningMsg says which executions have a live worker, for q.
type runningMsg struct {
	running []string
	// waiting is set while q waits for the runs to end.
	waiting bool
}

// askRunning reads the running executions off the UI goroutine.
func (m *Model) askRunning(waiting bool, after time.Duration) tea.Cmd {
	src := m.can.run
	read := func() tea.Msg {
		if src == nil {
			return runningMsg{waiting: waiting} // a source that runs nothing
		}
		return runningMsg{running: src.Running(), waiting: waiting}
	}
	if after <= 0 {
		return read
	}
	return tea.Tick(after, func(time.Time) tea.Msg { return read() })
}

// quitPoll is how often q's wait looks whether the runs have ended.
const quitPoll = 250 * time.Millisecond

// onRunning quits at once when nothing runs. During a run, q asks first:
// quitting ends this process, which SIGKILLs the worker and records a kill
// from outside; w waits for the run to end instead.
func (m *Model) onRunning(msg runningMsg) tea.Cmd {
	if msg.waiting && !m.modes.waitingQuit {
		return nil // the wait was called off
	}
	if len(msg.running) == 0 {
		return m.quit()
	}
	if msg.waiting {
		return m.askRunning(true, quitPoll)
	}
	runs := msg.running[0]
	if len(msg.running) > 1 {
		runs = fmt.Sprintf("%s and %d more", runs, len(msg.running)-1)
	}
	m.modes.confirm = &confirmation{
		question: fmt.Sprintf("%s is running · y: quit, killing it · w: quit when it ends · else: stay", runs),
		yes:      m.quit,
		wait: func() tea.Cmd {
			m.modes.waitingQuit = true
			m.modes.push(m.quitWaitMode())
			m.setFlash(fmt.Sprintf("quitting when %s ends · esc: stay", runs), false)
			return m.askRunning(true, 0)
		},
	}
	m.modes.push(m.confirmMode())
	return nil
}
