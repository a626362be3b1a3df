package interceptor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	temporalinterceptor "go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/engine/otlp"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/devserver"
	"github.com/retrylab/retrylab/temporal/interceptor"
)

// sendInvoice fails twice, as a flaky mail API would, declaring the key
// its send carries.
func sendInvoice(ctx context.Context, to string) (string, error) {
	info := activity.GetInfo(ctx)
	interceptor.SetIdempotencyKey(ctx, info.WorkflowExecution.ID+"/"+info.ActivityID)
	if info.Attempt < 3 {
		return "", temporal.NewApplicationError(fmt.Sprintf("mail API answered 503 (attempt %d)", info.Attempt), "HTTPError")
	}
	return "msg-9", nil
}

func invoiceWorkflow(ctx workflow.Context, to string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5},
	})
	var msg string
	err := workflow.ExecuteActivity(ctx, sendInvoice, to).Get(ctx, &msg)
	return msg, err
}

// The interceptor's spans, received by retrylab's OTLP receiver, and the
// workflow's history, imported, make one execution in which every attempt
// shows with its real outcome: none is "not kept".
func TestEveryAttemptRecorded(t *testing.T) {
	dir := t.TempDir()
	db, http := openWithReceiver(t, dir)

	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tp, err := interceptor.NewTracerProvider(ctx, http.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, "billing", worker.Options{
		Interceptors: []temporalinterceptor.WorkerInterceptor{interceptor.New(interceptor.Options{TracerProvider: tp, RecordArguments: true})},
	})
	w.RegisterWorkflowWithOptions(invoiceWorkflow, workflow.RegisterOptions{Name: "InvoiceWorkflow"})
	w.RegisterActivityWithOptions(sendInvoice, activity.RegisterOptions{Name: "SendInvoice"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "invoice-42", TaskQueue: "billing"}, "InvoiceWorkflow", "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	if err := run.Get(ctx, &msg); err != nil || msg != "msg-9" {
		t.Fatalf("workflow: %q %v", msg, err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	file := writeHistory(ctx, t, c, dir, "invoice-42", run.GetRunID())
	res, err := rltemporal.ImportFile(db, file)
	if err != nil {
		t.Fatal(err)
	}
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		evs, err := rltemporal.LoadEvents(tx, res.Execution)
		tr = trace.Fold(res.Execution, evs)
		if !rltemporal.MergedSpans(tx, otlp.ExecutionID("", rltemporal.SpanConversation(run.GetRunID()))) {
			t.Error("the spans' execution is not known as merged")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tr.Runs {
		for _, n := range r.Nodes {
			turn, ok := n.(*trace.Turn)
			if !ok {
				continue
			}
			for _, cn := range turn.Nodes {
				if call, ok := cn.(*trace.Call); ok {
					for _, a := range call.Attempts {
						got = append(got, fmt.Sprintf("%s #%d %s key=%s", a.Mark(), a.N, a.Error, a.Key))
					}
				}
			}
		}
	}
	want := []string{
		"✖ #1 mail API answered 503 (attempt 1) key=invoice-42/5",
		"✖ #2 mail API answered 503 (attempt 2) key=invoice-42/5",
		"✓ #3  key=invoice-42/5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// quiet keeps the SDK's client and worker logs out of the test output.
var quiet = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// writeHistory writes the history of the workflow id's run to dir as the
// JSON a user exports from the Temporal UI, and returns the file's path.
func writeHistory(ctx context.Context, t *testing.T, c client.Client, dir, id, runID string) string {
	t.Helper()
	h := &historypb.History{}
	for it := c.GetWorkflowHistory(ctx, id, runID, false, 0); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id+".json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// openWithReceiver opens dir's retrylab.db and serves retrylab's OTLP
// receiver into it; both are closed when the test ends.
func openWithReceiver(t *testing.T, dir string) (*store.DB, *httptest.Server) {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "retrylab.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rc := httptest.NewServer((&otlp.Receiver{DB: db, Source: "test receiver"}).Handler())
	t.Cleanup(rc.Close)
	return db, rc
}
