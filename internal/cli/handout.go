package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

func (a *app) handoutCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "handout",
		Short: "Write the workshop session's handout in Markdown: lessons, predictions, diffs, the room's tally",
		Long: `Write the session's handout in Markdown, from the lessons' database beside
--db (where 'retrylab lesson' and the explorer's lesson mode keep their
progress): each lesson done, in the order it was done, with what it teaches,
the prediction and the outcome, and for each fix the line that set it
beside its mistake; then, when a room is hosted on --db, the class tally:
each participant's predictions right, executions, mail and duplicates, and
each lesson as the class predicted it ("naive: 14 of 22 right; 8 said 1,
14 said 2; it was 2"), also under each lesson done.

'retrylab show EXECUTION --markdown' is the handout of one execution.`,
		Example: "  retrylab handout\n  retrylab handout -o workshop.md\n  retrylab handout --db room.db -o workshop.md",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file != "" && file != "-" {
				if err := checkDestination(file); err != nil {
					return &exitError{code: 2, msg: "handout: " + err.Error()}
				}
			}
			h, err := a.sessionHandout()
			if err != nil {
				return err
			}
			if file == "" || file == "-" {
				return lesson.WriteHandout(a.out, h)
			}
			if err := writeFileAtomic(file, func(w io.Writer) error { return lesson.WriteHandout(w, h) }); err != nil {
				return fmt.Errorf("handout: %w", err)
			}
			fmt.Fprintf(a.out, "wrote the handout of %d lesson(s) to %s\n", len(h.Progress.Done), file)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "output", "o", "", "write it to FILE instead of standard output")
	return cmd
}

// sessionHandout gathers the session: the path, the progress in the
// lessons' database (none when there is no such file), and the tally of
// the room hosted on --db, if one is.
func (a *app) sessionHandout() (lesson.SessionHandout, error) {
	path, err := lesson.Path(scenario.NewCatalog(fixtures.FS))
	if err != nil {
		return lesson.SessionHandout{}, err
	}
	where := lesson.DBPath(a.dbPath)
	out := lesson.SessionHandout{Path: path, Where: where}
	if _, err := os.Stat(where); err == nil {
		h, err := engine.OpenReadOnly(engine.Config{DBPath: where, Scenarios: fixtures.FS, Imports: a.imports})
		if errors.Is(err, store.ErrLocked) {
			return out, &exitError{code: 1, msg: "handout: the lessons' database " + where + " is open in another retrylab (a lesson or the explorer's lesson mode): close it first"}
		}
		if err != nil {
			return out, err
		}
		out.Progress, err = lesson.LoadProgress(h)
		if cerr := h.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return out, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return out, err
	}
	t, ok, err := room.LoadTeacher(room.TeacherFile(a.dbPath))
	if err != nil || !ok {
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := (&room.Client{URL: t.URL, Token: t.Token}).Status(ctx)
	if err != nil {
		out.TallyErr = fmt.Errorf("the room at %s did not answer (%w): is 'retrylab room' still running?", t.URL, err)
		return out, nil
	}
	out.Tally = &lesson.Tally{Room: t.URL, Lessons: map[string]string{}}
	for _, l := range st.Lessons {
		out.Tally.Lessons[l.Lesson] = l.Summary()
		out.Tally.Order = append(out.Tally.Order, l.Lesson)
	}
	for _, p := range st.Participants {
		out.Tally.Participants = append(out.Tally.Participants, lesson.TallyRow{Name: p.Name, Right: p.Predictions.Right,
			Asked: p.Predictions.Asked, Executions: p.Executions, Duplicates: p.Duplicates, LastScenario: p.Scenario,
			LastOutcome: p.Outcome, DeliveredMail: p.Outbox})
	}
	return out, nil
}
