package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/wire"
	"github.com/retrylab/retrylab/internal/tailbuf"
	"github.com/retrylab/retrylab/store"
)

// ExitKilled is the exit code of a process killed by SIGKILL (128 + 9).
const ExitKilled = 137

// RunOptions adjust a run.
type RunOptions struct {
	// Keys and Journal override the scenario's policy when set.
	Keys, Journal *bool
	// Execution overrides the scenario's execution id.
	Execution string
	// StartKey is a run-level idempotency key: starting twice with the same
	// key gives one execution, unless the first one failed.
	StartKey string
	// Restart runs the scenario's own execution again when it exists
	// already (a scenario's script, run --restart). Without it a scenario
	// whose execution id is taken starts a new execution with a new id
	// (the first run of naive is exec_7K2Q, the second another), unless
	// the scenario's lesson reruns its execution (scenario.Reruns: safe's
	// second run is answered by the journal, as in the article).
	Restart bool
	// Pace is slow motion for this run: its worker waits this long before
	// each attempt, so a room can follow, and records the wait (a Paced
	// event). The scenario's deadlines stay as they are. The host's own
	// pace (RuntimeAPI.SetPace) applies when it is longer.
	Pace time.Duration `json:"pace,omitempty"`
}

// Run is one worker run of an execution.
type Run struct {
	Execution string
	Number    int
	// Deduplicated is set when a start with a known StartKey found an
	// existing execution: nothing was started.
	Deduplicated bool
	done         chan struct{}
	result       RunResult
}

// RunResult is how a run ended.
type RunResult struct {
	Status   history.Status
	ExitCode int
	Err      error
}

// NewRun is a run that another process plays (an attached process's view
// of a run in the host it is attached to, engine/control): end records how
// it ended and closes Done; call it once.
func NewRun(execution string, number int, deduplicated bool) (r *Run, end func(RunResult)) {
	r = &Run{Execution: execution, Number: number, Deduplicated: deduplicated, done: make(chan struct{})}
	return r, func(res RunResult) {
		r.result = res
		close(r.done)
	}
}

// Done is closed when the run's worker has exited and its end is recorded.
func (r *Run) Done() <-chan struct{} { return r.done }

// Wait blocks until the run ends or ctx is done.
func (r *Run) Wait(ctx context.Context) (RunResult, error) {
	select {
	case <-r.done:
		return r.result, nil
	case <-ctx.Done():
		return RunResult{}, ctx.Err()
	}
}

// workerProc is one run's worker: the process that plays the run, from the
// run's start to its end.
type workerProc struct {
	proc *process // nil while the worker starts
	pid  int
	// execution and number name the run.
	execution string
	number    int
	// end receives how the run ended: the process's exit code, or 0 when
	// the worker finished the run and stayed for another (Config.KeepWorkers).
	end chan int
	// done is closed when the run's end is recorded.
	done chan struct{}
	// killed says the run was ended by Kill (from outside), not by a crash
	// fault; guarded by proc.mu.
	killed bool
	// stays says the worker finished the run and asked for another (set
	// before end is sent); admitted, set before done is closed, says the
	// host took its process back as an idle worker.
	stays, admitted bool
}

// kill sends SIGKILL to the process while it still plays this run; a
// process that has gone on to another run (or none) is left alone.
func (w *workerProc) kill() {
	p := w.proc
	if p == nil {
		return // still starting
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != w {
		return
	}
	w.killed = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
}

// process is a worker process of this host's binary. Without
// Config.KeepWorkers it plays one run and exits. With it, a worker that
// finished its run cleanly asks for the next (POST /v1/workers/next) and
// waits idle until the host hands it one, so a run need not start a
// process; a crash is still a SIGKILL of the process, which then is gone.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stderr *tailbuf.Buffer
	assign chan wire.Assignment // an idle worker's next run
	exited chan struct{}        // closed when the process has exited

	mu  sync.Mutex
	run *workerProc // the run it plays; nil while idle, and once exited
}

// Start runs a scenario: a new execution, with the scenario's own id the
// first time (see RunOptions.Restart for when it runs that one again).
func (h *Host) Start(name string, opts RunOptions) (*Run, error) {
	scn, err := h.catalog.Get(name)
	if err != nil {
		return nil, err
	}
	return h.StartScenario(scn, opts)
}

// StartScenario is Start for an already parsed scenario.
func (h *Host) StartScenario(scn *scenario.Scenario, opts RunOptions) (*Run, error) {
	policy := history.Policy{Keys: scn.Policy.Keys, Journal: scn.Policy.Journal}
	if opts.Keys != nil {
		policy.Keys = *opts.Keys
	}
	if opts.Journal != nil {
		policy.Journal = *opts.Journal
	}
	id := opts.Execution
	if id == "" {
		id = scn.Execution
	}
	if opts.StartKey != "" {
		sum := sha256.Sum256([]byte(scn.Name + "\x00" + opts.StartKey))
		id = "exec_" + strings.ToUpper(fmt.Sprintf("%x", sum[:3]))
		if x, err := h.Execution(id); err == nil && x.Status != history.StatusFailed {
			r := &Run{Execution: id, Number: x.Runs, Deduplicated: true, done: make(chan struct{})}
			r.result = RunResult{Status: x.Status}
			close(r.done)
			return r, nil
		}
	}
	if id == "" || (opts.Execution == "" && opts.StartKey == "" && !opts.Restart && !scn.Reruns() && h.exists(id)) {
		id = h.freshExecutionID(scn.Name)
	}
	return h.launch(id, scn, policy, opts.StartKey, opts.Pace)
}

// exists reports whether execution id is recorded (or starting).
func (h *Host) exists(id string) bool {
	h.mu.Lock()
	st := h.execs[id]
	starting := st != nil && st.worker != nil
	h.mu.Unlock()
	if starting {
		return true
	}
	_, err := h.Execution(id)
	return !errors.Is(err, ErrNoExecution)
}

// freshExecutionID is a new execution id no execution has.
func (h *Host) freshExecutionID(name string) string {
	for i := 0; ; i++ {
		id := h.newExecutionID(fmt.Sprintf("%s\x00%d", name, i))
		if !h.exists(id) {
			return id
		}
	}
}

func (h *Host) newExecutionID(name string) string {
	sum := sha256.Sum256([]byte(name + h.clock.Now().String() + h.token))
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 4)
	for i := range b {
		b[i] = digits[sum[i]%32]
	}
	return "exec_" + string(b)
}

// Resume continues an unfinished execution with a new run. An empty id means
// the most recently started unfinished execution.
func (h *Host) Resume(id string) (*Run, error) {
	if id == "" {
		x, ok, err := h.LatestUnfinished()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("nothing to resume: every execution has finished (run a scenario first)")
		}
		id = x.ID
	}
	x, err := h.Execution(id)
	if err != nil {
		return nil, err
	}
	if x.Imported != "" {
		return nil, fmt.Errorf("execution %s was imported (%s), not run by retrylab: there is nothing to resume", id, x.Imported)
	}
	if x.Status.Finished() {
		return nil, fmt.Errorf("execution %s has %s; nothing to resume (run its scenario again for a new execution)", id, x.Status)
	}
	name := x.Scenario
	if x.Source != "" {
		name = x.Source // a scenario run from a file is resumed from that file
	}
	scn, err := h.catalog.Get(name)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	return h.launch(id, scn, x.Policy, x.StartKey, 0)
}

// reserve makes id's state for a new run while its worker starts; h.mu
// is held. The server-side faults planned for attempts of earlier runs
// whose requests have not reached the world yet stay with those attempts:
// a worker killed just after writing its request still has it delivered
// (the kernel sends what was written), and that request must meet the
// faults its attempt was given, not take effect unfaulted.
func (h *Host) reserve(id string, scn *scenario.Scenario, policy history.Policy, pace time.Duration) (*execState, error) {
	old := h.execs[id]
	if old != nil && old.worker != nil {
		return nil, fmt.Errorf("%w: %s (its worker is pid %d)", ErrBusy, id, old.worker.pid)
	}
	st := &execState{scn: scn, policy: policy, pace: pace, worker: &workerProc{end: make(chan int, 1), done: make(chan struct{})},
		server: map[attemptKey][]fault.Point{}}
	if old != nil {
		for k, points := range old.server {
			st.server[k] = points
		}
	}
	h.execs[id] = st
	return st, nil
}

// launch creates or restarts the execution record and starts a worker.
func (h *Host) launch(id string, scn *scenario.Scenario, policy history.Policy, startKey string, pace time.Duration) (*Run, error) {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return nil, fmt.Errorf("%w; start %s again in a moment", ErrHostClosing, id)
	}
	st, err := h.reserve(id, scn, policy, pace)
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}

	release := func(err error) (*Run, error) {
		h.mu.Lock()
		st.worker = nil
		h.mu.Unlock()
		return nil, err
	}
	now := h.clock.Now()
	var run int
	var started *history.Event
	// The record and its first event are one commit: a host killed between
	// them must not leave an execution without its ExecutionStarted.
	err = h.db.Update(func(tx *store.Tx) error {
		started = nil
		data := tx.Execution(id)
		var x history.Execution
		if data == nil {
			x = history.Execution{ID: id, Scenario: scn.Name, Source: scn.File, Started: now, StartKey: startKey}
			ev := history.Event{Type: history.ExecutionStarted, Time: now, Run: 1, Scenario: scn.Name, Text: policy.String()}
			if err := history.Append(tx, id, &ev); err != nil {
				return err
			}
			started = &ev
		} else {
			var err error
			if x, err = history.DecodeExecution(data); err != nil {
				return err
			}
			if x.Scenario != scn.Name {
				return fmt.Errorf("execution %s belongs to scenario %q, not %q (run `retrylab reset` to start over)", id, x.Scenario, scn.Name)
			}
		}
		x.Runs++
		x.Status = history.StatusRunning
		x.Policy = policy
		x.Updated = now
		x.Ended = time.Time{}
		x.Error = ""
		run = x.Runs
		if err := history.Put(tx, x); err != nil {
			return err
		}
		if started == nil {
			// Run again: the lists (newest first) show it first, by last
			// activity, not where it was first started.
			return tx.MoveExecutionToNewest(id)
		}
		return nil
	})
	if err != nil {
		return release(err)
	}
	if started != nil {
		h.bus.publish(notice.Notice{Execution: id, Event: started})
	}
	if err := h.rebuild(id, st, run); err != nil {
		return release(err)
	}
	h.configureWorld(id, scn)
	w := &workerProc{execution: id, number: run, end: make(chan int, 1), done: make(chan struct{})}
	p := h.takeIdle(w)
	kept := p != nil
	if p == nil {
		var err error
		if p, err = h.spawn(id, run, w); err != nil {
			_, _ = h.record(id, history.Event{Type: history.ExecutionFailed, Run: run, Error: err.Error()},
				func(x *history.Execution) { x.Status = history.StatusFailed; x.Error = err.Error() })
			return release(err)
		}
	}
	w.proc, w.pid = p, p.pid
	// What the new worker reports waits (in live, on st.rec) until its
	// WorkerStarted is recorded: a process started under load can send its
	// first event before this goroutine records it, and a history must not
	// hold a run's events before the start of the worker that sent them.
	st.rec.Lock()
	h.mu.Lock()
	st.worker = w
	h.mu.Unlock()
	r := &Run{Execution: id, Number: run, done: make(chan struct{})}
	go h.supervise(id, st, w, r)
	if h.beforeWorkerStarted != nil {
		h.beforeWorkerStarted()
	}
	_, err = h.record(id, history.Event{Type: history.WorkerStarted, Run: run, PID: w.pid, Text: policy.String()}, nil)
	st.rec.Unlock()
	if err != nil {
		w.kill()
		return r, nil
	}
	// A kept worker learns its run only now, after WorkerStarted is
	// recorded, as a new process would hardly have begun by then.
	if kept {
		p.assign <- wire.Assignment{Execution: id, Run: run} // buffered: it waits for one at a time
	}
	return r, nil
}

// fold reads an execution into the one model of a trace (imports.Fold);
// on an error the trace is empty, never nil.
func (h *Host) fold(id string) (*trace.Trace, error) {
	t, err := imports.Fold(h.stored(), id, 0)
	if err != nil {
		return trace.New(id), err
	}
	return t, nil
}

// rebuild reads the history into the in-memory state for a new run: where
// each step's attempts go on counting, and which planned faults fired.
func (h *Host) rebuild(id string, st *execState, run int) error {
	t, err := h.fold(id)
	if err != nil {
		return err
	}
	fired := map[int]bool{}
	for i := range t.PlansFired() {
		fired[i-1] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st.run = run
	st.attempts = t.LastAttempts()
	st.firedPlan = fired
	st.crashPoint = ""
	return nil
}

// spawn starts a worker process for run of execution id, playing w; with
// w nil (and id empty) a kept worker that waits idle for a run.
func (h *Host) spawn(id string, run int, w *workerProc) (*process, error) {
	cmd := exec.Command(h.cfg.Executable)
	cmd.Env = append(os.Environ(),
		wire.EnvWorker+"="+h.runtimeURL,
		wire.EnvExecution+"="+id,
		wire.EnvRun+"="+strconv.Itoa(run),
		wire.EnvToken+"="+h.token,
		wire.EnvSocket+"="+h.runtimeSock,
	)
	if h.cfg.KeepWorkers > 0 {
		cmd.Env = append(cmd.Env, wire.EnvKeep+"=1")
	}
	stderr := tailbuf.New(8 << 10)
	cmd.Stderr = stderr
	cmd.SysProcAttr = workerProcAttr()
	p := &process{cmd: cmd, stderr: stderr, assign: make(chan wire.Assignment, 1), exited: make(chan struct{}), run: w}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", h.cfg.Executable, err)
	}
	p.pid = cmd.Process.Pid
	h.mu.Lock()
	h.procs[p.pid] = p
	select {
	case <-h.quit:
		_ = cmd.Process.Signal(syscall.SIGKILL) // the host closed meanwhile
	default:
	}
	h.mu.Unlock()
	go h.reap(p)
	return p, nil
}

// prestart starts a kept worker with no run, to wait idle for one, when
// the host keeps fewer processes than Config.KeepWorkers: the process
// start-up then happens before a run needs the worker, not while it waits.
func (h *Host) prestart() {
	h.mu.Lock()
	short := h.cfg.KeepWorkers - len(h.procs)
	h.mu.Unlock()
	for range short {
		if _, err := h.spawn("", 0, nil); err != nil {
			return // the next run starts its own, and says why if it cannot
		}
	}
}

// reap waits for a worker process to exit and hands its exit code to the
// run it was playing, if any.
func (h *Host) reap(p *process) {
	err := p.cmd.Wait()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		code = -1
	}
	// Under h.mu, so takeIdle cannot hand it a run in between.
	h.mu.Lock()
	delete(h.procs, p.pid)
	h.removeIdleLocked(p)
	p.mu.Lock()
	w := p.run
	p.run = nil
	p.mu.Unlock()
	h.mu.Unlock()
	if w != nil {
		w.end <- code
		// A kept worker died in a run (a crash, a kill): start its
		// replacement now, so the resume finds one waiting.
		if h.cfg.KeepWorkers > 0 {
			select {
			case <-h.quit:
			default:
				go h.prestart()
			}
		}
	}
	close(p.exited)
}

// takeIdle hands an idle kept worker process to run w, or returns nil.
func (h *Host) takeIdle(w *workerProc) *process {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.idle) > 0 {
		p := h.idle[len(h.idle)-1]
		h.idle = h.idle[:len(h.idle)-1]
		if h.procs[p.pid] != p {
			continue // exited (reap takes it off the list too)
		}
		p.mu.Lock()
		p.run = w
		p.mu.Unlock()
		p.stderr.Reset()
		return p
	}
	return nil
}

// removeIdleLocked takes p off the idle list; it reports whether p was on
// it. h.mu must be held.
func (h *Host) removeIdleLocked(p *process) bool {
	for i, q := range h.idle {
		if q == p {
			h.idle = append(h.idle[:i], h.idle[i+1:]...)
			return true
		}
	}
	return false
}

// supervise waits for the end of a run and records how it ended.
func (h *Host) supervise(id string, st *execState, w *workerProc, r *Run) {
	code := <-w.end
	// From here no report of this worker is recorded: its end comes last.
	st.rec.Lock()
	defer st.rec.Unlock()
	st.ended = true
	h.mu.Lock()
	crash := st.crashPoint
	run := st.run
	h.mu.Unlock()

	res := RunResult{ExitCode: code}
	switch {
	case code == ExitKilled:
		why := "killed (SIGKILL) from outside"
		w.proc.mu.Lock()
		killed := w.killed
		w.proc.mu.Unlock()
		if crash != "" && !killed {
			why = "killed by the injected fault: " + crash.Describe()
		} else {
			crash = "" // a kill from outside is not the fault, even if one was armed
		}
		// A kill that lands after the worker reported the run's end (it
		// completed, failed or escalated, and had yet to exit or to ask for
		// its next run) is recorded, but the execution keeps that end:
		// marking it killed would have it resumed, and an escalated unsafe
		// step sent again.
		res.Status = history.StatusKilled
		_, res.Err = h.record(id, history.Event{Type: history.WorkerCrashed, Run: run, ExitCode: code,
			Fault: string(crash), Error: why, PID: w.pid}, func(x *history.Execution) {
			if x.Status.Finished() {
				res.Status = x.Status
				return
			}
			x.Status = history.StatusKilled
		})
	default:
		x, xerr := h.Execution(id)
		if xerr != nil {
			res.Err = xerr
			break
		}
		res.Status = x.Status
		if x.Status == history.StatusRunning {
			msg := fmt.Sprintf("worker exited with code %d before finishing", code)
			if tail := strings.TrimSpace(w.proc.stderr.String()); tail != "" {
				msg += ": " + lastLine(tail)
			}
			_, res.Err = h.record(id, history.Event{Type: history.ExecutionFailed, Run: run, ExitCode: code, Error: msg},
				func(x *history.Execution) { x.Status = history.StatusFailed; x.Error = msg })
			res.Status = history.StatusFailed
		}
	}
	h.mu.Lock()
	if st.worker == w {
		st.worker = nil
	}
	h.mu.Unlock()
	// A worker that stays is idle before anyone learns the run ended, so
	// the next run can take it.
	if w.stays {
		w.admitted = h.admitIdle(w.proc)
	}
	close(w.done)
	r.result = res
	close(r.done)
}

// admitIdle puts a kept worker's process on the idle list, unless the host
// closes, keeps enough idle workers already, or the process has exited.
func (h *Host) admitIdle(p *process) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.quit:
		return false
	default:
	}
	if h.closing || len(h.idle) >= h.cfg.KeepWorkers || h.procs[p.pid] != p {
		return false
	}
	h.idle = append(h.idle, p)
	return true
}

// Kill sends SIGKILL to an execution's worker: the "kill the worker now" key.
func (h *Host) Kill(id string) error {
	h.mu.Lock()
	st := h.execs[id]
	var w *workerProc
	if st != nil {
		w = st.worker
	}
	h.mu.Unlock()
	if w == nil || w.proc == nil {
		return fmt.Errorf("execution %s has no live worker", id)
	}
	w.kill()
	return nil
}

// Running lists executions with a live worker.
func (h *Host) Running() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, st := range h.execs {
		if st.worker != nil {
			out = append(out, id)
		}
	}
	return out
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Result is how the run ended; it is valid once Done is closed.
func (r *Run) Result() RunResult {
	<-r.done
	return r.result
}

// configureWorld applies the scenario's provider settings to the world for
// this execution's requests: a mail tool declared without dedupe makes the
// mail API ignore keys for it, and policy.retention is how long the
// providers remember its keys.
func (h *Host) configureWorld(id string, scn *scenario.Scenario) {
	dedupe := true
	for _, t := range scn.Tools {
		if t.Service == "mail" && !t.Deduplicates() {
			dedupe = false
		}
	}
	h.world.SetDedupe(id, dedupe)
	h.world.SetRetention(id, scn.Policy.Retention.D())
}

// idleWait bounds how long a kept worker waits for its next run before it
// exits.
const idleWait = 5 * time.Second

// handleNext is a kept worker's request after it finished a run cleanly:
// the run ends (exit code 0, as if the process had exited), and the worker
// waits idle, at most idleWait, for the host to hand it another run. It
// answers 204 when the worker should exit: the host keeps enough idle
// workers already, or closes.
func (h *Host) handleNext(w http.ResponseWriter, r *http.Request) {
	var fin wire.RunEnded
	if err := readJSON(r, &fin); err != nil {
		http.Error(w, "bad run end: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	p := h.procs[fin.PID]
	h.mu.Unlock()
	if p == nil {
		http.Error(w, fmt.Sprintf("no worker process %d", fin.PID), http.StatusConflict)
		return
	}
	p.mu.Lock()
	cur := p.run
	switch {
	case fin.Execution == "" && cur == nil:
		// A worker started ahead of any run (prestart): nothing ended.
	case cur == nil || cur.execution != fin.Execution || cur.number != fin.Run:
		p.mu.Unlock()
		http.Error(w, fmt.Sprintf("worker %d does not play run %d of %q", fin.PID, fin.Run, fin.Execution), http.StatusConflict)
		return
	}
	p.run = nil // from here a Kill of that run leaves the process alone
	p.mu.Unlock()
	admitted := false
	if cur != nil {
		// supervise records the run's end, then admits the process as idle
		// before it tells anyone the run ended.
		cur.stays = true
		cur.end <- 0
		<-cur.done
		admitted = cur.admitted
	} else {
		admitted = h.admitIdle(p)
	}
	if !admitted {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	timer := time.NewTimer(idleWait)
	defer timer.Stop()
	select {
	case a := <-p.assign:
		writeJSON(w, http.StatusOK, a)
		return
	case <-timer.C:
	case <-r.Context().Done():
	case <-h.quit:
	}
	h.mu.Lock()
	wasIdle := h.removeIdleLocked(p)
	h.mu.Unlock()
	if !wasIdle {
		// A run took it meanwhile: its assignment is on the way, unless
		// the launch killed the process instead.
		select {
		case a := <-p.assign:
			writeJSON(w, http.StatusOK, a)
		case <-p.exited:
		}
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
