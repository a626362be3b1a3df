package tui

import (
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Quitting during a run. The explorer's own runs (started or resumed here)
// die with it: q asks first, and y or ctrl+c SIGKILL their workers and wait
// until the host has recorded the kills (☠ in the trace, killed in show)
// before the program ends. Runs of other processes attached to the same
// host are theirs: the explorer neither asks about them nor kills them.

// killWait bounds how long quitting waits for a killed worker's end to be
// recorded; killPoll is how often it looks.
const (
	killWait = 5 * time.Second
	killPoll = 20 * time.Millisecond
)

// killedMsg says the workers quitting killed have ended (or killWait ran
// out); left are those still listed as running then.
type killedMsg struct{ left []string }

// ownRun notes an execution whose run was started or resumed here.
func (r *runState) ownRun(id string) {
	if id == "" {
		return
	}
	if r.mine == nil {
		r.mine = map[string]bool{}
	}
	r.mine[id] = true
}

// own keeps of running the executions whose runs were started here.
func (r *runState) own(running []string) []string {
	var out []string
	for _, id := range running {
		if r.mine[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ownIDs lists every execution run here, for a command to read.
func (r *runState) ownIDs() []string {
	out := make([]string, 0, len(r.mine))
	for id := range r.mine {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// askQuit is q: it reads which of the explorer's runs are running, off the
// UI goroutine. Keys typed before the answer (q y in one burst) wait in a
// mode of their own and are replayed once the question is up, so none is
// lost to the panes.
func (m *Model) askQuit() tea.Cmd {
	m.modes.pendingQuit, m.modes.typed = true, nil
	m.modes.push(m.quitPendingMode())
	return m.askRunning(false, 0)
}

// quitPendingMode holds the keys typed while q reads the running runs.
func (m *Model) quitPendingMode() *mode {
	return &mode{name: "quit-pending", active: func() bool { return m.modes.pendingQuit },
		key: func(msg tea.KeyMsg) (tea.Cmd, bool) {
			m.modes.typed = append(m.modes.typed, msg)
			return nil, true
		}}
}

// interrupt is ctrl+c: it quits at once when none of the explorer's runs
// can be running, else kills them first (see killAndQuit). A second ctrl+c
// while the kills are waited for quits without waiting.
func (m *Model) interrupt() tea.Cmd {
	if m.modes.killing || m.can.run == nil || len(m.runs.mine) == 0 {
		return m.quit()
	}
	return m.killAndQuit(m.runs.ownIDs())
}

// killAndQuit SIGKILLs the workers of those of ids still running, waits
// until the host no longer lists them (it records each kill first), and
// then quits.
func (m *Model) killAndQuit(ids []string) tea.Cmd {
	src := m.can.run
	if src == nil {
		return m.quit()
	}
	m.modes.killing = true
	m.modes.confirm, m.modes.waitingQuit, m.modes.pendingQuit = nil, false, false
	m.setFlash("killing the runs started here, then quitting · ctrl+c: quit now", false)
	return func() tea.Msg {
		live := intersect(src.Running(), ids)
		for _, id := range live {
			_ = src.Kill(id) // a worker that ended meanwhile has nothing to kill
		}
		for end := time.Now().Add(killWait); len(live) > 0 && time.Now().Before(end); {
			time.Sleep(killPoll)
			live = intersect(src.Running(), live)
		}
		return killedMsg{left: live}
	}
}

// intersect keeps of a the ids also in b.
func intersect(a, b []string) []string {
	var out []string
	for _, id := range a {
		if slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// runsText names running executions for a question: the first and how
// many more.
func runsText(running []string) string {
	if len(running) > 1 {
		return fmt.Sprintf("%s and %d more", running[0], len(running)-1)
	}
	return running[0]
}

// quitQuestion is q's question while runs started here are running.
func (m *Model) quitQuestion(own []string) *confirmation {
	runs := runsText(own)
	return &confirmation{
		question: fmt.Sprintf("%s is running · y: quit, killing it · w: quit when it ends · else: stay", runs),
		yes:      func() tea.Cmd { return m.killAndQuit(own) },
		wait: func() tea.Cmd {
			m.modes.waitingQuit = true
			m.modes.push(m.quitWaitMode())
			m.setFlash(fmt.Sprintf("quitting when %s ends · esc: stay", runs), false)
			return m.askRunning(true, 0)
		},
		quitFor: own,
	}
}

// refreshQuit keeps q's question true to the runs: when a notice says
// something changed, it reads the running runs again (see onRunning).
func (m *Model) refreshQuit() tea.Cmd {
	if c := m.modes.confirm; c == nil || c.quitFor == nil || c.ended {
		return nil
	}
	src := m.can.run
	if src == nil {
		return nil
	}
	return func() tea.Msg { return runningMsg{running: src.Running(), refresh: true} }
}

// onQuitRefresh rewrites q's question for the runs still running; once
// none is, the question says so and y quits without killing anything.
func (m *Model) onQuitRefresh(running []string) {
	c := m.modes.confirm
	if c == nil || c.quitFor == nil || c.ended {
		return
	}
	own := m.runs.own(running)
	if len(own) == 0 {
		verb := "has"
		if len(c.quitFor) > 1 {
			verb = "have"
		}
		m.modes.confirm = &confirmation{
			question: fmt.Sprintf("%s %s ended · y: quit · else: stay", runsText(c.quitFor), verb),
			yes:      m.quit, quitFor: c.quitFor, ended: true,
		}
		return
	}
	if !slices.Equal(own, c.quitFor) {
		m.modes.confirm = m.quitQuestion(own)
	}
}
