package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/temporal/devserver"
	"github.com/retrylab/retrylab/tui"
)

// The explorer's source over a cluster: it lists the namespace's
// workflows, folds the one opened, follows it live (a notice per committed
// batch, until it closes), refuses every action, and when the cluster goes
// away says so and picks up again once it is back.
func TestExploreSource(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Address()
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "greetings", worker.Options{})
	w.RegisterWorkflowWithOptions(waitThenGreet, workflow.RegisterOptions{Name: "WaitThenGreet"})
	w.RegisterActivityWithOptions(greet, activity.RegisterOptions{Name: "Greet"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-live", TaskQueue: "greetings"}, "WaitThenGreet", "ana")
	if err != nil {
		t.Fatal(err)
	}
	id := "temporal-" + wr.GetRunID()

	src, err := newClusterSource(ctx, c, clusterFlags{address: addr, namespace: "default", timeout: 5 * time.Second}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	notices, unsub := src.Subscribe(64)
	defer unsub()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	waitFor("the workflow listed as running", func() bool {
		xs, n, err := src.Executions(0, 50)
		return err == nil && n == 1 && xs[0].ID == id && xs[0].Status == history.StatusRunning &&
			xs[0].Scenario == "WaitThenGreet greet-live" && xs[0].Imported != ""
	})
	fold := func() *trace.Trace {
		evs, err := src.ImportedEvents(id)
		if err != nil {
			t.Fatal(err)
		}
		return trace.Fold(id, evs)
	}
	// The first greeting is done before the workflow waits for the signal.
	waitFor("the first activity in the trace", func() bool {
		c := fold().LastCall("5")
		return c != nil && len(c.Attempts) == 1 && c.Attempts[0].Finished
	})
	if tr := fold(); tr.End != nil {
		t.Fatalf("a running workflow folded as ended: %+v", tr.End)
	}
	for len(notices) > 0 {
		<-notices
	}
	if err := c.SignalWorkflow(ctx, "greet-live", "", "go", nil); err != nil {
		t.Fatal(err)
	}
	waitFor("a notice for the followed workflow", func() bool {
		select {
		case n := <-notices:
			return n.Execution == id
		default:
			return false
		}
	})
	waitFor("the end of the workflow, live", func() bool { tr := fold(); return tr.End != nil && tr.End.Mark == trace.MarkOK })
	x, err := src.Execution(id)
	if err != nil || x.Status != history.StatusCompleted {
		t.Errorf("record %+v %v", x, err)
	}
	// Read-only: the cluster is a Reader and nothing more.
	var reader engine.Reader = src
	if _, ok := reader.(engine.Runner); ok {
		t.Error("a cluster source can run scenarios")
	}
	if _, ok := reader.(engine.FaultInjector); ok {
		t.Error("a cluster source can arm faults")
	}
	if _, ok := reader.(engine.WorldControl); ok {
		t.Error("a cluster source has world control")
	}

	// The explorer itself on this source: the workflow in the list, its
	// history folded beside it.
	m := tui.New(tui.Options{Source: src, Title: "temporal://" + addr + "/default (read-only)"})
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(140, 40))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		v := string(b)
		return strings.Contains(v, "Trace  "+id[:20]) && strings.Contains(v, "signal go received") &&
			strings.Contains(v, "Greet  15") && strings.Contains(v, "✓ execution completed")
	}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Quit()
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	// The cluster goes away: the list says so; a cluster back at the same
	// address is listed again (a new, empty one here).
	w.Stop()
	s.Stop()
	stopped = true
	waitFor("the lost connection", func() bool {
		_, _, err := src.Executions(0, 50)
		return err != nil && strings.Contains(err.Error(), "lost the connection to "+addr) && strings.HasSuffix(err.Error(), "reconnecting")
	})
	s2, err := devserver.Start(devserver.Options{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	waitFor("the list back", func() bool {
		_, n, err := src.Executions(0, 50)
		return err == nil && n == 0
	})
}
