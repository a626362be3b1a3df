package verify_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// TestMain lets the test binary double as the worker the hosts start.
func TestMain(m *testing.M) {
	agent.MainForTests()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

func opener(t testing.TB) verify.Opener {
	return verify.Scratch(engine.Config{Scenarios: testrun.QuickTimeouts(t, fixtures.FS), NoSync: true})
}

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.NewCatalog(testrun.QuickTimeouts(t, fixtures.FS)).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestCompare(t *testing.T) {
	t.Parallel()
	e := scenario.Expect{
		Outbox:   map[string]int{"jordan@acme.dev": 1},
		CRMRows:  ptr(1),
		Runs:     ptr(2),
		Attempts: map[string]int{"step-4": 2},
		Status:   "completed",
	}
	o := verify.Outcome{
		Outbox:   map[string]int{"jordan@acme.dev": 2, "sam@example.com": 1},
		CRMRows:  1,
		Runs:     2,
		Attempts: map[string]int{"step-4": 1},
		Status:   history.StatusFailed,
	}
	var got []string
	for _, c := range verify.Compare(e, o) {
		mark := "ok"
		if !c.OK {
			mark = "bad"
		}
		got = append(got, mark+" "+c.Field+" "+c.Got+"/"+c.Want)
	}
	want := []string{
		"bad outbox jordan@acme.dev 2/1",
		"bad outbox sam@example.com 1/0",
		"ok crm_rows 1/1",
		"ok runs 2/2",
		"bad attempts step-4 1/2",
		"bad status failed/completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if checks := verify.Compare(scenario.Expect{}, o); len(checks) != 0 {
		t.Errorf("an empty expectation checks %v", checks)
	}
}

func TestReportLine(t *testing.T) {
	t.Parallel()
	pass := verify.Report{Scenario: "naive", Checks: []verify.Check{
		{Field: "outbox jordan@acme.dev", Got: "2", Want: "2", OK: true},
		{Field: "status", Got: "completed", Want: "completed", OK: true},
	}}
	if got, want := pass.Line(), "ok   naive  outbox jordan@acme.dev=2 (expected 2)  status completed (expected completed)"; got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	fail := verify.Report{Scenario: "safe", Overrides: verify.Options{Keys: ptr(false)}.Overrides(), Checks: []verify.Check{
		{Field: "outbox jordan@acme.dev", Got: "2", Want: "1"},
		{Field: "status", Got: "completed", Want: "completed", OK: true},
	}}
	if got, want := fail.Line(), "FAIL safe [keys off]: outbox jordan@acme.dev: got 2, expected 1"; got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	broken := verify.Report{Scenario: "x", Err: errors.New("boom")}
	if broken.Passed() || broken.Line() != "FAIL x: boom" {
		t.Errorf("report with an error: passed %v, line %q", broken.Passed(), broken.Line())
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	s := load(t, "safe")
	o := verify.Options{Keys: ptr(false), StartKeys: ptr(true)}
	if got := o.Overrides(); got != "keys off, start-keys on" {
		t.Errorf("Overrides = %q", got)
	}
	if got := o.Policy(s); got != (history.Policy{Keys: false, Journal: true}) {
		t.Errorf("Policy = %+v", got)
	}
	if (verify.Options{}).Overrides() != "" {
		t.Error("no options should give no overrides")
	}
}

// TestScriptError: an action that cannot be carried out fails the report
// (with ErrScript) rather than the call.
func TestScriptError(t *testing.T) {
	t.Parallel()
	s := load(t, "one-send")
	s.Expect.Script = []string{"run", "resume"} // nothing to resume: it completed
	rep, err := verify.Verify(context.Background(), opener(t), s, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || !errors.Is(rep.Err, verify.ErrScript) {
		t.Fatalf("report %s, err %v; want a failed script", rep.Line(), rep.Err)
	}
	if !strings.Contains(rep.Line(), `expect.script[1] "resume"`) || !strings.Contains(rep.Line(), "nothing to resume") {
		t.Errorf("line %q does not say which action failed and why", rep.Line())
	}
	if rep.Outcome.OutboxTotal() != 1 {
		t.Errorf("outcome after the failed action: %d messages, want 1", rep.Outcome.OutboxTotal())
	}
}

// TestOpenError: a host that cannot be opened is an error, not a report.
func TestOpenError(t *testing.T) {
	t.Parallel()
	bad := func() (*engine.Host, func() error, error) { return nil, nil, errors.New("no disk") }
	if _, err := verify.Verify(context.Background(), bad, load(t, "naive"), verify.Options{}); err == nil {
		t.Fatal("Verify with a failing opener returned no error")
	}
}

// matrix is the fault matrix's expected outbox (docs/FAULTS.md) for one send, by fault and policy,
// column for column: no key, no journal | key only | journal only | key + journal.
var matrix = []struct {
	row    string
	point  fault.Point
	script []string
	// maxAttempts, when set, makes the first run give up after its timed-out
	// attempt, so the world clock can move before the retry.
	maxAttempts int
	want        [4]int
}{
	{"1", fault.TimeoutBeforeEffect, []string{"run"}, 0, [4]int{1, 1, 1, 1}},
	{"2", fault.TimeoutAfterEffect, []string{"run"}, 0, [4]int{2, 1, 2, 1}},
	{"3 then resume", fault.CrashBeforeCall, []string{"run", "resume"}, 0, [4]int{1, 1, 1, 1}},
	{"4 then resume", fault.CrashAfterEffect, []string{"run", "resume"}, 0, [4]int{2, 1, 2, 1}},
	{"5 then resume", fault.CrashAfterRecord, []string{"run", "resume"}, 0, [4]int{2, 1, 1, 1}},
	{"key expired between attempts (2)", fault.TimeoutAfterEffect, []string{"run", "advance 25h", "run"}, 1, [4]int{2, 2, 2, 2}},
}

var matrixPolicies = [4]history.Policy{{}, {Keys: true}, {Journal: true}, {Keys: true, Journal: true}}

// TestFaultMatrix holds the engine to the fault matrix (docs/FAULTS.md): one send, each
// fault point, the four policies.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	type cell struct {
		name string
		want int
		rep  verify.Report
		err  error
	}
	var cells []*cell
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // the runs wait on timeouts, not the CPU
	open := opener(t)
	for _, row := range matrix {
		for col, p := range matrixPolicies {
			s := load(t, "one-send")
			s.Faults = []scenario.Fault{{Step: "step-4", Attempt: 1, Point: row.point}}
			s.Expect.Script = row.script
			s.Expect.MailRequests = nil
			if row.maxAttempts > 0 {
				s.Policy.Retry.MaxAttempts = row.maxAttempts
			}
			c := &cell{name: "fault " + row.row + " / " + p.String(), want: row.want[col]}
			s.Expect.Outbox = map[string]int{"jordan@acme.dev": c.want}
			cells = append(cells, c)
			opts := verify.Options{Keys: ptr(p.Keys), Journal: ptr(p.Journal)}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c.rep, c.err = verify.Verify(ctx, open, s, opts)
			}()
		}
	}
	wg.Wait()
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			if c.err != nil {
				t.Fatal(c.err)
			}
			if !c.rep.Passed() {
				t.Errorf("docs/FAULTS.md says %d: %s", c.want, c.rep.Line())
			}
		})
	}
}
