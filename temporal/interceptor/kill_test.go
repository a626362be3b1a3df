package interceptor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/engine/otlp"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/devserver"
	"github.com/retrylab/retrylab/temporal/internal/workerproc"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(workerproc.EnvAddr); addr != "" {
		os.Exit(workerProcess(addr, os.Getenv(workerproc.EnvOTLP), os.Getenv(workerproc.EnvMark)))
	}
	os.Exit(m.Run())
}

// workerProcess is a worker of its own, as a team's would be: it runs
// SlowSend, whose first attempt hangs after saying it started.
func workerProcess(addr, otlpURL, mark string) int {
	return workerproc.Serve(addr, otlpURL, "mail", func(w worker.Worker) {
		w.RegisterWorkflowWithOptions(slowWorkflow, workflow.RegisterOptions{Name: "SlowWorkflow"})
		w.RegisterActivityWithOptions(func(ctx context.Context, to string) (string, error) {
			if activity.GetInfo(ctx).Attempt == 1 {
				os.WriteFile(mark, []byte(fmt.Sprint(os.Getpid())), 0o600)
				<-ctx.Done() // killed before this returns
				return "", ctx.Err()
			}
			return "msg-1", nil
		}, activity.RegisterOptions{Name: "SlowSend"})
	})
}

func slowWorkflow(ctx workflow.Context, to string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 50 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 3},
	})
	var msg string
	err := workflow.ExecuteActivity(ctx, "SlowSend", to).Get(ctx, &msg)
	return msg, err
}

// Two worker processes on one cluster; the first is killed (SIGKILL) in
// the middle of the activity's first attempt, the second finishes the
// workflow. The killed attempt left no span, so retrylab does not invent
// one: it shows as not kept, with Temporal's start-to-close timeout; the
// second attempt is the kept one, and its span was recorded.
func TestWorkerKilledMidActivity(t *testing.T) {
	dir := t.TempDir()
	db, rc := openWithReceiver(t, dir)
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	mark := filepath.Join(dir, "started")
	startWorker := func() *exec.Cmd {
		cmd := workerproc.Command(s.Address(), rc.URL, mark)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	a := startWorker()

	c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "slow-1", TaskQueue: "mail"}, "SlowWorkflow", "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("attempt 1 never started")
		}
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	startWorker()
	var msg string
	if err := run.Get(ctx, &msg); err != nil || msg != "msg-1" {
		t.Fatalf("workflow: %q %v", msg, err)
	}

	file := writeHistory(ctx, t, c, dir, "slow-1", run.GetRunID())
	// The surviving worker's span is sent when its attempt ends; give the
	// receiver a moment to have it stored.
	var tr *trace.Trace
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := rltemporal.ImportFile(db, file)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.View(func(tx *store.Tx) error {
			evs, err := rltemporal.LoadEvents(tx, res.Execution)
			tr = trace.Fold(res.Execution, evs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		c := tr.LastCall("5")
		if c != nil && len(c.Attempts) == 2 && c.Attempts[1].Attrs["retrylab.span"] != "" || time.Now().After(deadline) {
			break
		}
	}
	call := tr.LastCall("5")
	var got []string
	for _, a := range call.Attempts {
		got = append(got, fmt.Sprintf("%s #%d %s span=%v", a.Mark(), a.N, a.Error, a.Attrs["retrylab.span"] != ""))
	}
	want := []string{"⏱ #1 started, no end recorded (its worker died?); Temporal: start-to-close timeout span=false", "✓ #2  span=true"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := call.Attempts[0].Attrs["temporal.worker"]; w != fmt.Sprintf("%d@%s", a.Process.Pid, hostname(t)) {
		t.Errorf("the killed attempt's worker is %q, want the killed process", w)
	}
	// The spans' own execution (markers, an orphan whose parent never came)
	// still folds.
	if err := db.View(func(tx *store.Tx) error {
		id := otlp.ExecutionID("", rltemporal.SpanConversation(run.GetRunID()))
		spans, err := otlp.Load(tx, id)
		if err == nil && len(trace.Fold(id, otlp.Events(spans)).Runs) == 0 {
			err = fmt.Errorf("the spans of %s fold to nothing", id)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
