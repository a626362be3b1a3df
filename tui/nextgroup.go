package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
)

// nextGroup is what a teacher presses between two groups of a workshop
// (N): once y confirms, it erases the database shown (executions,
// histories, journals, the world), starts the lesson path over, and
// forgets the filter and the mark, so the next group finds what the first
// one found. The lessons' own database is opened for it if L has not
// opened it yet; a place with no lesson mode only erases.
func (m *Model) nextGroup() tea.Cmd {
	erase := m.can.erase
	if erase == nil {
		m.setFlash("this source cannot be erased", true)
		return nil
	}
	return m.ask("Next group: erase everything and start the lessons over? y: erase · else: keep",
		func() tea.Cmd {
			m.runs.follow, m.runs.started = "", ""
			m.execs.Home()
			m.forgetFilterAndMark()
			room, open := m.lesson.forReset()
			return func() tea.Msg {
				msg := lessonMsg{kind: lessonNextGroup}
				if msg.err = erase.Reset(); msg.err != nil {
					return msg
				}
				if room == nil && open != nil {
					if room, msg.err = open(); msg.err != nil {
						msg.err = fmt.Errorf("erased, but the lessons' database: %w", msg.err)
						return msg
					}
					msg.room = room // the pane keeps it: it is open now
				}
				if room != nil {
					if err := room.Lessons.Reset(); err != nil {
						msg.err = fmt.Errorf("erased, but the lessons' progress: %w", err)
					}
				}
				return msg
			}
		})
}

// forReset gives what the next group's reset needs of the lessons: the
// room when it is open, else how to open it (nil where there is no lesson
// mode, or while L is opening it: that open's room starts where the path
// stood, and the teacher can press N again). An open started here counts
// as the pane's own, so L waits for it instead of opening the database a
// second time.
func (l *lessonPane) forReset() (*LessonRoom, func() (*LessonRoom, error)) {
	if l.room != nil || l.opener == nil || l.opening {
		return l.room, nil
	}
	l.opening = true
	return nil, l.opener
}

// resetDone ends what forReset began: the room a reset opened is the
// pane's from now on; an open that failed leaves L free to try again.
func (l *lessonPane) resetDone(opened *LessonRoom) {
	switch {
	case opened != nil:
		l.opened(opened, nil)
	case l.room == nil:
		l.opening = false
	}
}

// onNextGroup takes the next group's reset: the lessons' room it opened,
// and what to say.
func (m *Model) onNextGroup(msg lessonMsg) tea.Cmd {
	m.lesson.resetDone(msg.room)
	if msg.err != nil {
		m.setFlash(oneLine(msg.err.Error()), true)
	} else {
		m.setFlash("next group: no executions, an empty world, the lessons from the first; n runs a scenario, L starts the lessons", false)
	}
	return tea.Batch(m.loadExecs(), m.loadOutbox())
}
