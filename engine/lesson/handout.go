package lesson

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/retrylab/retrylab/engine/narrate"
)

// SessionHandout is what the Markdown handout of a workshop session is
// made from: the lesson path, the progress the session saved (each lesson
// done, its prediction, outcome and diff line), and the class tally when
// the session had a room.
type SessionHandout struct {
	Path     []Step
	Progress State
	// Where names the lessons' database, for the handout's first lines.
	Where string
	// Tally is the room's, nil where no room was hosted.
	Tally *Tally
	// TallyErr says why a room that was hosted gave no tally (it was
	// closed, say); the handout says it instead of the tally.
	TallyErr error
}

// Tally is a room's predictions, per participant and per lesson.
type Tally struct {
	Room         string
	Participants []TallyRow
	// Lessons is the class's tally of each lesson, by its name, in a line
	// ("naive: 14 of 22 right; 8 said 1, 14 said 2; it was 2": the
	// room's LessonTally.Summary); Order is the lessons in the order the
	// class walked them.
	Lessons map[string]string
	Order   []string
}

// TallyRow is one participant's part of the tally.
type TallyRow struct {
	Name          string
	Right, Asked  int
	Executions    int
	Duplicates    int
	LastScenario  string
	LastOutcome   string
	DeliveredMail int
}

// WriteHandout writes a session's handout in Markdown: each lesson done,
// in the order the session did them, with what it teaches, the
// prediction and the outcome, and, for a fix, the line that set it beside
// its mistake; then the score, and the room's tally where there was one.
func WriteHandout(w io.Writer, h SessionHandout) error {
	bw := bufio.NewWriter(w)
	f := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	steps := make(map[string]Step, len(h.Path))
	for _, st := range h.Path {
		steps[st.Name] = st
	}
	done, right := 0, 0
	for _, a := range h.Progress.Done {
		done++
		if a.Correct {
			right++
		}
	}
	f("# Workshop handout\n\n")
	if h.Where != "" {
		f("Lessons run in `%s`", h.Where)
		if !h.Progress.Updated.IsZero() {
			f(", last saved %s", h.Progress.Updated.UTC().Format("2006-01-02 15:04 MST"))
		}
		f(".\n\n")
	}
	if done == 0 {
		f("No lesson is done yet: `retrylab lesson` walks the path.\n\n")
	} else {
		f("%d of %d lessons done, %d predicted right.\n\n", done, len(h.Path), right)
	}
	for _, a := range h.Progress.Done {
		st, ok := steps[a.Scenario]
		if !ok {
			// A lesson no longer on the path (the catalogue changed).
			f("## %s\n\n", narrate.Escape(a.Scenario))
			f("- predicted: %s · outcome: %d\n\n", prediction(a.Predicted), a.Actual)
			continue
		}
		f("## Lesson %d · %s — %s\n\n", st.Number, st.Name, narrate.Escape(st.Title))
		if st.Teaches != "" {
			for _, p := range strings.Split(narrate.Paragraphs(st.Teaches), "\n\n") {
				f("%s\n\n", narrate.Escape(p))
			}
		}
		if st.Predict != "" {
			f("- asked: %s\n", narrate.Escape(oneParagraph(st.Predict)))
		}
		f("- predicted: %s\n", predictionOf(a.Predicted, st.Measure))
		verdict := "✓ right"
		switch {
		case a.Predicted < 0:
			verdict = "no prediction"
		case !a.Correct:
			verdict = "✗ not quite"
		}
		f("- outcome: %s · %s\n", st.Measure.Count(a.Actual), verdict)
		if line, ok := h.Tally.lesson(st.Name); ok {
			f("- the class: %s\n", narrate.Escape(line))
		}
		if a.Diff != "" {
			f("- %s\n", narrate.Escape(a.Diff))
		}
		f("\n")
	}
	switch {
	case h.TallyErr != nil:
		f("## The room\n\nNo tally: %s\n", narrate.Escape(h.TallyErr.Error()))
	case h.Tally != nil:
		t := h.Tally
		f("## The room\n\n")
		if t.Room != "" {
			f("Room %s: %d participant(s).\n\n", narrate.Escape(t.Room), len(t.Participants))
		}
		if len(t.Participants) > 0 {
			f("| participant | predictions right | executions | mail delivered | duplicates | last scenario |\n")
			f("|---|---|---|---|---|---|\n")
			var r, asked int
			for _, p := range t.Participants {
				r, asked = r+p.Right, asked+p.Asked
				last := p.LastScenario
				if p.LastOutcome != "" {
					last += " (" + p.LastOutcome + ")"
				}
				f("| %s | %d of %d | %d | %d | %d | %s |\n", narrate.Escape(p.Name), p.Right, p.Asked, p.Executions,
					p.DeliveredMail, p.Duplicates, narrate.Escape(last))
			}
			f("| **the class** | %d of %d | | | | |\n", r, asked)
		}
		if len(t.Order) > 0 {
			f("\nEach lesson, as the class predicted it:\n\n")
			for _, name := range t.Order {
				f("- %s\n", narrate.Escape(t.Lessons[name]))
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write the session's handout: %w", err)
	}
	return nil
}

// lesson is the class's line for a lesson; none without a room's tally.
func (t *Tally) lesson(name string) (string, bool) {
	if t == nil {
		return "", false
	}
	line, ok := t.Lessons[name]
	return line, ok
}

// prediction is a prediction without its measure.
func prediction(n int) string {
	if n < 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// predictionOf is a prediction in the measure's words.
func predictionOf(n int, m Measure) string {
	if n < 0 {
		return "none"
	}
	return m.Count(n)
}
