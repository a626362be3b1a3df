package tui

import (
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/dur"
)

// retentionJump is how far A moves the world clock: past the default 24 h
// key retention.
const retentionJump = 25 * time.Hour

// Update handles one message. It never blocks: reads and actions run as
// commands and come back as messages.
func (m *Model) Update(msg tea.Msg) (_ tea.Model, cmd tea.Cmd) {
	flash := m.status.seq
	defer func() {
		if m.status.seq != flash {
			cmd = tea.Batch(cmd, m.expireFlash())
		}
		cmd = m.tag(cmd)
	}()
	switch msg := msg.(type) {
	case sourced:
		if msg.gen != m.feed.gen {
			return m, nil // a result of the source shown before a switch
		}
		return m.Update(msg.msg)
	case flashExpiredMsg:
		if msg.seq == m.status.seq {
			m.status.text, m.status.bad = m.status.gone, m.status.gone != ""
		}
		return m, nil
	case tea.WindowSizeMsg:
		first := m.width == 0
		m.width, m.height = msg.Width, msg.Height
		if first {
			m.lesson.sized()
		}
		m.help.SetSize(msg.Width, msg.Height)
		m.msgs.SetSize(msg.Width, msg.Height)
		m.clampScroll()
		m.picker.SetSize(msg.Width, msg.Height)
		m.cmp.SetSize(msg.Width, msg.Height)
		m.room.SetSize(msg.Width, msg.Height)
		m.slide.SetSize(msg.Width, msg.Height)
		return m, m.loadExecs()
	case execsMsg:
		return m, m.onExecs(msg)
	case wholeTimelineMsg:
		if msg.err != nil {
			m.setFlash("timeline: "+oneLine(msg.err.Error()), true)
		}
		m.timeline.Whole(msg)
		return m, nil
	case traceMsg:
		return m, m.onTrace(msg)
	case outboxMsg:
		if msg.err != nil {
			m.setFlash(msg.err.Error(), true)
			return m, nil
		}
		m.status.armed, m.status.worldOffset, m.status.pace = msg.armed, msg.offset, msg.pace
		if msg.forID != m.selID {
			msg.forID, msg.msgs = "", nil // an execution no longer selected
		}
		return m, m.outbox.Update(msg)
	case scenariosMsg:
		if msg.err != nil {
			m.setFlash(msg.err.Error(), true)
		}
		if m.picker.SetCatalogue(msg.list) {
			return m, m.openPicker()
		}
		return m, nil
	case compareMsg:
		return m, m.onCompare(msg)
	case roomMsg, roomTickMsg:
		return m, m.room.Update(msg)
	case participantMsg:
		return m, m.onParticipant(msg)
	case noticesMsg:
		return m, tea.Batch(m.onNotices(msg), m.refreshQuit())
	case lessonMsg:
		return m, m.onLesson(msg)
	case actionMsg:
		if msg.err != nil {
			m.setFlash(oneLine(msg.err.Error()), true)
		} else {
			m.setFlash(msg.text, false)
		}
		if msg.watch && m.width > 0 && !m.wide() && m.focus != paneTrace && m.focus != paneOutbox {
			m.focus = paneTrace
			m.sizePanes()
		}
		m.runs.ownRun(msg.ran)
		cmds := []tea.Cmd{m.loadOutbox(), m.loadExecs()}
		if msg.selectID != "" {
			// Follow the run just started, wherever its execution is listed.
			m.runs.follow, m.runs.started = msg.selectID, msg.selectID
			m.filter.Clear()
			cmds = append(cmds, m.locate(msg.selectID))
		}
		return m, tea.Batch(cmds...)
	case subscribedMsg:
		return m, m.onSubscribed(msg)
	case flashMsg:
		m.setFlash(msg.text, msg.bad)
		return m, nil
	case armedMsg:
		m.status.armed = msg.armed
		m.setFlash(msg.text, false)
		return m, nil
	case pickerMsg:
		return m, m.picker.Update(msg)
	case pickedMsg:
		return m, m.start(msg.name)
	case locatedMsg:
		return m, m.onLocated(msg)
	case runningMsg:
		return m, m.onRunning(msg)
	case killedMsg:
		return m, m.quit()
	case tea.MouseMsg:
		return m, m.onMouse(msg)
	case tea.KeyMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func (m *Model) onExecs(msg execsMsg) tea.Cmd {
	if msg.filter != m.filter.Text() {
		return nil // an answer to a filter typed over since
	}
	if msg.err != nil {
		m.setFlash(msg.err.Error(), true)
		m.execs.Update(msg)
		return nil
	}
	m.filter.Observe(msg.filter, msg.all, msg.total)
	top, _, total := m.execs.Window()
	m.execs.Update(msg)
	if to := m.keptSelection(msg, total); to >= 0 {
		// Executions arrived above the one selected: it stays selected
		// (and on screen), and the window is read again if it scrolled.
		m.execs.moveTo(to)
		if now, _, _ := m.execs.Window(); now != top || m.selectedExec() == nil {
			return m.loadExecs()
		}
	}
	if sel := m.selectedExec(); sel != nil {
		m.trace.Refresh(sel.x) // the record as the list read it: no read of its own
		if sel.x.ID != m.selID {
			return m.selectExecution(sel.x.ID)
		}
	} else if _, _, total := m.execs.Window(); total == 0 {
		m.selID = ""
		m.trace.Forget()
		m.outbox.SetDeliveries(nil)
	}
	return nil
}

// keptSelection is where the execution selected now stands, when the list
// read (msg) no longer has it at the selection's index: executions arrived
// above it (the list grew from total), or it or others were run again
// (the list is by last activity: one run again goes first). It is found
// in the window read, or where the read found it (msg.moved); -1 when the
// selection is to stay where it is. A selection on the first row follows
// the newest execution as new ones arrive, as a run started in another
// terminal is watched; one moved down the list stays put.
func (m *Model) keptSelection(msg execsMsg, total int) int {
	_, sel, _ := m.execs.Window()
	grew := msg.total > total
	if m.runs.follow != "" || m.selID == "" || (grew && sel == 0) {
		return -1 // a run followed moves it; the first row follows the newest
	}
	if !grew && (msg.keep != m.selID || msg.sel != sel) {
		// A reorder moves only the selection the read was made for (not
		// one the reader moved since, whose execution is not known yet).
		return -1
	}
	if x := m.selectedExec(); x != nil && x.x.ID == m.selID {
		return -1
	}
	for i, x := range msg.items {
		if x.x.ID == m.selID {
			return msg.skip + i
		}
	}
	if grew && msg.moved >= 0 && msg.keep == m.selID && msg.sel == sel {
		return msg.moved
	}
	return -1
}

// onTrace takes a read of the selected history: a read from the start
// folds a new trace; a further page (or the events a live trace missed)
// is applied to the trace kept, never re-reading what it holds.
func (m *Model) onTrace(msg traceMsg) tea.Cmd {
	if msg.id != m.selID {
		return nil // an answer for an execution no longer selected
	}
	if errors.Is(msg.err, engine.ErrNoExecution) {
		return m.executionGone()
	}
	if msg.err != nil {
		m.setFlash(oneLine(msg.err.Error()), true)
		if msg.from == 0 {
			// The first read of the execution selected failed (a damaged
			// record): the trace and outbox of the one selected before
			// must not stay beside it as if they were its own.
			m.outbox.SetDeliveries(nil)
		}
		m.trace.ReadFailed(msg)
		return nil
	}
	if msg.from == 0 {
		m.outbox.SetDeliveries(msg.msgs)
	}
	m.sizePanes()
	m.trace.Update(msg)
	m.clampScroll()
	if m.trace.readOnDue() {
		return m.readOn()
	}
	return nil
}

// executionGone takes a read of the selected execution that found it gone:
// another terminal reset or erased the database (retrylab reset) while it
// was shown. That is no error: the trace and its messages go, and the
// list is read again, as it is for a run from another terminal.
func (m *Model) executionGone() tea.Cmd {
	m.selID = ""
	m.trace.Forget()
	m.outbox.SetDeliveries(nil)
	return m.loadExecs()
}

// onNotices follows the source live. An event of the trace shown is
// applied to the kept model; the history is read only after a gap (a Seq
// jump: from the last event held) or a Lagged notice (from the start).
// The outbox is re-read only when the world did something.
func (m *Model) onNotices(msg noticesMsg) tea.Cmd {
	m.feed.grow(msg.steady)
	cmds := []tea.Cmd{m.loadExecs()}
	reload, outbox, mine, gap, changed := false, false, false, false, false
	for _, n := range msg.batch {
		switch {
		case n.Gone:
			// The retrylab this explorer is attached to quit or was
			// killed: the screen stays as it was, and the footer says so
			// until the explorer quits.
			m.status.gone = n.Host
			m.setFlash(n.Host, true)
		case n.Host != "":
			m.setFlash(n.Host, true) // the host's word: an import committed unseen
		case n.Lagged:
			reload, outbox, mine = true, true, true
		case n.Activity != nil:
			outbox = true
			mine = mine || n.Execution == m.selID
		case n.Execution == "":
			outbox = true
		case n.Event == nil && n.Execution == m.selID:
			reload = true // imported spans arrived: read the trace again
		case n.Event != nil && n.Execution == m.selID:
			switch m.trace.Live(m.selID, *n.Event, gap) {
			case liveReload:
				reload = true
			case liveApplied:
				changed = true
			case liveGap:
				gap = true
			}
		}
	}
	switch {
	case reload || m.selID == "":
		cmds = append(cmds, m.loadTrace(m.selID))
	case gap:
		cmds = append(cmds, m.readOn())
	}
	if changed {
		m.trace.follow()
		m.clampScroll()
	}
	if outbox {
		id := ""
		if mine {
			id = m.selID
		}
		cmds = append(cmds, m.loadOutboxOf(id))
	}
	if !msg.closed {
		cmds = append(cmds, m.waitNotices())
	}
	return tea.Batch(cmds...)
}

// resume resumes the selected execution.
func (m *Model) resume() tea.Cmd {
	sel := m.selectedExec()
	if sel == nil {
		m.setFlash("select an execution to resume", true)
		return nil
	}
	id, src := sel.x.ID, m.can.run
	return func() tea.Msg {
		r, err := src.Resume(id)
		if err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: fmt.Sprintf("resumed %s: run %d", id, r.Number), ran: id, watch: true}
	}
}

func (m *Model) quit() tea.Cmd {
	m.modes.quitting = true
	return tea.Quit
}

// cycle steps a policy override: scenario default -> on -> off -> default.
func cycle(v *bool) *bool {
	switch {
	case v == nil:
		t := true
		return &t
	case *v:
		f := false
		return &f
	}
	return nil
}

func tri(v *bool) string {
	switch {
	case v == nil:
		return "as the scenario says"
	case *v:
		return "on"
	}
	return "off"
}

// armedMsg reports the faults armed after an arm or a disarm, which run
// as commands: a Source attached to a host in another process answers
// over a socket.
type armedMsg struct {
	armed []fault.Point
	text  string
}

// arm arms p for the next tool call. Its message names the fault first:
// at 80 columns the footer has room for about 36 cells of it.
func (m *Model) arm(p fault.Point) tea.Cmd {
	src := m.can.faults
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		before := src.Armed()
		src.Arm(p)
		text := p.Describe() + ": armed for the next tool call"
		// One fault per attempt: the last armed replaces the one before.
		if len(before) > 0 && before[len(before)-1] != p {
			text += " (replaces " + string(before[len(before)-1]) + ")"
		}
		return armedMsg{armed: src.Armed(), text: text}
	}
}

func (m *Model) disarm() tea.Cmd {
	src := m.can.faults
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		src.Disarm()
		return armedMsg{armed: src.Armed(), text: "disarmed"}
	}
}

// killNow kills the selected execution's worker, or the last run started
// here when the selection has none; which one is running is read in the
// command, off the UI goroutine.
func (m *Model) killNow() tea.Cmd {
	src, sel, started := m.can.run, m.selID, m.runs.started
	return func() tea.Msg {
		id := killTarget(sel, started, src.Running())
		if id == "" {
			return actionMsg{err: errors.New("no worker is running")}
		}
		if err := src.Kill(id); err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: "sent SIGKILL to the worker of " + id}
	}
}

func (m *Model) deleteJournal() tea.Cmd {
	n := m.selectedRow()
	if n == nil || n.step == "" || m.selID == "" {
		m.setFlash("select a step (or its replay) in the trace to delete its journal record", true)
		return nil
	}
	id, step, src := m.selID, n.step, m.can.world
	return m.ask(fmt.Sprintf("Delete the journal record of %s %s? y: delete · else: keep", id, step),
		func() tea.Cmd {
			return act(fmt.Sprintf("deleted the journal record of %s %s", id, step), func() error { return src.DeleteJournal(id, step) })
		})
}

// startClean empties the database shown, executions too, once y confirms:
// R resets only the world and leaves the histories, which is what a demo
// that starts over does not want.
func (m *Model) startClean() tea.Cmd {
	r := m.can.erase
	if r == nil {
		m.setFlash("this source cannot be erased", true)
		return nil
	}
	return m.ask("Erase all executions, histories, journals and the world? y: erase · else: keep",
		func() tea.Cmd {
			m.runs.follow, m.runs.started = "", ""
			m.execs.Home()
			m.forgetFilterAndMark()
			return act("erased: no executions, an empty world; n runs a scenario", r.Reset)
		})
}

func (m *Model) pageRows() int { return max(1, m.paneHeight(m.focus)-3) }

// move moves the focused pane's selection by delta rows.
func (m *Model) move(delta int) tea.Cmd {
	switch m.focus {
	case paneExecs:
		m.sizePanes()
		if cmd := m.execsMoved(m.execs.move(delta)); cmd != nil {
			return cmd
		}
	case paneTrace, paneDetail:
		m.sizePanes()
		if cmd := m.trace.moveBy(delta, m.pageRows()); cmd != nil {
			m.clampScroll()
			return cmd // near the end of what is loaded: the next page
		}
	case paneOutbox:
		m.sizePanes()
		m.outbox.move(delta)
		m.revealLinkedAttempt()
	}
	m.clampScroll()
	return nil
}

// execsMoved follows a move in the list: the window read again when the
// move left it (reread), else the trace of the execution now selected.
func (m *Model) execsMoved(reread bool) tea.Cmd {
	if reread {
		return m.loadExecs()
	}
	if sel := m.selectedExec(); sel != nil && sel.x.ID != m.selID {
		return m.selectExecution(sel.x.ID)
	}
	return nil
}

// selectExecution shows execution id: its trace and its outbox (or
// inferred effects) from their tops, as its history is read.
func (m *Model) selectExecution(id string) tea.Cmd {
	m.selID = id
	m.trace.Select()
	m.outbox.Select()
	return m.loadTrace(id)
}

// selectedMessage is the outbox message under the outbox selection.
func (m *Model) selectedMessage() *outboxLine { return m.outbox.selected() }

// revealLinkedAttempt moves the trace selection to the attempt that caused
// the selected message, so the other half of the link is on screen.
func (m *Model) revealLinkedAttempt() {
	if l := m.selectedMessage(); l != nil {
		at := l.msg.Attribution
		m.trace.SelectAttempt(at.Step, at.Attempt)
	} else if at := m.outbox.selectedInferred(); at != nil {
		m.trace.SelectAttempt(at.step, at.attempt)
	}
}

func (m *Model) nextPane(dir int) pane {
	p := m.focus
	for i := 0; i < int(paneCount); i++ {
		p = (p + pane(dir) + paneCount) % paneCount
		if p != paneDetail || m.width < wideWidth {
			return p
		}
	}
	return p
}

func (m *Model) clampScroll() {
	m.sizePanes()
	m.trace.clampScroll()
	m.outbox.clampScroll()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// possibleGlyph marks in the list an imported execution whose audit grades
// a repeated effect POSSIBLE: a hollow ⚠, of lesser rank.
const possibleGlyph = "◇"

// statusBadge is an execution's badge: duplicates detected outranks the
// rest, then a possible duplicate.
func statusBadge(it execItem) (string, marker) {
	if it.duplicates {
		return "⚠", markAmbiguous
	}
	if it.possible {
		return possibleGlyph, markTimeout
	}
	switch it.x.Status {
	case history.StatusCompleted:
		return "✓", markOK
	case history.StatusRunning:
		return "●", markRunning
	case history.StatusKilled:
		return "☠", markKilled
	case history.StatusEscalated:
		return "⚑", markEscalated
	case history.StatusFailed, history.StatusCancelled, history.StatusTerminated:
		return "✖", markFailed
	case history.StatusTimedOut:
		return "⏱", markTimeout
	case history.StatusContinuedAsNew:
		return "↻", markRetry
	}
	return "?", markNone
}

// slowPace is the slow motion S turns on: each attempt of the runs to
// come waits this long first, so a room can follow the trace.
const slowPace = 2 * time.Second

// toggleSlow turns slow motion on or off for the runs to come (S); the
// footer says it at once, the source is told in a command.
func (m *Model) toggleSlow() tea.Cmd {
	src, next := m.can.pace, slowPace
	if m.status.pace > 0 {
		next = 0
	}
	m.status.pace = next
	text := "slow motion off: runs go at full speed"
	if next > 0 {
		text = fmt.Sprintf("slow motion: each attempt of the next runs waits %s first (the timeouts stay real); S: off", dur.Text(next))
	}
	return act(text, func() error { src.SetPace(next); return nil })
}
