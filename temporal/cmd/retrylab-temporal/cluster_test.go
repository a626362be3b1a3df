package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/devserver"
)

func greet(ctx context.Context, name string) (string, error) {
	return "hello " + name, nil
}

// waitThenGreet greets, waits for the "go" signal, greets again.
func waitThenGreet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second})
	var a, b string
	if err := workflow.ExecuteActivity(ctx, greet, name).Get(ctx, &a); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	if err := workflow.ExecuteActivity(ctx, greet, name+" again").Get(ctx, &b); err != nil {
		return "", err
	}
	return a + ", " + b, nil
}

func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut syncBuf
	code := run(args, &out, &errOut, nil)
	return out.String(), errOut.String(), code
}

// list and import read a real cluster: a running workflow is followed until
// it closes, its events stored as they come; bad addresses, namespaces and
// workflow ids get one line each.
func TestListAndImport(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: quietLogger})
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: "greetings"}, "WaitThenGreet", "ana")
	if err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, code := cli(t, "list", "--address", s.Address())
		if code == 0 && strings.Contains(out, "greet-1") {
			if !strings.Contains(out, wr.GetRunID()) || !strings.Contains(out, "WaitThenGreet") || !strings.Contains(out, "running") {
				t.Errorf("list: %q", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list never showed the workflow: %d %q %q", code, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}

	db := filepath.Join(t.TempDir(), "retrylab.db")
	done := make(chan [3]any)
	go func() {
		out, errOut, code := cli(t, "import", "--address", s.Address(), "-w", "greet-1", "--follow", "--db", db)
		done <- [3]any{out, errOut, code}
	}()
	time.Sleep(2 * time.Second) // the first events are stored; the import waits for more
	if err := c.SignalWorkflow(ctx, "greet-1", "", "go", nil); err != nil {
		t.Fatal(err)
	}
	var greeting string
	if err := wr.Get(ctx, &greeting); err != nil || greeting != "hello ana, hello ana again" {
		t.Fatalf("workflow: %q %v", greeting, err)
	}
	var r [3]any
	select {
	case r = <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("import --follow did not end when the workflow closed")
	}
	out, errOut, code := r[0].(string), r[1].(string), r[2].(int)
	if code != 0 || strings.Count(out, "events of run "+wr.GetRunID()+" imported") < 2 || errOut != "" {
		t.Errorf("import --follow: exit %d\n%s%s", code, out, errOut)
	}
	sdb, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var x history.Execution
	err = sdb.View(func(tx *store.Tx) error {
		var err error
		x, err = history.DecodeExecution(tx.Execution("temporal-" + wr.GetRunID()))
		return err
	})
	sdb.Close()
	if err != nil || x.Status != history.StatusCompleted || x.Scenario != "WaitThenGreet" || !strings.HasPrefix(x.Source, "temporal://") {
		t.Errorf("record %+v %v", x, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--address", s.Address(), "-w", "nope", "--db", db}, `retrylab-temporal: no workflow "nope" in namespace default on ` + s.Address()},
		{[]string{"list", "--address", s.Address(), "-n", "nope"}, `retrylab-temporal: no namespace "nope" on ` + s.Address()},
		{[]string{"list", "--address", "127.0.0.1:1", "--connect-timeout", "1s"}, "retrylab-temporal: cannot reach a Temporal cluster at 127.0.0.1:1"},
		{[]string{"import", "--address", s.Address()}, "retrylab-temporal: import: --workflow is required"},
	} {
		_, errOut, code := cli(t, c.args...)
		if code != 1 || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want one line starting %q", c.args, code, errOut, c.want)
		}
	}
}
