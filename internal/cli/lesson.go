package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/lesson"
)

func (a *app) lessonCmd() *cobra.Command {
	var reset, presenter, quiet, noPause bool
	var answers, from string
	var pace time.Duration
	cmd := &cobra.Command{
		Use:   "lesson",
		Short: "Walk the lesson path: predict the outbox, run, see why",
		Long: `Walk through the scenario catalogue in teaching order. Each lesson says what
will happen, asks you to predict a number (the messages in the outbox, or the
CRM rows), runs the scenario on the database, and confirms or explains.
A fix (safe, key-the-intent-fixed, ...) ends with a diff line: its run lined
up with its mistake's, as 'retrylab diff' shows them.

Lessons run in a database of their own beside --db (retrylab.db →
retrylab.lessons.db): each lesson starts from a clean slate, wiping that
database's executions, journals, outbox, keys and CRM like the article's
reset between experiments, and never touches --db itself. The explorer's
lesson mode (L) uses the same one, so progress is shared, and a workshop can
stop (q, or Ctrl-D) and resume later where it left off.

At a terminal it waits for Enter after each lesson's answer, so the answer
stays on a projector until the room has read it; --no-pause goes straight
on (piped input never waits).

--from starts at a lesson, by name or number, and goes on from there, running
again the lessons it passes that are done.

--slow runs each lesson's scenario in slow motion (2s before each attempt,
or --slow=5s), so a room can follow the trace; the deadlines stay real.

--answers gives the predictions up front (scripted use, no prompts).`,
		Example: "  retrylab lesson\n  retrylab lesson --presenter\n  retrylab lesson --from key-retention\n  retrylab lesson --reset --answers 2,2,1,1",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			var scripted []int
			if cmd.Flags().Changed("answers") {
				if scripted, err = parseAnswers(answers); err != nil {
					return &exitError{code: 2, msg: "--answers: " + err.Error()}
				}
			}
			if pace < 0 {
				return &exitError{code: 2, msg: "lesson: --slow wants a positive duration (e.g. --slow=3s)"}
			}
			h, err := a.openLessonHost()
			if err != nil {
				return err
			}
			h.Runtime().SetPace(pace)
			defer a.releaseInto(h, &err)
			s, err := lesson.Open(h.Host)
			if err != nil {
				return err
			}
			start := 0
			if cmd.Flags().Changed("from") {
				step, err := lesson.FindStep(s.Path(), from)
				if err != nil {
					return &exitError{code: 2, msg: "lesson --from: " + err.Error()}
				}
				start = step.Number
			}
			fmt.Fprintf(a.out, "Lessons run in %s (your %s is not touched).\n", h.DBPath(), a.dbPath)
			if reset {
				if err := s.Reset(); err != nil {
					return err
				}
				fmt.Fprintln(a.out, "Lesson progress reset.")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := lesson.WalkOptions{Out: a.out, Answers: scripted, Presenter: presenter, Narrate: !quiet, From: start}
			// A workshop resumed at a fix runs the mistake on a scratch
			// database, to show the fix as a difference.
			opts.Scratch = scratchOpener()
			if scripted == nil {
				opts.In = cmd.InOrStdin()
				// A room at a terminal reads each answer before the next
				// lesson starts; piped input (a script) runs on.
				if f, ok := opts.In.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
					opts.Pause = !noPause
				}
			}
			return lesson.Walk(ctx, s, opts)
		},
	}
	cmd.Flags().BoolVar(&reset, "reset", false, "forget the progress and start at the first lesson")
	cmd.Flags().StringVar(&answers, "answers", "", "predictions for the next lessons, comma-separated (e.g. 2,2,1)")
	cmd.Flags().StringVar(&from, "from", "", "start at this lesson (a name or a number) and go on from there")
	cmd.Flags().BoolVar(&presenter, "presenter", false, "more spacing, for a projector")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "do not narrate each run's attempts")
	slowFlag(cmd, &pace)
	cmd.Flags().BoolVar(&noPause, "no-pause", false, "at a terminal, go on to the next lesson without waiting for Enter")
	return cmd
}

// parseAnswers reads "2,1,3" into numbers.
func parseAnswers(s string) ([]int, error) {
	out := []int{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count (want numbers like 2,1,1)", f)
		}
		out = append(out, n)
	}
	return out, nil
}
