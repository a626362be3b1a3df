package devserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/devserver"
)

// sendConfirmation fails its first two attempts as a flaky mail API would.
func sendConfirmation(ctx context.Context, to string) (string, error) {
	if n := activity.GetInfo(ctx).Attempt; n < 3 {
		return "", temporal.NewApplicationError(fmt.Sprintf("mail API answered 503 (attempt %d)", n), "HTTPError")
	}
	return "msg-1", nil
}

// chargeCard outlives its start-to-close timeout on attempt 1.
func chargeCard(ctx context.Context, amount string) (string, error) {
	if activity.GetInfo(ctx).Attempt == 1 {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return "", ctx.Err()
	}
	return "ch-1", nil
}

func orderWorkflow(ctx workflow.Context, to string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 500 * time.Millisecond,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5},
	})
	var charge, msg string
	if err := workflow.ExecuteActivity(ctx, chargeCard, "49.00").Get(ctx, &charge); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, sendConfirmation, to).Get(ctx, &msg); err != nil {
		return "", err
	}
	return charge + " " + msg, nil
}

// A real cluster, a real worker, real retries: the history Temporal keeps
// (fetched as `temporal workflow show --output json` writes it) imports into
// retrylab with the attempts Temporal did not keep, and their last failure.
func TestDevServerHistoryImports(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := client.Dial(client.Options{HostPort: s.Address(), Namespace: "default", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "orders", worker.Options{})
	w.RegisterWorkflowWithOptions(orderWorkflow, workflow.RegisterOptions{Name: "OrderWorkflow"})
	w.RegisterActivityWithOptions(sendConfirmation, activity.RegisterOptions{Name: "SendConfirmation"})
	w.RegisterActivityWithOptions(chargeCard, activity.RegisterOptions{Name: "ChargeCard"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-7", TaskQueue: "orders"}, "OrderWorkflow", "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var result string
	if err := run.Get(ctx, &result); err != nil || result != "ch-1 msg-1" {
		t.Fatalf("workflow: %q %v", result, err)
	}
	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, "order-7", run.GetRunID(), false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "order-7.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "retrylab.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := rltemporal.ImportFile(db, file)
	if err != nil {
		t.Fatal(err)
	}
	if res.Shape != rltemporal.ShapeCLI || res.Events != len(h.Events) {
		t.Errorf("import %+v", res)
	}
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		evs, err := rltemporal.LoadEvents(tx, res.Execution)
		tr = trace.Fold(res.Execution, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Runs {
		walk(r.Nodes, func(c *trace.Call) {
			for _, a := range c.Attempts {
				got = append(got, fmt.Sprintf("%s #%d %s %s", c.Tool, a.N, a.Mark(), a.Error))
			}
		})
	}
	want := []string{
		"ChargeCard #1 ⋯ start-to-close timeout",
		"ChargeCard #2 ✓ ",
		"SendConfirmation #2 ⋯ HTTPError: mail API answered 503 (attempt 2)",
		"SendConfirmation #3 ✓ ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tr.Outcome() != trace.MarkOK || tr.Scenario != "OrderWorkflow" {
		t.Errorf("outcome %s scenario %s", tr.Outcome(), tr.Scenario)
	}
}

func walk(nodes []trace.Node, fn func(*trace.Call)) {
	for _, n := range nodes {
		switch x := n.(type) {
		case *trace.Call:
			fn(x)
		case *trace.Turn:
			walk(x.Nodes, fn)
		}
	}
}

// Only loopback addresses, and a taken port is named.
func TestDevServerRefuses(t *testing.T) {
	if _, err := devserver.Start(devserver.Options{Address: "0.0.0.0:7233"}); err == nil || !strings.Contains(err.Error(), "loopback address only") {
		t.Errorf("0.0.0.0: %v", err)
	}
	if _, err := devserver.Start(devserver.Options{Address: "localhost"}); err == nil {
		t.Error("an address without a port was taken")
	}
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	_, err = devserver.Start(devserver.Options{Address: s.Address()})
	if err == nil || !strings.Contains(err.Error(), s.Address()+" is in use") {
		t.Errorf("second server on %s: %v", s.Address(), err)
	}
}

// quiet keeps the SDK's client and worker logs out of the test output.
var quiet = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
