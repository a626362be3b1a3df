package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// clusterFlags say which cluster and namespace a command reads.
type clusterFlags struct {
	address   string
	namespace string
	timeout   time.Duration
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "address", "127.0.0.1:7233", "the cluster's frontend host:port")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "the namespace")
	cmd.Flags().DurationVar(&f.timeout, "connect-timeout", 5*time.Second, "how long to try to reach the cluster")
}

// dial connects and checks the namespace, so an unreachable cluster or a
// wrong namespace is a one-line error before anything else happens.
func (f *clusterFlags) dial(ctx context.Context) (client.Client, error) {
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := client.DialContext(cctx, client.Options{HostPort: f.address, Namespace: f.namespace, Logger: quietLogger})
	if err != nil {
		return nil, fmt.Errorf("cannot reach a Temporal cluster at %s: %w", f.address, rootCause(err))
	}
	if _, err := c.WorkflowService().DescribeNamespace(cctx, &workflowservice.DescribeNamespaceRequest{Namespace: f.namespace}); err != nil {
		c.Close()
		var nf *serviceerror.NamespaceNotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("no namespace %q on %s", f.namespace, f.address)
		}
		return nil, fmt.Errorf("namespace %q on %s: %w", f.namespace, f.address, rootCause(err))
	}
	return c, nil
}

// withClient is a command's RunE that dials the cluster, runs fn with the
// command's context and the client, and closes the client after.
func (f *clusterFlags) withClient(fn func(ctx context.Context, c client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		c, err := f.dial(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(ctx, c)
	}
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func listCmd(out io.Writer) *cobra.Command {
	var cf clusterFlags
	var query string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a cluster's workflows (a visibility query), newest first",
		Long: `List the workflows of a namespace, newest first, as the cluster's visibility
store knows them: workflow id, run id, type, status and start time. --query
takes a visibility query (e.g. 'WorkflowType = "OrderWorkflow"'). Read-only.`,
		Example: "  retrylab-temporal list\n  retrylab-temporal list --address 127.0.0.1:7233 -n agents --query 'ExecutionStatus = \"Running\"'",
		Args:    cobra.NoArgs,
		RunE: cf.withClient(func(ctx context.Context, c client.Client) error {
			var token []byte
			n := 0
			for n < limit {
				resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
					Namespace: cf.namespace, Query: query, PageSize: int32(min(limit-n, 1000)), NextPageToken: token})
				if err != nil {
					return fmt.Errorf("list workflows: %w", rootCause(err))
				}
				for _, x := range resp.GetExecutions() {
					fmt.Fprintf(out, "%-36s  %-36s  %-24s  %-10s  %s\n", x.GetExecution().GetWorkflowId(), x.GetExecution().GetRunId(),
						x.GetType().GetName(), statusWord(x.GetStatus()), x.GetStartTime().AsTime().UTC().Format(time.RFC3339))
					n++
				}
				if token = resp.GetNextPageToken(); len(token) == 0 {
					break
				}
			}
			if n == 0 {
				fmt.Fprintf(out, "no workflows in namespace %s\n", cf.namespace)
			}
			return nil
		}),
	}
	cf.add(cmd)
	cmd.Flags().StringVarP(&query, "query", "q", "", "visibility query")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many workflows")
	return cmd
}

func statusWord(s enumspb.WorkflowExecutionStatus) string {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	}
	return s.String()
}

func importCmd(out io.Writer) *cobra.Command {
	var cf clusterFlags
	var workflowID, runID, dbPath string
	var follow bool
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import a workflow's history from a cluster into retrylab's database",
		Long: `Fetch a workflow run's history from the cluster and store it in retrylab's
database, as 'retrylab import' stores a downloaded history (the latest run
unless --run names one). With --follow, a running workflow's new events are
stored as the cluster commits them (a long poll), until the run closes; each
batch is one transaction. The cluster is only read.

The database must not be open in another retrylab process (the explorer, or
'retrylab serve'): stop it first, or import a downloaded file later.`,
		Example: "  retrylab-temporal import -w order-1042\n  retrylab-temporal import -w order-1042 --follow --db retrylab.db",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workflowID == "" {
				return errors.New("import: --workflow is required")
			}
			ctx := cmd.Context()
			c, err := cf.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			db, err := store.Open(dbPath, store.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			h := &historypb.History{}
			known := 0 // events of h stored by an earlier batch
			source := fmt.Sprintf("temporal://%s/%s/%s", cf.address, cf.namespace, workflowID)
			save := func() error {
				if err := rltemporal.Validate(h); err != nil {
					return err
				}
				return db.Update(func(tx *store.Tx) error {
					st, err := rltemporal.SaveFrom(tx, h, source, known)
					if err == nil {
						known = len(h.Events)
					}
					if err == nil && st.Events > 0 {
						fmt.Fprintf(out, "%s: %d events of run %s imported (%d in all) -> %s\n", workflowID, st.Events, st.RunID, len(h.Events), st.Execution)
					}
					return err
				})
			}
			var batch func() error
			if follow {
				batch = save
			}
			err = fetchHistory(ctx, c.WorkflowService(), cf.namespace, workflowID, runID, h, batch)
			var nf *serviceerror.NotFound
			switch {
			case errors.As(err, &nf):
				return fmt.Errorf("no workflow %q in namespace %s on %s", workflowID, cf.namespace, cf.address)
			case err != nil && ctx.Err() != nil && len(h.Events) > 0:
				return save() // stopped while following: keep what came
			case err != nil:
				return fmt.Errorf("history of %s: %w", workflowID, rootCause(err))
			}
			if len(h.Events) == 0 {
				return fmt.Errorf("no workflow %q in namespace %s on %s", workflowID, cf.namespace, cf.address)
			}
			if follow {
				return nil
			}
			return save()
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVarP(&workflowID, "workflow", "w", "", "the workflow id")
	cmd.Flags().StringVarP(&runID, "run", "r", "", "the run id (default: the latest run)")
	cmd.Flags().StringVar(&dbPath, "db", "retrylab.db", "retrylab's database")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep storing a running workflow's events until the run closes")
	return cmd
}

// fetchHistory reads a run's history into h, page by page. With batch set,
// it follows the run: each call waits for new events (a long poll), and
// batch is called after each page that brought some, until the run closes.
// Without a run id, the latest run is read and then kept to.
func fetchHistory(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace, workflowID, runID string,
	h *historypb.History, batch func() error) error {
	req := &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:              namespace,
		Execution:              &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID},
		WaitNewEvent:           batch != nil,
		HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
	}
	restarts := 0
	for {
		resp, err := svc.GetWorkflowExecutionHistory(ctx, req)
		if err != nil && req.NextPageToken != nil && branchChanged(err) && restarts < 5 {
			// The run's history branch moved under the page token (the
			// server says so while it changes its mutable state): read the
			// history again from the start; what was stored is kept, the
			// store skips events it already holds.
			restarts++
			req.NextPageToken, h.Events = nil, h.Events[:0]
			continue
		}
		if err != nil {
			return err
		}
		restarts = 0
		evs := resp.GetHistory().GetEvents()
		if req.Execution.RunId == "" && len(evs) > 0 {
			req.Execution.RunId = evs[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
		}
		h.Events = append(h.Events, evs...)
		if batch != nil && len(evs) > 0 {
			if err := batch(); err != nil {
				return err
			}
		}
		if len(resp.GetNextPageToken()) == 0 {
			return nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}

// branchChanged recognises the server's "current branch changed" answer to
// a page token that no longer matches the run's history branch.
func branchChanged(err error) bool {
	var ia *serviceerror.InvalidArgument
	return errors.As(err, &ia) && strings.Contains(ia.Error(), "branch token")
}
