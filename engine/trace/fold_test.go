package trace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

func TestMain(m *testing.M) {
	agent.MainForTests() // the hosts below start this binary as their workers
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

// recordHistory plays a scenario's script ("run", "resume", "reset-world")
// on a real host and returns the execution's recorded history.
func recordHistory(t *testing.T, scenario string, script ...string) (history.Execution, []history.Event) {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var id string
	for _, action := range script {
		var r *engine.Run
		switch action {
		case "run":
			r, err = h.Start(scenario, engine.RunOptions{})
		case "resume":
			r, err = h.Resume(id)
		case "reset-world":
			if err := h.Providers().ResetWorld(); err != nil {
				t.Fatal(err)
			}
			continue
		default:
			t.Fatalf("unknown action %q", action)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", scenario, action, err)
		}
		<-r.Done()
		id = r.Execution
	}
	return recorded(t, engine.NewLocal(h), id)
}

// recorded is an execution's record and its whole history.
func recorded(t *testing.T, h engine.Service, id string) (history.Execution, []history.Event) {
	t.Helper()
	x, err := h.Execution(id)
	if err != nil {
		t.Fatal(err)
	}
	events, err := h.Events(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return x, events
}

// dump writes the tree the way a reader walks it: one line per node, with
// the marks the fold decided, and nothing that varies between runs (times,
// pids).
func dump(tr *trace.Trace) string {
	var b strings.Builder
	var walk func(ns []trace.Node, depth int)
	walk = func(ns []trace.Node, depth int) {
		for _, n := range ns {
			b.WriteString(strings.Repeat("  ", depth))
			switch n := n.(type) {
			case *trace.Run:
				fmt.Fprintf(&b, "run %d policy=%s faults=%v end=%s", n.Number, n.Policy, n.Faults, n.Mark())
			case *trace.Gap:
				fmt.Fprintf(&b, "gap before run %d afterCrash=%v", n.Run, n.AfterCrash)
			case *trace.Turn:
				fmt.Fprintf(&b, "turn %d", n.Number)
			case *trace.Call:
				fmt.Fprintf(&b, "call %s %s", n.Tool, n.Call)
			case *trace.Attempt:
				fmt.Fprintf(&b, "%s #%d %s", n.Mark(), n.N, n.Outcome)
				if n.Key != "" {
					b.WriteString(" keyed")
				}
				if len(n.Faults) > 0 {
					fmt.Fprintf(&b, " faults=%v", n.Faults)
				}
				if n.Retry > 0 {
					b.WriteString(" retry")
				}
				for _, fx := range n.Effects {
					fmt.Fprintf(&b, " effect=%s:%s", fx.Service, fx.Target)
				}
			case *trace.Replay:
				fmt.Fprintf(&b, "%s replay %s from run %d", trace.MarkReplay, n.Call, n.ResultRun)
			case *trace.Note:
				fmt.Fprintf(&b, "%s %s %s", n.Mark, n.Kind, n.Call)
			}
			b.WriteString("\n")
			walk(n.Children(), depth+1)
		}
	}
	walk(tr.Nodes, 0)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// The fold of real histories, one per teaching scenario: every mark is
// the fold's decision, from the recorded events alone.
func TestFoldRealHistories(t *testing.T) {
	cases := []struct {
		scenario string
		script   []string
		want     string
		outcome  trace.Mark
		dup      bool
	}{
		{scenario: "naive", script: []string{"run"}, outcome: trace.MarkOK, dup: true, want: `
run 1 policy=none faults=[timeout-after-effect] end=✓
  turn 1
    call send_invoice_email step-4
      ◆ #1 timeout faults=[timeout-after-effect] retry effect=mail:jordan@acme.dev
      ✓ #2 ok effect=mail:jordan@acme.dev
  ✓ execution.ended
`},
		{scenario: "safe", script: []string{"run", "run"}, outcome: trace.MarkOK, want: `
run 1 policy=keys+journal faults=[timeout-after-effect] end=✓
  turn 1
    call send_invoice_email step-4
      ◆ #1 timeout keyed faults=[timeout-after-effect] retry effect=mail:jordan@acme.dev
      ↺ #2 ok keyed
      ✎ step.recorded step-4
  ✓ execution.ended
gap before run 2 afterCrash=false
run 2 policy=keys+journal faults=[] end=✓
  turn 1
    ⟲ replay step-4 from run 1
  ✓ execution.ended
`},
		{scenario: "crash", script: []string{"run", "resume"}, outcome: trace.MarkOK, dup: true, want: `
run 1 policy=none faults=[crash-after-effect] end=☠
  turn 1
    call send_invoice_email step-4
      ◆ #1  faults=[crash-after-effect] effect=mail:jordan@acme.dev
  ☠ run.crashed
gap before run 2 afterCrash=true
run 2 policy=none faults=[] end=✓
  turn 1
    call send_invoice_email step-4
      ✓ #2 ok effect=mail:jordan@acme.dev
  ✓ execution.ended
`},
		{scenario: "invoice-crm", script: []string{"run", "resume"}, outcome: trace.MarkOK, want: `
run 1 policy=journal faults=[crash-after-record] end=☠
  turn 1
    call send_invoice_email step-4
      ✓ #1 ok faults=[crash-after-record] effect=mail:jordan@acme.dev
      ✎ step.recorded step-4
  ☠ run.crashed
gap before run 2 afterCrash=true
run 2 policy=journal faults=[] end=✓
  turn 1
    ⟲ replay step-4 from run 1
  turn 2
    call record_invoice step-5
      ✓ #1 ok effect=crm:
      ✎ step.recorded step-5
  ✓ execution.ended
`},
		// Resetting the world between the runs empties the outbox; the
		// history still says what attempt 1 caused (issue 13, item 8).
		{scenario: "crash", script: []string{"run", "reset-world", "resume"}, outcome: trace.MarkOK, dup: true, want: `
run 1 policy=none faults=[crash-after-effect] end=☠
  turn 1
    call send_invoice_email step-4
      ◆ #1  faults=[crash-after-effect] effect=mail:jordan@acme.dev
  ☠ run.crashed
gap before run 2 afterCrash=true
run 2 policy=none faults=[] end=✓
  turn 1
    call send_invoice_email step-4
      ✓ #2 ok effect=mail:jordan@acme.dev
  ✓ execution.ended
`},
		{scenario: "unsafe-escalates", script: []string{"run"}, outcome: trace.MarkEscalated, want: `
run 1 policy=journal faults=[timeout-after-effect] end=⚑
  turn 1
    call open_ticket step-6
      ◆ #1 timeout faults=[timeout-after-effect] effect=crm:
  ⚑ escalated step-6
`},
	}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{c.scenario}, c.script...), "-"), func(t *testing.T) {
			t.Parallel()
			x, events := recordHistory(t, c.scenario, c.script...)
			tr := trace.New(x.ID)
			delivered := audit.WatchDeliveries(tr)
			for _, ev := range events {
				history.Apply(tr, ev)
			}
			got := dump(tr)
			if strings.TrimSpace(got) != strings.TrimSpace(c.want) {
				t.Errorf("%s %v folds to\n%s\nwant\n%s", c.scenario, c.script, got, c.want)
			}
			if tr.Outcome() != c.outcome {
				t.Errorf("outcome %s, want %s", tr.Outcome(), c.outcome)
			}
			if delivered.Duplicated() != c.dup || x.Duplicates != c.dup {
				t.Errorf("duplicates: trace %v, record %v, want %v", delivered.Duplicated(), x.Duplicates, c.dup)
			}
			if len(tr.Anomalies) != 0 {
				t.Errorf("anomalies in a real history: %+v", tr.Anomalies)
			}
			if tr.LastSeq != events[len(events)-1].Seq || tr.Events != len(events) {
				t.Errorf("LastSeq %d Events %d, history has %d ending at %d", tr.LastSeq, tr.Events, len(events), events[len(events)-1].Seq)
			}
		})
	}
}
