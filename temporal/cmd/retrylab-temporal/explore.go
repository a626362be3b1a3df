package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/tui"
)

func exploreCmd() *cobra.Command {
	var cf clusterFlags
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Open retrylab's explorer on a Temporal cluster, live and read-only",
		Long: `Open retrylab's explorer on a namespace of a Temporal cluster: its workflows
(a visibility query, newest first, refreshed every second) and, for the one
selected, its history folded as 'retrylab show' folds an imported one,
followed live by long poll while it runs. Nothing is written to the cluster;
the histories are kept in a temporary database that goes when the explorer
closes. The explorer offers none of its actions (run, kill, faults): it
is read-only. A lost connection shows in the status bar and is retried.`,
		Example: "  retrylab-temporal explore\n  retrylab-temporal explore --address 127.0.0.1:7233 -n agents",
		Args:    cobra.NoArgs,
		RunE: cf.withClient(func(ctx context.Context, c client.Client) error {
			src, err := newClusterSource(ctx, c, cf, time.Second)
			if err != nil {
				return err
			}
			defer src.Close()
			// The follower announces each committed batch once: the
			// explorer shows it at once, not after a gathering window.
			m := tui.New(tui.Options{Source: src, Title: fmt.Sprintf("temporal://%s/%s (read-only)", cf.address, cf.namespace), NoticeWindow: -1})
			defer m.Close()
			p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(ctx), tea.WithFPS(explorerFPS))
			if _, err := p.Run(); err != nil && ctx.Err() == nil {
				return fmt.Errorf("explorer: %w", err)
			}
			return nil
		}),
	}
	cf.add(cmd)
	return cmd
}

// explorerFPS is the explorer's frame rate, as retrylab's own explorer
// has it: Bubble Tea's highest, so a frame waits at most ~8 ms.
const explorerFPS = 120

// clusterSource is the explorer's Source over a Temporal cluster: the
// visibility list of a namespace, polled, and the histories of the
// workflows the explorer opens, fetched and then followed by long poll into
// a private database, where engine/temporal folds them as it folds
// imported histories. It publishes a notice whenever the list or a
// followed history changed, and when the connection is lost or back.
type clusterSource struct {
	c     client.Client
	cf    clusterFlags
	db    *store.DB
	dir   string
	every time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	execs     []history.Execution         // newest first, from the last list
	runs      map[string]runRef           // execution id -> its workflow run
	listErr   error                       // the last list's failure, until one succeeds
	followed  map[string]bool             // execution ids followed
	followErr map[string]error            // a follower's lost connection
	live      map[string]*rltemporal.Live // execution id -> its run translated so far
	subs      map[chan notice.Notice]bool // subscribers
}

type runRef struct{ workflowID, runID string }

// ShowsImportsOnly says the cluster's workflows are imported traces only:
// the explorer names no simulated outbox or CRM for them.
func (*clusterSource) ShowsImportsOnly() bool { return true }

func newClusterSource(ctx context.Context, c client.Client, cf clusterFlags, every time.Duration) (*clusterSource, error) {
	dir, err := os.MkdirTemp("", "retrylab-explore-")
	if err != nil {
		return nil, err
	}
	// A scratch database, gone when the explorer closes: nothing in it
	// must survive a crash (the cluster keeps the histories), so commits
	// skip the fsync that would stand between a batch and the screen.
	db, err := store.Open(filepath.Join(dir, "cluster.db"), store.Options{NoSync: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &clusterSource{c: c, cf: cf, db: db, dir: dir, every: every, runs: map[string]runRef{},
		followed: map[string]bool{}, followErr: map[string]error{}, live: map[string]*rltemporal.Live{}, subs: map[chan notice.Notice]bool{}}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.list()
	s.wg.Add(1)
	go s.poll()
	return s, nil
}

// Close stops the pollers and followers and removes the private database.
func (s *clusterSource) Close() error {
	s.cancel()
	s.wg.Wait()
	err := s.db.Close()
	os.RemoveAll(s.dir)
	return err
}

func (s *clusterSource) poll() {
	defer s.wg.Done()
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.list()
		}
	}
}

// list reads the namespace's workflows (newest first, at most 200) and
// publishes a notice.
func (s *clusterSource) list() {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.cf.namespace, PageSize: 200})
	s.mu.Lock()
	if err != nil {
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			return
		}
		s.listErr = fmt.Errorf("lost the connection to %s (%v); reconnecting", s.cf.address, rootCause(err))
	} else {
		s.listErr = nil
		s.execs = s.execs[:0]
		for _, x := range resp.GetExecutions() {
			first := x.GetFirstRunId() // a chain of runs is one execution
			if first == "" {
				first = x.GetExecution().GetRunId()
			}
			id := rltemporal.ExecutionName(first)
			s.runs[id] = runRef{x.GetExecution().GetWorkflowId(), x.GetExecution().GetRunId()}
			e := history.Execution{ID: id, Scenario: x.GetType().GetName() + " " + x.GetExecution().GetWorkflowId(), Imported: rltemporal.ImportedFormat,
				Source: fmt.Sprintf("temporal://%s/%s/%s", s.cf.address, s.cf.namespace, x.GetExecution().GetWorkflowId()),
				Status: statusOf(x.GetStatus()), Runs: 1, Started: x.GetStartTime().AsTime(), Updated: x.GetStartTime().AsTime()}
			if ct := x.GetCloseTime(); ct != nil && ct.IsValid() && !ct.AsTime().IsZero() && ct.AsTime().Unix() > 0 {
				e.Ended, e.Updated = ct.AsTime(), ct.AsTime()
			}
			s.execs = append(s.execs, e)
		}
	}
	s.mu.Unlock()
	s.publish(notice.Notice{})
}

func statusOf(st enumspb.WorkflowExecutionStatus) history.Status {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return history.StatusRunning
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return history.StatusCompleted
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return history.StatusKilled
	}
	return history.StatusFailed
}

func (s *clusterSource) publish(n notice.Notice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- n:
		default: // a slow reader gets the next one
		}
	}
}

// Executions lists the namespace's workflows; while the cluster cannot be
// reached it says so (the explorer's status bar shows it) and the poller
// keeps trying.
func (s *clusterSource) Executions(skip, limit int) ([]history.Execution, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, 0, s.listErr
	}
	all := s.execs
	if skip > len(all) {
		skip = len(all)
	}
	page := all[skip:]
	if limit > 0 && len(page) > limit {
		page = page[:limit]
	}
	return append([]history.Execution(nil), page...), len(all), nil
}

// FindExecutions is Executions of those that answer a filter, by the
// explorer's one matching rule (engine/execindex); the cluster's list is
// short enough to scan.
func (s *clusterSource) FindExecutions(query string, skip, limit int) ([]history.Execution, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, 0, s.listErr
	}
	q := execindex.Parse(query)
	var match []history.Execution
	for _, x := range s.execs {
		if q.Match(x) {
			match = append(match, x)
		}
	}
	total := len(match)
	if skip > total {
		skip = total
	}
	match = match[skip:]
	if limit > 0 && len(match) > limit {
		match = match[:limit]
	}
	return match, total, nil
}

// Execution is the folded record once the history was read, else the
// visibility's.
func (s *clusterSource) Execution(id string) (history.Execution, error) {
	var rec []byte
	if err := s.db.View(func(tx *store.Tx) error { rec = tx.Execution(id); return nil }); err != nil {
		return history.Execution{}, err
	}
	if rec != nil {
		return history.DecodeExecution(rec)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.execs {
		if x.ID == id {
			return x, nil
		}
	}
	return history.Execution{}, fmt.Errorf("%w: %s", engine.ErrNoExecution, id)
}

// ImportedEvents is the workflow's history as the fold's events. The first
// call reads the whole history; a running workflow is then followed, each
// committed batch stored, translated (only the batch: engine/temporal's
// Live) and announced, so a later call costs nothing however long the
// history.
func (s *clusterSource) ImportedEvents(id string) ([]trace.Event, error) {
	s.mu.Lock()
	ref, ok := s.runs[id]
	followed := s.followed[id]
	lost := s.followErr[id]
	if live := s.live[id]; live != nil {
		evs := live.Events()
		s.mu.Unlock()
		return evs, lost
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", engine.ErrNoExecution, id)
	}
	if !followed {
		h := &historypb.History{}
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		err := fetchHistory(ctx, s.c.WorkflowService(), s.cf.namespace, ref.workflowID, ref.runID, h, nil)
		cancel()
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			return nil, fmt.Errorf("no workflow %q in namespace %s on %s", ref.workflowID, s.cf.namespace, s.cf.address)
		case err != nil:
			return nil, fmt.Errorf("lost the connection to %s (%v); reconnecting", s.cf.address, rootCause(err))
		case len(h.Events) == 0:
			return nil, fmt.Errorf("no events yet in workflow %s", ref.workflowID)
		}
		if err := s.save(h, 0); err != nil {
			return nil, err
		}
		_, run := rltemporal.Identify(h)
		live := rltemporal.NewLive(run)
		evs, err := live.Add(h.Events)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if !s.followed[id] {
			s.followed[id] = true
			s.live[id] = live
			s.wg.Add(1)
			go s.follow(id, ref, len(h.Events))
		}
		s.mu.Unlock()
		return evs, nil
	}
	var evs []trace.Event
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		evs, err = rltemporal.LoadEvents(tx, id)
		return err
	})
	if err == nil && lost != nil {
		err = lost
	}
	return evs, err
}

// ImportedGrows says that a followed workflow's trace only grows: each
// ImportedEvents holds the one before, then the events of new batches
// (tui.GrowingImports), so the explorer folds only those.
func (s *clusterSource) ImportedGrows(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id] != nil
}

func (s *clusterSource) save(h *historypb.History, known int) error {
	if err := rltemporal.Validate(h); err != nil {
		return err
	}
	return s.db.Update(func(tx *store.Tx) error {
		_, err := rltemporal.SaveFrom(tx, h, fmt.Sprintf("temporal://%s/%s/%s", s.cf.address, s.cf.namespace, h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()), known)
		return err
	})
}

// follow long-polls a run's history until it closes, storing each batch
// and announcing it; a lost connection is announced and the history read
// again (what was stored is kept) after a pause.
func (s *clusterSource) follow(id string, ref runRef, known int) {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		h := &historypb.History{}
		stored := 0 // events of h this read stored (a re-read stores from the start, skipping what is there)
		err := fetchHistory(s.ctx, s.c.WorkflowService(), s.cf.namespace, ref.workflowID, ref.runID, h, func() error {
			if len(h.Events) <= known {
				return nil
			}
			if err := s.save(h, stored); err != nil {
				return err
			}
			s.mu.Lock()
			_, err := s.live[id].Add(h.Events[known:])
			delete(s.followErr, id)
			s.mu.Unlock()
			if err != nil {
				return err
			}
			known, stored = len(h.Events), len(h.Events)
			s.publish(notice.Notice{Execution: id})
			return nil
		})
		if err == nil || s.ctx.Err() != nil {
			return // the run closed: its history is complete
		}
		s.mu.Lock()
		s.followErr[id] = fmt.Errorf("lost the connection to %s (%v); reconnecting", s.cf.address, rootCause(err))
		s.mu.Unlock()
		s.publish(notice.Notice{Execution: id})
		select {
		case <-s.ctx.Done():
		case <-time.After(s.every):
		}
	}
}

func (s *clusterSource) Subscribe(buffer int) (<-chan notice.Notice, func()) {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan notice.Notice, buffer)
	s.mu.Lock()
	s.subs[ch] = true
	s.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, ch)
			s.mu.Unlock()
		})
	}
}

// The rest of the Reader: a cluster has no retrylab history and no world
// of its own. It is only a Reader: the explorer finds no engine.Runner,
// Faults or WorldControl in it, so it offers no key that would change
// anything.

func (s *clusterSource) Events(string, uint64, int) ([]history.Event, error) { return nil, nil }
func (s *clusterSource) MessagesFor(string) ([]world.Message, error)         { return nil, nil }
func (s *clusterSource) RecentMessages(int) ([]world.Message, int, error)    { return nil, 0, nil }
func (s *clusterSource) Records() ([]world.Record, error)                    { return nil, nil }

var (
	_ engine.Reader      = (*clusterSource)(nil)
	_ tui.GrowingImports = (*clusterSource)(nil)
)
