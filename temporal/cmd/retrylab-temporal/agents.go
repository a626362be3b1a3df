package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	temporalinterceptor "go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/scenario"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
	"github.com/retrylab/retrylab/temporal/agentflow"
	"github.com/retrylab/retrylab/temporal/interceptor"
)

// Exit statuses of run, as 'retrylab run' has them.
const (
	exitFailed    = 1
	exitEscalated = 3
)

// exitError ends the command with a status other than 1.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func workerCmd(out io.Writer) *cobra.Command {
	var cf clusterFlags
	var taskQueue, otlpURL, faultsURL string
	var mayDie bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve the demo agents' workflows and tool calls (one worker process)",
		Long: `Run a Temporal worker for retrylab's demo agents: the agent workflow and the
tool activity, on the task queue 'run' starts its workflows on. Start as many
as you like, on one cluster; every attempt is recorded as an OTLP span to
--otlp (what 'run' prints, or 'retrylab serve --otlp'). Stop with Ctrl-C.`,
		Example: "  retrylab-temporal worker --otlp http://127.0.0.1:4318",
		Args:    cobra.NoArgs,
		RunE: cf.withClient(func(ctx context.Context, c client.Client) error {
			var ics []temporalinterceptor.WorkerInterceptor
			if otlpURL != "" {
				tp, err := interceptor.NewTracerProvider(ctx, otlpURL)
				if err != nil {
					return fmt.Errorf("--otlp: %w", err)
				}
				defer tp.Shutdown(context.Background())
				ics = append(ics, interceptor.New(interceptor.Options{TracerProvider: tp}))
			}
			w := worker.New(c, taskQueue, worker.Options{Interceptors: ics})
			agentflow.Register(w, agentflow.Options{MayDie: mayDie, FaultsURL: faultsURL})
			if err := w.Start(); err != nil {
				return fmt.Errorf("start the worker: %w", err)
			}
			fmt.Fprintf(out, "worker %d on %s, task queue %s\n", os.Getpid(), cf.address, taskQueue)
			<-ctx.Done()
			w.Stop()
			return nil
		}),
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&taskQueue, "task-queue", agentflow.TaskQueue, "the task queue")
	cmd.Flags().StringVar(&otlpURL, "otlp", "", "record every attempt as OTLP spans to this receiver (http://host:port)")
	cmd.Flags().StringVar(&faultsURL, "faults", "", "take the faults armed from outside (what 'run' serves) before each attempt")
	cmd.Flags().BoolVar(&mayDie, "crash-faults", false, "let the scenarios' crash faults kill this process (SIGKILL), as the local engine's workers do")
	return cmd
}

func runAgentCmd(out io.Writer) *cobra.Command {
	var cf clusterFlags
	var dbPath, taskQueue string
	var workers int
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario's agent as a Temporal workflow against the simulated world",
		Long: `Run a scenario (a name from 'retrylab scenarios', or a .yaml path) on a Temporal
cluster: the agent is a workflow (its id is the scenario's execution id), each
tool call an activity under the scenario's retry policy (Temporal's retry
policy: initial interval, backoff, maximum interval and attempts, the
non-retryable outcomes), and the tools are the same simulated mail API and
CRM the local engine uses, on loopback, with the scenario's server-side
faults. key_from: temporal derives keys as Temporal recommends, from the
workflow id and the activity id.

run starts --workers worker processes of this binary ('retrylab-temporal
worker', restarted when one dies: a crash fault kills its worker with
SIGKILL); with --workers 0, start your own. Every attempt is recorded as an
OTLP span into the database, and the workflow's history is imported there as
it is committed, so 'retrylab show', the explorer and 'retrylab outbox' show
every attempt and every effect. run tells each attempt as it happens, as
'retrylab run' does ([agent], [tool], [fault], [mail-api], [temporal]
lines), then prints each call's attempts and the outbox. While it runs, run hosts the database as
'retrylab' does: an explorer or CLI attached to it ('retrylab --db DB', or
its control API) arms faults (t, T, c, esc in the explorer), and the next
activity attempt takes them: timeouts and server errors by the world, a
crash by killing the worker process running the activity; the attempt
records the fault, and its trace marks it ⚡. Before it exits,
run waits for the processes attached to it (Ctrl-C closes at once). The
database must not be open in another retrylab process.

Exit status: 0 when the agent completed, 1 when it failed, 3 when it escalated.`,
		Example: "  retrylab-temporal dev &\n  retrylab-temporal run agent-retry-same-step\n  retrylab-temporal run ./my-scenario.yaml --workers 3",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("run needs SCENARIO (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd.Context(), out, agentRun{cluster: cf, scenario: args[0], dbPath: dbPath, taskQueue: taskQueue, workers: workers})
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&dbPath, "db", "retrylab.db", "retrylab's database")
	cmd.Flags().StringVar(&taskQueue, "task-queue", agentflow.TaskQueue, "the task queue")
	cmd.Flags().IntVar(&workers, "workers", 2, "worker processes to start (0: use workers started apart)")
	return cmd
}

// loadScenario reads a scenario from the catalogue or a file, with its
// YAML, which the workflow's input carries to the workers.
func loadScenario(name string) (*scenario.Scenario, []byte, error) {
	if scenario.IsPath(name) {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario: %w", err)
		}
		s, err := scenario.Parse(name, data)
		return s, data, err
	}
	s, err := scenario.NewCatalog(fixtures.FS).Get(name)
	if err != nil {
		return nil, nil, err
	}
	data, err := fs.ReadFile(fixtures.FS, s.Source)
	return s, data, err
}

// agentRun is what run does.
type agentRun struct {
	cluster          clusterFlags
	scenario, dbPath string
	taskQueue        string
	workers          int
	// observe, when set, sees what the world does (tests).
	observe func(world.Activity)
	// ready, when set, is told where the OTLP receiver and the armed
	// faults are served, before the workflow starts (tests start workers
	// of their own).
	ready func(otlpURL, faultsURL string)
}

func runAgent(ctx context.Context, out io.Writer, r agentRun) error {
	cf, dbPath, taskQueue, workers := r.cluster, r.dbPath, r.taskQueue, r.workers
	scn, yml, err := loadScenario(r.scenario)
	if err != nil {
		return err
	}
	for _, f := range scn.Faults {
		if f.Point == fault.CrashAfterRecord {
			return fmt.Errorf("%s: crash-after-record has no Temporal form (the worker reports an activity's result itself); run it with 'retrylab run'", scn.Name)
		}
		if f.Point.Crash() && workers == 0 {
			fmt.Fprintf(out, "note: %s's %s fault kills a worker only if it runs with --crash-faults\n", scn.Name, f.Point)
		}
	}
	c, err := cf.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	id := scn.Execution
	if id == "" {
		var b [6]byte
		rand.Read(b[:])
		id = "exec_" + hex.EncodeToString(b[:])
	}
	// The host owns the database and the world, and announces itself for
	// the database, so explorers and CLIs attach and arm faults.
	faults := newServerFaults(scn)
	srv, err := control.Open(engine.Config{DBPath: dbPath, Scenarios: fixtures.FS, Clock: wallClock{}, Faults: faults, Imports: all.Registry()})
	if err != nil {
		return err
	}
	w := srv.Host
	// As 'retrylab run' does, the host waits for the processes attached to
	// it (an explorer) before it closes; Ctrl-C closes at once.
	defer w.CloseWhenIdle(ctx, func(_ []string, holds int) {
		fmt.Fprintf(out, "%d retrylab process(es) attached to %s; waiting for them before closing (Ctrl-C closes now)\n", holds, dbPath)
	})
	db := w.Store()
	// What happens is told as it happens: the world's notices, each
	// attempt's spans as they arrive, the history as it is committed.
	narr := newLiveNarrator(out)
	narr.observe = r.observe
	notices, unsubscribe := w.Subscribe(4096)
	narrated := make(chan struct{})
	go func() { defer close(narrated); narr.follow(notices) }()
	var stopOnce sync.Once
	stopNarration := func() { stopOnce.Do(func() { unsubscribe(); <-narrated }) }
	defer stopNarration()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("OTLP receiver: %w", err)
	}
	var secret [16]byte
	rand.Read(secret[:])
	faultsPath := "/retrylab/faults/" + hex.EncodeToString(secret[:])
	mux := http.NewServeMux()
	mux.Handle("/", (&otlp.Receiver{DB: db, Source: "retrylab-temporal run", Stored: func(execs []string) {
		mine := narr.spansExecution()
		for _, x := range execs {
			if x == mine && mine != "" {
				if err := narr.spans(db); err != nil {
					fmt.Fprintf(out, "narration: %v\n", err)
				}
				// An attached explorer shows the attempts of an activity
				// still retrying from its spans: it reads the trace again.
				w.Announce(narr.execution())
				return
			}
		}
	}}).Handler())
	mux.Handle("POST "+faultsPath, faults.handler(out, w.Faults()))
	rc := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go rc.Serve(ln)
	defer rc.Close()
	otlpURL := "http://" + ln.Addr().String()
	faultsURL := otlpURL + faultsPath

	if r.ready != nil {
		r.ready(otlpURL, faultsURL)
	}
	runCtx, stopWorkers := context.WithCancel(ctx)
	pool := &workerPool{}
	defer func() { stopWorkers(); pool.wait() }()
	if workers > 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		args := []string{"worker", "--address", cf.address, "--namespace", cf.namespace, "--task-queue", taskQueue, "--otlp", otlpURL, "--faults", faultsURL, "--crash-faults"}
		for range workers {
			if err := pool.keep(runCtx, narr, self, args); err != nil {
				return err
			}
		}
	}

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, agentflow.WorkflowName,
		agentflow.Input{Source: scn.Source, YAML: yml, MailURL: w.Providers().MailURL(), CRMURL: w.Providers().CRMURL()})
	if err != nil {
		return fmt.Errorf("start workflow %s: %w", id, rootCause(err))
	}
	w.Providers().SetRetention(agentflow.AttributedExecution(run.GetRunID()), scn.Policy.Retention.D())
	fmt.Fprintf(out, "%s: workflow %s, run %s, on %s (task queue %s, %d workers)\n", scn.Name, id, run.GetRunID(), cf.address, taskQueue, workers)
	narr.started(run.GetRunID(), func() (*historypb.History, error) {
		h := &historypb.History{}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return h, fetchHistory(fctx, c.WorkflowService(), cf.namespace, id, run.GetRunID(), h, nil)
	})

	// Follow the history as it is committed, into the database.
	h := &historypb.History{}
	known := 0
	source := fmt.Sprintf("temporal://%s/%s/%s", cf.address, cf.namespace, id)
	var exec string
	save := func() error {
		err := db.Update(func(tx *store.Tx) error {
			st, err := rltemporal.SaveFrom(tx, h, source, known)
			if err == nil {
				known, exec = len(h.Events), st.Execution
			}
			return err
		})
		if err == nil {
			w.Announce(exec) // an attached explorer follows the workflow as it is committed
			narr.history(h)
		}
		return err
	}
	if err := fetchHistory(ctx, c.WorkflowService(), cf.namespace, id, run.GetRunID(), h, save); err != nil {
		return fmt.Errorf("history of %s: %w", id, rootCause(err))
	}
	var res agentflow.Result
	if err := run.Get(ctx, &res); err != nil {
		return fmt.Errorf("workflow %s: %w", id, rootCause(err))
	}
	stopWorkers()
	pool.wait()
	stopNarration() // what the world did is told before the summary

	// What happened, from the database: the history merged with every
	// attempt's span, and the world's outbox.
	var tr *trace.Trace
	if err := db.View(func(tx *store.Tx) error {
		evs, err := rltemporal.LoadEvents(tx, exec)
		tr = trace.Fold(exec, evs)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "history: %d events -> %s in %s\n", len(h.Events), exec, dbPath)
	printCalls(out, tr)
	msgs, err := w.Providers().MessagesFor(exec)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "outbox of %s: %d message(s)\n", exec, len(msgs))
	for _, m := range msgs {
		fmt.Fprintf(out, "  %s  %-24s %q  (step %s, attempt %d, key %s)\n", m.ID, m.To, m.Subject, m.Attribution.Step, m.Attribution.Attempt, orNone(m.Attribution.Key))
	}
	switch res.Status {
	case agentflow.StatusCompleted:
		fmt.Fprintln(out, "completed")
		return nil
	case agentflow.StatusEscalated:
		return &exitError{code: exitEscalated, msg: "escalated: " + res.Error}
	default:
		return &exitError{code: exitFailed, msg: "failed: " + res.Error}
	}
}

// stepOf names the scenario step of an activity, from its input.
func stepOf(input json.RawMessage) string {
	var in []agentflow.Call // the activity's arguments: one Call
	if json.Unmarshal(input, &in) != nil || len(in) != 1 || in[0].Step == "" {
		var one agentflow.Call
		if json.Unmarshal(input, &one) != nil || one.Step == "" {
			return ""
		}
		return " (" + one.Step + ")"
	}
	return " (" + in[0].Step + ")"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// printCalls prints each tool call of the trace with its attempts.
func printCalls(out io.Writer, tr *trace.Trace) {
	var walk func(nodes []trace.Node)
	walk = func(nodes []trace.Node) {
		for _, n := range nodes {
			if c, ok := n.(*trace.Call); ok {
				fmt.Fprintf(out, "  %s %s%s\n", c.Call, c.Tool, stepOf(c.Args))
				for _, a := range c.Attempts {
					line := fmt.Sprintf("    %s #%d %s", a.Mark(), a.N, a.Outcome)
					if a.Deduplicated {
						line += " (deduplicated)"
					}
					if len(a.Faults) > 0 {
						line += " " + trace.MarkFault.Glyph() + strings.Join(a.Faults, ",")
					}
					if a.Key != "" {
						line += " key " + a.Key
					}
					if w := a.Attrs["temporal.worker"]; w != "" {
						line += " on worker " + w
					}
					if a.Error != "" {
						line += ": " + a.Error
					}
					fmt.Fprintln(out, line)
				}
				continue
			}
			walk(n.Children())
		}
	}
	walk(tr.Nodes)
}

// workerPool keeps worker processes running until its context ends,
// starting a new one when one dies (a crash fault).
type workerPool struct{ wg sync.WaitGroup }

func (p *workerPool) keep(ctx context.Context, out io.Writer, self string, args []string) error {
	start := func() (*exec.Cmd, error) {
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start a worker: %w", err)
		}
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		return err
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-ctx.Done():
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-done
				}
				return
			case err := <-done:
				fmt.Fprintf(out, "worker %d ended (%v); starting another\n", cmd.Process.Pid, err)
				if cmd, err = start(); err != nil {
					fmt.Fprintln(out, err)
					return
				}
			}
		}
	}()
	return nil
}

func (p *workerPool) wait() { p.wg.Wait() }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// serverFaults carries out a scenario's server-side faults, each at most
// once, as the local engine's host does.
type serverFaults struct {
	mu     sync.Mutex
	faults []scenario.Fault
	fired  []bool
	// armed are the server-side faults armed from outside that an
	// attempt took (handler), waiting for its request.
	armed map[armedKey][]fault.Point
}

func newServerFaults(s *scenario.Scenario) *serverFaults {
	f := &serverFaults{}
	for _, x := range s.Faults {
		if x.Point.ServerSide() {
			f.faults = append(f.faults, x)
		}
	}
	f.fired = make([]bool, len(f.faults))
	f.armed = map[armedKey][]fault.Point{}
	return f
}

// armedKey names one attempt of a tool call.
type armedKey struct {
	execution, step string
	attempt         int
}

// armedSource is what the faults armed from outside come from: the host
// an explorer or CLI attaches to.
type armedSource interface{ TakeArmed() []fault.Point }

// handler serves the activities' question (agentflow.AttemptFaults): the
// faults armed from outside are taken by the attempt that asks, and the
// scenario's server-side faults it meets; the world carries out the
// server-side ones on that attempt's request, the activity the crash ones,
// and the attempt records them all (the trace marks it ⚡).
// crash-after-record has no Temporal form and is dropped, with a note.
func (f *serverFaults) handler(out io.Writer, src armedSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a agentflow.AttemptFaults
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&a); err != nil || a.Execution == "" || a.Step == "" || a.Attempt < 1 {
			http.Error(w, "want {execution, step, attempt}", http.StatusBadRequest)
			return
		}
		key := armedKey{a.Execution, a.Step, a.Attempt}
		for _, p := range src.TakeArmed() {
			if p == fault.CrashAfterRecord {
				fmt.Fprintf(out, "note: %s armed from outside has no Temporal form; dropped\n", p)
				continue
			}
			a.Armed = append(a.Armed, p)
			if p.ServerSide() {
				f.mu.Lock()
				f.armed[key] = append(f.armed[key], p)
				f.mu.Unlock()
			}
		}
		// The scenario's server-side faults this attempt meets are taken
		// now, so the attempt records them; the world carries them out
		// on its request.
		f.mu.Lock()
		for i, x := range f.faults {
			if f.fired[i] || x.Step != "" && x.Step != a.Step || x.Attempt != 0 && x.Attempt != a.Attempt {
				continue
			}
			f.fired[i] = true
			f.armed[key] = append(f.armed[key], x.Point)
			a.Planned = append(a.Planned, x.Point)
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(a)
	})
}

func (f *serverFaults) ServerFaults(execution, step string, attempt int) []fault.Point {
	if execution == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := armedKey{execution, step, attempt}
	out := f.armed[key]
	delete(f.armed, key)
	for i, x := range f.faults {
		if f.fired[i] || x.Step != "" && x.Step != step || x.Attempt != 0 && x.Attempt != attempt {
			continue
		}
		f.fired[i] = true
		out = append(out, x.Point)
	}
	return out
}
