package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/verify"
)

// Lessons is the guided path the explorer's lesson mode walks;
// *lesson.Session is one. Run resets the database and plays a step's
// script, so lesson mode exists only where the explorer owns the database.
type Lessons interface {
	Path() []lesson.Step
	Next() (lesson.Step, bool)
	Score() (done, right int)
	Run(ctx context.Context, step lesson.Step) (verify.Outcome, error)
	Record(step lesson.Step, fb lesson.Feedback) error
}

// lessonPhase is where the current step stands.
type lessonPhase int

const (
	phasePredict  lessonPhase = iota // waiting for the learner's number
	phaseRunning                     // the script is playing
	phaseFeedback                    // confirmed or explained
	phaseFinished                    // the whole path is done
)

// lessonState is the explorer's lesson mode.
type lessonState struct {
	on       bool
	step     lesson.Step
	phase    lessonPhase
	input    textinput.Model
	guess    int
	feedback lesson.Feedback
	err      error
}

type lessonRanMsg struct {
	step    lesson.Step
	outcome verify.Outcome
	err     error
}

func newLessonInput() textinput.Model {
	in := textinput.New()
	in.Prompt = "your prediction > "
	in.CharLimit = 4
	in.Placeholder = "a number"
	in.Validate = func(s string) error {
		if s == "" {
			return nil
		}
		_, err := strconv.Atoi(s)
		return err
	}
	return in
}

// startLesson enters lesson mode at the first unfinished step.
func (m *Model) startLesson() tea.Cmd {
	if m.lessons == nil {
		m.setFlash("lesson mode needs the explorer to own the database (close the other retrylab, or run `retrylab lesson`)", true)
		return nil
	}
	m.lesson.on = true
	if !m.wide() {
		m.focus = paneDetail // the lesson takes the Detail tab
	}
	return m.nextLesson()
}

func (m *Model) nextLesson() tea.Cmd {
	step, ok := m.lessons.Next()
	if !ok {
		m.lesson.phase = phaseFinished
		return nil
	}
	m.lesson.step, m.lesson.phase, m.lesson.err = step, phasePredict, nil
	m.lesson.input = newLessonInput()
	return m.lesson.input.Focus()
}

// onLessonKey handles keys while the lesson pane has the keyboard.
func (m *Model) onLessonKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.lesson.on = false
		m.setFlash("left the lesson; L comes back to it", false)
		return nil
	case "ctrl+c":
		return m.quit()
	}
	switch m.lesson.phase {
	case phasePredict:
		if msg.String() != "enter" {
			var cmd tea.Cmd
			m.lesson.input, cmd = m.lesson.input.Update(msg)
			return cmd
		}
		m.lesson.guess = -1
		if n, err := strconv.Atoi(strings.TrimSpace(m.lesson.input.Value())); err == nil {
			m.lesson.guess = n
		}
		m.lesson.phase = phaseRunning
		m.execSel, m.execTop, m.selID = 0, 0, ""
		step, lessons := m.lesson.step, m.lessons
		return func() tea.Msg {
			out, err := lessons.Run(context.Background(), step)
			return lessonRanMsg{step: step, outcome: out, err: err}
		}
	case phaseFeedback:
		if msg.String() == "enter" || msg.String() == "n" {
			return m.nextLesson()
		}
	case phaseFinished:
		if msg.String() == "enter" {
			m.lesson.on = false
		}
	}
	return nil
}

func (m *Model) onLessonRan(msg lessonRanMsg) tea.Cmd {
	if msg.err != nil {
		m.lesson.err = msg.err
		m.lesson.phase = phaseFeedback
		return nil
	}
	fb := lesson.Check(msg.step, m.lesson.guess, msg.outcome)
	m.lesson.feedback, m.lesson.phase = fb, phaseFeedback
	if err := m.lessons.Record(msg.step, fb); err != nil {
		m.lesson.err = err
	}
	return tea.Batch(m.loadExecs(), m.loadOutbox())
}

// byHand names the explorer keys that would play a step's actions.
func byHand(step lesson.Step) string {
	keys := map[string]string{"run": "n", "submit": "n", "submit-twice": "n n", "resume": "r",
		"delete-journal": "D", "advance": "A", "reset-world": "R"}
	var parts []string
	for _, a := range step.Actions {
		k := keys[a.Verb]
		if k == "" {
			parts = append(parts, a.Say)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", k, strings.ToLower(a.Say)))
	}
	return strings.Join(parts, " → ")
}

// lessonLines is the lesson pane's text.
func (m *Model) lessonLines(width int) (string, []string) {
	st := m.lesson.step
	done, right := m.lessons.Score()
	title := fmt.Sprintf("Lesson %d/%d · %s — %s · %d done, %d predicted right · esc: leave", st.Number, st.Of, st.Name, st.Title, done, right)
	wrap := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(wrapText(s, width), "\n")
	}
	var lines []string
	switch m.lesson.phase {
	case phaseFinished:
		return fmt.Sprintf("Lessons · all done: %d of %d predicted right", right, done),
			[]string{"Every lesson of the path is done. `retrylab lesson --reset` starts the workshop over.", "", "enter: back to the explorer"}
	case phasePredict:
		lines = append(lines, wrap(st.Intro)...)
		lines = append(lines, m.theme.Dim.Render("what happens: "+byHand(st)))
		lines = append(lines, m.theme.Bold.Render("Predict: "+st.Predict))
		lines = append(lines, m.lesson.input.View()+m.theme.Dim.Render("   enter: run it"))
	case phaseRunning:
		lines = append(lines, wrap(st.Intro)...)
		lines = append(lines, m.theme.Warn.Render(fmt.Sprintf("running %s… watch the trace and the outbox", st.Name)))
	case phaseFeedback:
		if m.lesson.err != nil {
			lines = append(lines, m.theme.Bad.Render(oneLine(m.lesson.err.Error())))
		} else {
			text := m.lesson.feedback.Text
			style := m.theme.OK
			if !m.lesson.feedback.Correct {
				style = m.theme.Warn
			}
			for i, l := range strings.Split(text, "\n") {
				for _, w := range wrap(l) {
					if i == 0 {
						w = style.Render(w)
					}
					lines = append(lines, w)
				}
			}
		}
		lines = append(lines, m.theme.Dim.Render("enter: next lesson · esc: explore this run"))
	}
	return title, lines
}

// wrapText breaks s into lines of at most width cells, at spaces.
func wrapText(s string, width int) string {
	if width < 10 {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			switch {
			case line == "":
				line = w
			case len([]rune(line))+1+len([]rune(w)) > width:
				out = append(out, line)
				line = w
			default:
				line += " " + w
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
