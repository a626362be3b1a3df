package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/tui"
)

// fakeSource is a source of imported traces that exists only here: a file
// starts "FAKETRACE" and each line after it is one attempt,
// "EXECUTION TOOL ARGS OUTCOME"; an execution's attempts are of one call.
// It keeps its lines in a collection of its own.
type fakeSource struct{}

const (
	fakeHeader = "FAKETRACE\n"
	fakeBucket = store.Bucket("fake_traces")
)

// fakeStart is when every fake execution starts: a fixed time.
var fakeStart = time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)

func (fakeSource) Format() string { return "fake" }

func (fakeSource) Sniff(br *bufio.Reader) bool {
	head, _ := br.Peek(len(fakeHeader))
	return string(head) == fakeHeader
}

func (s fakeSource) ImportFile(db *store.DB, path string) (imports.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return imports.Result{}, err
	}
	defer f.Close()
	return s.Import(db, path, f)
}

func (fakeSource) Import(db *store.DB, name string, r io.Reader) (imports.Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return imports.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	body, ok := bytes.CutPrefix(data, []byte(fakeHeader))
	if !ok {
		return imports.Result{}, fmt.Errorf("%s: not a fake trace", name)
	}
	lines := map[string][]string{}
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		exec, _, _ := strings.Cut(l, " ")
		if len(strings.Fields(l)) != 4 {
			return imports.Result{}, fmt.Errorf("%s: bad line %q", name, l)
		}
		if lines[exec] == nil {
			order = append(order, exec)
		}
		lines[exec] = append(lines[exec], l)
	}
	err = db.Update(func(tx *store.Tx) error {
		for _, exec := range order {
			text := strings.Join(lines[exec], "\n")
			if err := tx.Put(fakeBucket, []byte(exec), []byte(text)); err != nil {
				return err
			}
			n := len(lines[exec])
			x := history.Execution{ID: exec, Imported: "fake", Source: name, Scenario: "fake-agent",
				Status: history.StatusCompleted, Runs: 1, Started: fakeStart, Ended: fakeStart.Add(time.Duration(n) * time.Second)}
			x.Duplicates, x.Possible = audit.Verdict(trace.Fold(exec, fakeEvents(exec, text))).Flags()
			if err := history.Put(tx, x); err != nil {
				return err
			}
		}
		return nil
	})
	return imports.Result{Format: "fake", Summary: fmt.Sprintf("fake trace, %d executions", len(order)), Executions: order}, err
}

func (fakeSource) Events(tx *store.Tx, id string) ([]trace.Event, error) {
	text := tx.Get(fakeBucket, []byte(id))
	if text == nil {
		return nil, fmt.Errorf("no fake trace of %s", id)
	}
	return fakeEvents(id, string(text)), nil
}

func (s fakeSource) Verdict(tx *store.Tx, id string) (audit.Grade, error) {
	evs, err := s.Events(tx, id)
	if err != nil {
		return "", err
	}
	return audit.Verdict(trace.Fold(id, evs)), nil
}

// fakeEvents translates an execution's lines: one run, one turn, one
// call, an attempt a line, a second apart.
func fakeEvents(exec, text string) []trace.Event {
	var evs []trace.Event
	add := func(e trace.Event) {
		e.Seq = uint64(len(evs) + 1)
		e.Ref = fmt.Sprintf("line %d", e.Seq)
		e.Run = 1
		evs = append(evs, e)
	}
	add(trace.Event{Kind: trace.ExecutionStarted, Time: fakeStart, Scenario: "fake-agent", Text: "unknown (fake)"})
	add(trace.Event{Kind: trace.RunStarted, Time: fakeStart})
	add(trace.Event{Kind: trace.TurnStarted, Time: fakeStart, Turn: 1, Text: "fake turn of " + exec})
	at := fakeStart
	for i, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if i == 0 {
			add(trace.Event{Kind: trace.CallScheduled, Time: at, Turn: 1, Call: "call-1", Tool: f[1], Args: json.RawMessage(f[2])})
		}
		add(trace.Event{Kind: trace.AttemptStarted, Time: at, Call: "call-1", Attempt: i + 1})
		at = at.Add(time.Second)
		add(trace.Event{Kind: trace.AttemptFinished, Time: at, Call: "call-1", Attempt: i + 1, Outcome: trace.Outcome(f[3]), Duration: time.Second})
	}
	add(trace.Event{Kind: trace.ExecutionEnded, Time: at, Outcome: trace.OutcomeOK})
	return evs
}

// fakeFile is two executions of the fake source: fake-a sends twice (a
// duplicate), fake-b times out and then sends.
const fakeFile = fakeHeader +
	`fake-a send_reminder {"to":"jordan@acme.dev"} ok
fake-a send_reminder {"to":"jordan@acme.dev"} ok
fake-b send_reminder {"to":"jordan@acme.dev"} timeout
fake-b send_reminder {"to":"jordan@acme.dev"} ok
`

// cliWith runs the command line in this process over reg's sources.
func cliWith(t *testing.T, reg *imports.Registry, db string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd(reg)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(append([]string{"--db", db}, args...))
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

// A source registered in the registry the program is handed, and nowhere
// else, is read by import, show, audit, diff and the explorer: nothing
// else names it (issue 20 item 2).
func TestFakeSourceIsReadEverywhere(t *testing.T) {
	t.Parallel()
	reg := imports.New(fakeSource{})
	all.Register(reg)
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")
	file := filepath.Join(dir, "agent.fake")
	if err := os.WriteFile(file, []byte(fakeFile), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := cliWith(t, reg, db, "import", file)
	if err != nil || !strings.Contains(out, file+": fake trace, 2 executions -> fake-a, fake-b") {
		t.Fatalf("import: %v\n%s", err, out)
	}

	out, err = cliWith(t, reg, db, "show", "fake-a")
	for _, want := range []string{"fake-a  imported from " + file, "send_reminder", "attempt 1", "attempt 2", "line 5"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("show fake-a lacks %q (%v):\n%s", want, err, out)
		}
	}

	t.Logf("show fake-a:\n%s", out)
	out, err = cliWith(t, reg, db, "audit")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(ee.msg, "1 duplicate effect") {
		t.Errorf("audit: %v, want exit 1 for one duplicate\n%s", err, out)
	}
	if !strings.Contains(out, "fake-a") || !strings.Contains(out, "send_reminder") {
		t.Errorf("audit does not name fake-a's send_reminder:\n%s", out)
	}

	t.Logf("audit:\n%s", out)
	out, err = cliWith(t, reg, db, "diff", "fake-a", "fake-b")
	for _, want := range []string{"fake-a", "fake-b", "timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff fake-a fake-b lacks %q (%v):\n%s", want, err, out)
		}
	}

	t.Logf("diff:\n%s", out)

	// The explorer, on a host handed the same registry.
	h, err := engine.Open(engine.Config{DBPath: db, Scenarios: fixtures.FS, Imports: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	m := tui.New(tui.Options{Source: engine.NewLocal(h), Now: func() time.Time { return fakeStart.Add(time.Hour) }})
	defer m.Close()
	view := runExplorer(t, m, 160, 40, "send_reminder")
	t.Logf("explorer:\n%s", view)
	for _, want := range []string{"Executions 2", "fake-a", "fake-b", "send_reminder"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}

// runExplorer plays the Bubble Tea runtime for m, each command in its own
// goroutine, until its screen shows want; it returns the screen.
func runExplorer(t *testing.T, m *tui.Model, w, h int, want string) string {
	t.Helper()
	msgs := make(chan tea.Msg, 1024)
	var handle func(tea.Msg)
	spawn := func(cmd tea.Cmd) {
		if cmd != nil {
			go func() { msgs <- cmd() }()
		}
	}
	handle = func(msg tea.Msg) {
		switch msg := msg.(type) {
		case nil, tea.QuitMsg:
		case tea.BatchMsg:
			for _, c := range msg {
				spawn(c)
			}
		default:
			_, cmd := m.Update(msg)
			spawn(cmd)
		}
	}
	handle(m.Init()())
	handle(tea.WindowSizeMsg{Width: w, Height: h})
	timeout := time.After(time.Minute)
	for {
		view := ansi.Strip(m.View())
		if strings.Contains(view, want) {
			return view
		}
		select {
		case msg := <-msgs:
			handle(msg)
		case <-timeout:
			t.Fatalf("the explorer never showed %q:\n%s", want, view)
		}
	}
}
