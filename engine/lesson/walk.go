package lesson

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/verify"
)

// WalkOptions configure a terminal walk along the path.
type WalkOptions struct {
	// In gives predictions, one number per line; "q" stops, an empty line
	// skips the prediction. Nil means only Answers are used.
	In io.Reader
	// Out receives the lesson text.
	Out io.Writer
	// Answers are scripted predictions, used before In, one per step.
	Answers []int
	// Presenter spaces the text out for a projector.
	Presenter bool
	// Narrate prints the run's narration ([agent], [tool], [mail-api] ...)
	// as it happens.
	Narrate bool
	// Scratch, when set, runs a fix's mistake on a scratch database when
	// this walk did not run it, to show the fix as a difference.
	Scratch verify.Opener
	// Pause waits for Enter on In between lessons, so a lesson's answer
	// stays on a projector until the room has read it ("q" stops).
	Pause bool
	// From is the number of the lesson to start at (FindStep finds it);
	// the walk goes on along the path from there, running each lesson
	// again even when the progress has it done. 0 starts where the
	// progress left off.
	From int
}

// errStop means the learner (or the end of the input) stopped the walk.
var errStop = errors.New("stopped")

// Walk goes through the path from where the progress says the workshop
// left off, asking, running and explaining each step, and saves progress
// after each. It returns nil when the input ends or the learner stops: the
// next walk resumes there.
func Walk(ctx context.Context, s *Session, o WalkOptions) error {
	w := &walker{s: s, o: o, out: o.Out, pairs: NewPairs(s.h, o.Scratch), at: o.From - 1}
	if o.In != nil {
		w.in = bufio.NewReader(o.In)
	}
	if o.From > len(s.path) {
		return fmt.Errorf("%w %d: the lessons are numbered 1 to %d", ErrNoStep, o.From, len(s.path))
	}
	if step, ok := w.next(); ok && o.From > 0 {
		w.line(fmt.Sprintf("Starting at lesson %d of %d (%s).", step.Number, step.Of, step.Name))
		w.gap()
	} else if done, _ := s.Score(); done > 0 && ok {
		w.line(fmt.Sprintf("Resuming at lesson %d of %d (%d done).", step.Number, step.Of, done))
		w.gap()
	}
	for {
		step, ok := w.next()
		if !ok {
			w.summary()
			return nil
		}
		err := w.step(ctx, step)
		if err == nil {
			if w.at >= 0 {
				w.at++
			}
			if err = w.pause(); errors.Is(err, errStop) {
				step, _ = w.next() // stopped before the next lesson began
			}
		}
		if errors.Is(err, errStop) {
			done, _ := s.Score()
			w.gap()
			again := "retrylab lesson"
			if w.at >= 0 && step.Name != "" {
				again += " --from " + step.Name
			}
			w.line(fmt.Sprintf("Stopped at lesson %d of %d; progress saved (%d done). Run `%s` to continue.", step.Number, step.Of, done, again))
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// next is the lesson the walk takes next: the one after the last it took
// when it started at a lesson (From), else the first not done.
func (w *walker) next() (Step, bool) {
	if w.at < 0 {
		return w.s.Next()
	}
	if w.at >= len(w.s.path) {
		return Step{}, false
	}
	return w.s.path[w.at], true
}

type walker struct {
	s   *Session
	o   WalkOptions
	out io.Writer
	in  *bufio.Reader
	n   int // answers used
	// pairs shows each fix beside its mistake.
	pairs *Pairs
	// at is the index on the path of the next lesson of a walk started at
	// a lesson (From); -1 for a walk that follows the progress.
	at int
}

func (w *walker) line(s string) {
	indent := ""
	if w.o.Presenter {
		indent = "  "
	}
	for _, l := range strings.Split(s, "\n") {
		if l == "" {
			fmt.Fprintln(w.out)
			continue
		}
		fmt.Fprintln(w.out, indent+l)
	}
}

func (w *walker) gap() {
	fmt.Fprintln(w.out)
	if w.o.Presenter {
		fmt.Fprintln(w.out)
	}
}

func (w *walker) step(ctx context.Context, step Step) error {
	width := 64
	rule := "─"
	if w.o.Presenter {
		rule = "═"
	}
	head := fmt.Sprintf("Lesson %d of %d · %s ", step.Number, step.Of, step.Name)
	if n := width - len([]rune(head)); n > 3 {
		head += strings.Repeat(rule, n)
	}
	w.line(head)
	w.line(step.Title)
	w.gap()
	if step.Intro != "" {
		w.line(step.Intro)
		w.gap()
	}
	w.line("What happens: " + step.Do())
	w.gap()
	prediction, err := w.ask(step)
	if err != nil {
		return err
	}
	w.gap()
	out, err := w.run(ctx, step)
	if err != nil {
		return err
	}
	w.gap()
	w.outcome(step, out)
	w.gap()
	fb := Check(step, prediction, out)
	w.line(fb.Text)
	// A fix is shown as a difference from its mistake.
	line, err := w.pairs.Line(ctx, step, out)
	if err != nil {
		line = "diff: cannot compare with " + step.Scenario.Fixes + ": " + err.Error()
	}
	if line != "" {
		w.gap()
		w.line(line)
	}
	fb.Diff = line
	if err := w.s.Record(step, fb); err != nil {
		return err
	}
	w.gap()
	return nil
}

// ask reads the learner's prediction: a scripted answer, or a line of In.
func (w *walker) ask(step Step) (int, error) {
	w.line(step.Predict)
	prompt := "Your prediction (a number; Enter to skip, q to stop): "
	if w.o.Presenter {
		prompt = "  " + prompt
	}
	if w.n < len(w.o.Answers) {
		n := w.o.Answers[w.n]
		w.n++
		fmt.Fprintf(w.out, "%s%d\n", prompt, n)
		return n, nil
	}
	if w.in == nil {
		return 0, errStop
	}
	for {
		fmt.Fprint(w.out, prompt)
		text, err := w.in.ReadString('\n')
		text = strings.TrimSpace(text)
		if err != nil && text == "" {
			fmt.Fprintln(w.out)
			if errors.Is(err, io.EOF) {
				return 0, errStop
			}
			return 0, fmt.Errorf("read prediction: %w", err)
		}
		switch strings.ToLower(text) {
		case "q", "quit", "exit":
			return 0, errStop
		}
		n, perr := ParsePrediction(text, step.Measure)
		if perr == nil {
			return n, nil
		}
		w.line(perr.Error() + ".")
		if err != nil {
			return 0, errStop
		}
	}
}

// run runs the step, narrating it when asked to.
func (w *walker) run(ctx context.Context, step Step) (verify.Outcome, error) {
	if !w.o.Narrate {
		return w.s.Run(ctx, step)
	}
	notices, stop := w.s.h.Subscribe(1 << 14)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		narrators := map[string]*narrate.Narrator{}
		for no := range notices {
			if no.Execution == "" {
				continue
			}
			n := narrators[no.Execution]
			if n == nil {
				n = narrate.New(no.Execution)
				narrators[no.Execution] = n
			}
			for _, l := range n.Lines(no) {
				fmt.Fprintln(w.out, l)
			}
		}
	}()
	out, err := w.s.Run(ctx, step)
	// Let notices published just before the run ended arrive.
	time.Sleep(50 * time.Millisecond)
	stop()
	wg.Wait()
	return out, err
}

// outcome prints what the provider holds after the run.
func (w *walker) outcome(step Step, out verify.Outcome) {
	if len(out.Outbox) == 0 {
		w.line("[mail-api]  outbox is empty")
	}
	recipients := make([]string, 0, len(out.Outbox))
	for to := range out.Outbox {
		recipients = append(recipients, to)
	}
	sort.Strings(recipients)
	for _, to := range recipients {
		w.line("[mail-api]  " + narrate.CountLine(to, out.Outbox[to]))
	}
	if step.Measure == MeasureCRMRows || out.CRMRows > 0 {
		w.line(fmt.Sprintf("[crm]       %d %s", out.CRMRows, map[bool]string{true: "row", false: "rows"}[out.CRMRows == 1]))
	}
	if out.Execution != "" {
		w.line(fmt.Sprintf("[runtime]   execution %s: %s", out.Execution, out.Status))
	}
}

// summary closes a finished path.
func (w *walker) summary() {
	done, right := w.s.Score()
	w.line(fmt.Sprintf("You have finished the path: %d lessons, %d predicted right.", done, right))
	w.line("Start over with `retrylab lesson --reset`.")
}

// pause waits for Enter before the next lesson, when asked to and one
// follows: "q" (or the end of the input) stops the walk there.
func (w *walker) pause() error {
	next, ok := w.next()
	if !w.o.Pause || w.in == nil || !ok {
		return nil
	}
	fmt.Fprintf(w.out, "Press Enter for lesson %d of %d (q to stop): ", next.Number, next.Of)
	text, err := w.in.ReadString('\n')
	text = strings.TrimSpace(text)
	if err != nil && text == "" {
		fmt.Fprintln(w.out)
		if errors.Is(err, io.EOF) {
			return errStop
		}
		return fmt.Errorf("read: %w", err)
	}
	if text == "q" {
		return errStop
	}
	return nil
}
