package tui

import (
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
	// quitFor is set on q's question: the runs started here it is about;
	// ended says they have all ended since (see onQuitRefresh).
	quitFor []string
	ended   bool
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
		return m.interrupt()
	}
	m.setFlash("cancelled: nothing changed", false)
	return nil
}

// runningMsg says which executions have a live worker, for q.
type runningMsg struct {
	running []string
	// waiting is set while q waits for the runs to end; refresh when q's
	// question reads them again.
	waiting, refresh bool
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

// onRunning quits at once when none of the runs started here is running.
// During one, q asks first: y kills its worker and quits (see
// killAndQuit), w waits for the run to end instead. The keys typed while
// the runs were read are replayed once the question is up.
func (m *Model) onRunning(msg runningMsg) tea.Cmd {
	if msg.refresh {
		m.onQuitRefresh(msg.running)
		return nil
	}
	if msg.waiting && !m.modes.waitingQuit {
		return nil // the wait was called off
	}
	own := m.runs.own(msg.running)
	if msg.waiting {
		if len(own) == 0 {
			return m.quit()
		}
		return m.askRunning(true, quitPoll)
	}
	if !m.modes.pendingQuit {
		return nil // a ctrl+c quit meanwhile, or the read is stale
	}
	typed := m.modes.typed
	m.modes.pendingQuit, m.modes.typed = false, nil
	if len(own) == 0 {
		return m.quit()
	}
	m.modes.confirm = m.quitQuestion(own)
	m.modes.push(m.confirmMode())
	cmds := make([]tea.Cmd, 0, len(typed))
	for _, k := range typed {
		cmds = append(cmds, m.onKey(k))
	}
	return tea.Batch(cmds...)
}
