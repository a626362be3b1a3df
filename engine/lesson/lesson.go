// Package lesson is the guided path through the scenario catalogue, without
// a screen: the steps in teaching order, what each asks the learner to do and
// to predict, the feedback once the scenario has run, and the workshop's
// progress, kept in the database so a workshop can stop and resume.
//
// The path is every scenario with order > 0, sorted by order. A step shows
// the scenario's intro, says what will happen (the CLI commands of its
// script), asks the learner for a number (messages in the outbox, or CRM
// rows for a scenario that sends nothing), runs the script on a freshly
// reset host, and confirms or explains with the actual count and the
// scenario's outro and teaches text.
//
// The terminal walk (Walk) and the explorer's lesson mode share Path, Step,
// Check and Session.
package lesson

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/internal/plural"
)

// ErrEmptyPath means the catalogue has no scenario with order > 0.
var ErrEmptyPath = errors.New("no lessons: no scenario has an order above 0")

// Measure is the number a step asks the learner to predict.
type Measure string

// Measures.
const (
	// MeasureOutbox is the number of messages in the provider's outbox.
	MeasureOutbox Measure = "outbox"
	// MeasureCRMRows is the number of rows the CRM holds.
	MeasureCRMRows Measure = "crm_rows"
)

// Count says n in words: "2 messages in the outbox", "1 CRM row".
func (m Measure) Count(n int) string {
	if m == MeasureCRMRows {
		return plural.Count(n, "CRM row")
	}
	return plural.Count(n, "message") + " in the outbox"
}

// Of reads the measure from an outcome.
func (m Measure) Of(o verify.Outcome) int {
	if m == MeasureCRMRows {
		return o.CRMRows
	}
	return o.OutboxTotal()
}

// Action is one thing a step does, as the learner would do it by hand.
type Action struct {
	// Verb and Arg are the script action: run, resume, delete-journal STEP,
	// advance DURATION, reset-world, submit, submit-twice. The explorer maps
	// Verb to its own keys.
	Verb string
	Arg  string
	// Say describes it: "Resume the killed execution".
	Say string
	// Command is the CLI equivalent, or "" when the CLI has none.
	Command string
}

// Step is one lesson.
type Step struct {
	// Number is the 1-based position in the path; Of is the path's length.
	Number, Of int
	Scenario   *scenario.Scenario
	Name       string
	Title      string
	Intro      string
	Predict    string
	Outro      string
	Teaches    string
	// Measure is what the learner predicts; Expected is what the scenario
	// says it will be.
	Measure  Measure
	Expected int
	Actions  []Action
}

// Do is the step's actions as one line of commands (or descriptions where
// the CLI has no command): "retrylab run crash → retrylab resume".
func (s Step) Do() string {
	parts := make([]string, len(s.Actions))
	for i, a := range s.Actions {
		parts[i] = a.Command
		if a.Command == "" {
			parts[i] = a.Say
		}
	}
	return strings.Join(parts, " → ")
}

// Path is the lesson path of a catalogue: scenarios with order > 0, in order.
func Path(cat *scenario.Catalog) ([]Step, error) {
	all, err := cat.All()
	if err != nil {
		return nil, fmt.Errorf("lesson path: %w", err)
	}
	var path []Step
	for _, s := range all {
		if s.Order > 0 {
			path = append(path, NewStep(s))
		}
	}
	if len(path) == 0 {
		return nil, ErrEmptyPath
	}
	for i := range path {
		path[i].Number, path[i].Of = i+1, len(path)
	}
	return path, nil
}

// ErrNoStep means a lesson named (or numbered) that the path does not have.
var ErrNoStep = errors.New("no lesson")

// FindStep finds a lesson on the path by its scenario's name or its
// 1-based number, as a teacher names where to start ("key-retention",
// "16"). An unknown one is an error wrapping ErrNoStep that names the
// nearest lessons, or says the numbers there are.
func FindStep(path []Step, ref string) (Step, error) {
	ref = strings.TrimSpace(ref)
	if n, err := strconv.Atoi(ref); err == nil {
		if n < 1 || n > len(path) {
			return Step{}, fmt.Errorf("%w %d: the lessons are numbered 1 to %d", ErrNoStep, n, len(path))
		}
		return path[n-1], nil
	}
	names := make([]string, len(path))
	for i, st := range path {
		if st.Name == ref {
			return st, nil
		}
		names[i] = st.Name
	}
	if near := scenario.Nearest(ref, names); len(near) > 0 {
		return Step{}, fmt.Errorf("%w %q (did you mean %s?)", ErrNoStep, ref, strings.Join(near, " or "))
	}
	return Step{}, fmt.Errorf("%w %q: give a lesson's name or its number, 1 to %d", ErrNoStep, ref, len(path))
}

// NewStep makes the lesson step of one scenario (Number and Of unset).
func NewStep(s *scenario.Scenario) Step {
	st := Step{Scenario: s, Name: s.Name, Title: s.Title, Intro: strings.TrimSpace(s.Narration.Intro),
		Predict: strings.TrimSpace(s.Narration.Predict), Outro: strings.TrimSpace(s.Narration.Outro),
		Teaches: strings.TrimSpace(s.Teaches), Measure: MeasureOutbox}
	if len(s.Expect.Outbox) == 0 && s.Expect.CRMRows != nil {
		st.Measure, st.Expected = MeasureCRMRows, *s.Expect.CRMRows
	} else {
		for _, n := range s.Expect.Outbox {
			st.Expected += n
		}
	}
	if st.Predict == "" {
		st.Predict = fmt.Sprintf("How many %s?", strings.TrimPrefix(st.Measure.Count(2), "2 "))
	}
	exec := s.Execution
	if exec == "" {
		exec = "EXECUTION"
	}
	for _, a := range s.Expect.Script {
		verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
		act := Action{Verb: verb, Arg: strings.TrimSpace(arg)}
		switch verb {
		case "run":
			act.Say, act.Command = "Run the scenario", "retrylab run "+s.Name
		case "resume":
			act.Say, act.Command = "Resume the killed execution", "retrylab resume"
		case "delete-journal":
			act.Say = "Delete the journal record of " + act.Arg
			act.Command = "retrylab journal delete " + exec + " " + act.Arg
		case "advance":
			act.Say = "Advance the world clock by " + act.Arg
		case "reset-world":
			act.Say = "Empty the outbox, the key store and the CRM"
		case "submit":
			act.Say = "Submit the start with a run-level idempotency key"
		case "submit-twice":
			act.Say = "Submit the start twice at once, with the same run-level key"
		default:
			act.Say = a
		}
		st.Actions = append(st.Actions, act)
	}
	return st
}

// Feedback is what a step says once it has run.
type Feedback struct {
	// Correct is set when the prediction matched what actually happened.
	Correct bool
	// Predicted is the learner's number, -1 for none.
	Predicted int
	Actual    int
	Expected  int
	// Text confirms or explains, in a few lines.
	Text string
	// Diff is a fix's difference from its mistake in one line, once read
	// (Pairs.Line); "" for a step that fixes nothing.
	Diff string
}

// Check compares a prediction (-1 for none) with what the step's run
// produced and explains: with the actual count, the scenario's outro, and,
// when the prediction was off, what the scenario teaches.
func Check(step Step, prediction int, outcome verify.Outcome) Feedback {
	actual := step.Measure.Of(outcome)
	fb := Feedback{Correct: prediction == actual, Predicted: prediction, Actual: actual, Expected: step.Expected}
	var b strings.Builder
	switch {
	case prediction < 0:
		fmt.Fprintf(&b, "No prediction. Actual: %s.\n", step.Measure.Count(actual))
	case fb.Correct:
		fmt.Fprintf(&b, "✓ Right: %s.\n", step.Measure.Count(actual))
	default:
		fmt.Fprintf(&b, "✗ Not quite: you said %d; actual: %s.\n", prediction, step.Measure.Count(actual))
	}
	if step.Outro != "" {
		b.WriteString(step.Outro + "\n")
	}
	if !fb.Correct && step.Teaches != "" {
		b.WriteString("\nWhy: " + oneParagraph(step.Teaches) + "\n")
	}
	if actual != step.Expected {
		fmt.Fprintf(&b, "\n⚠ The scenario expects %s, but this run produced %s: the engine did not behave as the lesson says.\n",
			step.Measure.Count(step.Expected), step.Measure.Count(actual))
	}
	fb.Text = strings.TrimRight(b.String(), "\n")
	return fb
}

// oneParagraph joins wrapped lines into one.
func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

// The host keeps the progress.
var _ Keeper = (*engine.Host)(nil)

// ParsePrediction reads what a learner typed as a prediction of m, the
// one rule for the terminal walk and the explorer: nothing (or spaces)
// means no prediction (-1); a whole number of 0 or more is the prediction;
// anything else is refused, with a message that says what to type.
func ParsePrediction(text string, m Measure) (int, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number of %s: type a number, or nothing to skip", text, strings.TrimPrefix(m.Count(2), "2 "))
	}
	return n, nil
}

// DBPath is where the lessons of the database at db run: a database of
// their own beside it (retrylab.db → retrylab.lessons.db), because every
// lesson starts by wiping executions, journals and the world, and a user's
// database must never be wiped by a lesson. The progress lives there too.
func DBPath(db string) string {
	dir, base := filepath.Split(db)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	if base == "" {
		base = "retrylab"
	}
	return filepath.Join(dir, base+".lessons.db")
}

// Session is a workshop's walk along the path on one host: the lessons'
// own database (DBPath), never the user's.
type Session struct {
	h    *engine.Host
	path []Step
	// mu guards state: the explorer's commands Record and Reset it while
	// its View reads Score and Next. It is never held across I/O.
	mu    sync.Mutex
	state State
	// play is the step under way, one action at a time.
	play    *verify.Script
	playing string
}

// Open starts or resumes the walk: the path comes from the host's catalogue
// and the progress from its database.
func Open(h *engine.Host) (*Session, error) {
	path, err := Path(h.Catalog())
	if err != nil {
		return nil, err
	}
	st, err := LoadProgress(h)
	if err != nil {
		return nil, err
	}
	return &Session{h: h, path: path, state: st}, nil
}

// Path is the session's lesson path.
func (s *Session) Path() []Step { return s.path }

// Progress is the saved progress.
func (s *Session) Progress() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Done reports whether a step has been finished.
func (s *Session) Done(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done(name)
}

// done is Done with mu held.
func (s *Session) done(name string) bool {
	for _, a := range s.state.Done {
		if a.Scenario == name {
			return true
		}
	}
	return false
}

// Next is the first step of the path not finished yet; false when the whole
// path is done.
func (s *Session) Next() (Step, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.path {
		if !s.done(st.Name) {
			return st, true
		}
	}
	return Step{}, false
}

// Score counts the finished steps and the right predictions among them.
func (s *Session) Score() (done, right int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.state.Done {
		done++
		if a.Correct {
			right++
		}
	}
	return done, right
}

// Run resets the host (executions, journals, world; not the progress), the
// way the article resets between experiments, then carries out the step's
// script and returns what it produced.
func (s *Session) Run(ctx context.Context, step Step) (verify.Outcome, error) {
	if err := s.Begin(step); err != nil {
		return verify.Outcome{}, err
	}
	for i := range step.Actions {
		if _, err := s.Act(ctx, step, i); err != nil {
			out, _ := s.Outcome()
			return out, err
		}
	}
	return s.Outcome()
}

// Begin starts a step that the learner plays one action at a time (Act):
// it resets the host as Run does.
func (s *Session) Begin(step Step) error {
	s.play, s.playing = nil, ""
	if err := s.h.Reset(Bucket); err != nil {
		return err
	}
	s.play, s.playing = verify.NewScript(s.h, step.Scenario, verify.Options{}), step.Name
	return nil
}

// Act carries out the step's action i (Step.Actions[i]), waiting for a
// worker it starts to end, and returns the execution it ran.
func (s *Session) Act(ctx context.Context, step Step, i int) (string, error) {
	if s.play == nil || s.playing != step.Name {
		return "", fmt.Errorf("lesson %s has not begun", step.Name)
	}
	if i < 0 || i >= len(step.Actions) {
		return "", fmt.Errorf("lesson %s has no action %d", step.Name, i+1)
	}
	a := step.Actions[i]
	action := strings.TrimSpace(a.Verb + " " + a.Arg)
	if err := s.play.Do(ctx, action); err != nil {
		return s.play.Current(), fmt.Errorf("lesson %s: %w", step.Name, err)
	}
	return s.play.Current(), nil
}

// Outcome is what the step's actions so far left behind.
func (s *Session) Outcome() (verify.Outcome, error) {
	if s.play == nil {
		return verify.Outcome{}, errors.New("no lesson has begun")
	}
	return s.play.Outcome()
}

// Record saves a finished step and its feedback as progress.
func (s *Session) Record(step Step, fb Feedback) error {
	s.mu.Lock()
	next := State{Done: make([]Answer, 0, len(s.state.Done)+1)}
	for _, a := range s.state.Done {
		if a.Scenario != step.Name {
			next.Done = append(next.Done, a)
		}
	}
	s.mu.Unlock()
	next.Done = append(next.Done, Answer{Scenario: step.Name, Predicted: fb.Predicted,
		Actual: fb.Actual, Correct: fb.Correct, Diff: fb.Diff})
	if err := SaveProgress(s.h, next); err != nil {
		return err
	}
	s.mu.Lock()
	s.state = next
	s.mu.Unlock()
	return nil
}

// Reset forgets the progress: the walk starts again at the first step.
func (s *Session) Reset() error {
	if err := SaveProgress(s.h, State{}); err != nil {
		return err
	}
	s.mu.Lock()
	s.state = State{}
	s.mu.Unlock()
	return nil
}
