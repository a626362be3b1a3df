package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
)

// EnvHost marks a process the runner started as a chaos host. A test
// binary calls MainIfHost in TestMain (after agent.MainIfWorker); the
// retrylab binary reaches ServeHost through its hidden chaos-host command.
const EnvHost = "RETRYLAB_CHAOS_HOST"

// maxResumes bounds how often one execution is resumed: every crash fault
// fires once and at most one kill comes from outside, so a run that needs
// more is stuck.
const maxResumes = 24

// HostJob is what the runner hands a host on its stdin, as one JSON line.
type HostJob struct {
	DB          string `json:"db"`
	Seed        uint64 `json:"seed"`
	Runs        int    `json:"runs"`
	Concurrency int    `json:"concurrency"`
	Policy      string `json:"policy,omitempty"`
	Bug         string `json:"bug,omitempty"`
	// Skip lists the runs the runner already has reports for.
	Skip []int `json:"skip,omitempty"`
}

// HostMessage is one JSON line a host writes on its stdout.
type HostMessage struct {
	// Type is "ready" (the database is open and checked), "run" (a run
	// finished), "done" or "error".
	Type string `json:"type"`
	// Check is the consistency check's verdict at open: "ok" or the error.
	Check string `json:"check,omitempty"`
	// Unfinished counts executions found unfinished at open.
	Unfinished int        `json:"unfinished,omitempty"`
	Run        *RunReport `json:"run,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// RunReport is a host's acknowledgement of one finished run.
type RunReport struct {
	Index     int                 `json:"index"`
	Execution string              `json:"execution"`
	Status    history.Status      `json:"status"`
	Runs      int                 `json:"runs"`
	LastSeq   uint64              `json:"last_seq"`
	Kills     int                 `json:"kills"`
	Classes   map[check.Class]int `json:"classes,omitempty"`
	// Violations are the live check's findings, one line each.
	Violations []string `json:"violations,omitempty"`
	// Errors are the host's own failures to carry the run out.
	Errors []string `json:"errors,omitempty"`
}

// MainIfHost turns the process into a chaos host when the runner started
// it as one, and exits when the host is done.
func MainIfHost() {
	if os.Getenv(EnvHost) == "" {
		return
	}
	if err := ServeHost(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "retrylab chaos-host:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ServeHost runs a chaos host: it reads its job from in, opens the
// database (which must pass the consistency check), finishes every run of
// the job that is not finished yet, resuming what earlier hosts left, and
// reports each run on out. It stops early when in reaches EOF (the runner
// is gone).
func ServeHost(in io.Reader, out io.Writer) error {
	// Workers are started from this process's environment: they must not
	// believe they are hosts.
	os.Unsetenv(EnvHost)
	rd := bufio.NewReader(in)
	line, err := rd.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return fmt.Errorf("read job: %w", err)
	}
	var job HostJob
	if err := json.Unmarshal(line, &job); err != nil {
		return fmt.Errorf("read job: %w", err)
	}
	policy, err := ParsePolicy(job.Policy)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, rd)
		cancel()
	}()
	s := &hostSession{job: job, policy: policy, enc: json.NewEncoder(out),
		live: check.NewLive(check.Options{Resolve: Resolve})}
	// Workers that finish a run cleanly stay for the next one (as many as
	// run at once): most runs then start no process. A crash fault or a
	// kill is still a SIGKILL of the worker's process, and a new process
	// takes the next run.
	// Served as any host is, so a process can attach to the job's database.
	srv, err := control.Open(engine.Config{DBPath: job.DB, Scenarios: FS{Seed: job.Seed, Policy: policy, Bug: job.Bug},
		LockTimeout: 10 * time.Second, KeepWorkers: max(job.Concurrency, 1)})
	if err != nil {
		s.send(HostMessage{Type: "error", Error: err.Error()})
		return err
	}
	defer srv.Close()
	h := srv.Host
	s.h = h
	verdict := "ok"
	if err := h.Store().Check(); err != nil {
		verdict = err.Error()
	}
	unfinished := map[string]bool{}
	if list, _, err := h.Executions(0, 0); err == nil {
		for _, x := range list {
			if !x.Status.Finished() {
				unfinished[x.ID] = true
			}
		}
	}
	s.send(HostMessage{Type: "ready", Check: verdict, Unfinished: len(unfinished)})

	skip := map[int]bool{}
	for _, i := range job.Skip {
		skip[i] = true
	}
	conc := max(job.Concurrency, 1)
	// A run is handed out with whether it will move the world clock: a
	// key-expiry run that has not started yet. (One resumed from an earlier
	// host does not jump again.)
	type fed struct {
		spec  Spec
		jumps bool
	}
	next := make(chan fed)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				rep := s.runOne(ctx, f.spec)
				s.release(f.spec, f.jumps)
				if ctx.Err() != nil {
					return
				}
				s.send(HostMessage{Type: "run", Run: &rep})
			}
		}()
	}
	// What the last host left unfinished goes first: a clock jump must not
	// expire the keys of an execution waiting to be resumed. Then the
	// key-expiry runs, together: once their clock jumps have landed, the
	// other runs go on beside them while they wait out their 1 s timeouts.
	order := make([]int, 0, job.Runs)
	for _, pass := range []func(unfinished, expiring bool) bool{
		func(unfinished, _ bool) bool { return unfinished },
		func(unfinished, expiring bool) bool { return !unfinished && expiring },
		func(unfinished, expiring bool) bool { return !unfinished && !expiring },
	} {
		for i := 0; i < job.Runs; i++ {
			if !skip[i] && pass(unfinished[Spec{Seed: job.Seed, Index: i}.Execution()], Generate(job.Seed, i, policy).ExpireKeys) {
				order = append(order, i)
			}
		}
	}
feed:
	for _, i := range order {
		// The feeder enters the gate, so a key-expiry run starts only once
		// every other run handed out before it has ended, and every run
		// after the key-expiry runs starts once their clocks have jumped.
		spec := Generate(job.Seed, i, policy)
		f := fed{spec: spec, jumps: spec.ExpireKeys && !unfinished[spec.Execution()]}
		s.acquire(spec, f.jumps)
		select {
		case next <- f:
		case <-ctx.Done():
			s.release(spec, f.jumps)
			break feed
		}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return errors.New("the runner went away")
	}
	s.send(HostMessage{Type: "done"})
	// Stay until the runner lets go (it may still be about to kill us).
	<-ctx.Done()
	return nil
}

type hostSession struct {
	job    HostJob
	policy *history.Policy
	h      *engine.Host
	live   *check.Live
	// gate keeps key-expiry runs' clock jumps apart from all other runs:
	// a jump expires every key in the world, which every key-expiry run
	// wants and no other run expects. The feeder enters it; the run lets
	// the others on once its jump has landed (or it ended); the worker that
	// carried the run out leaves it.
	gate  runGate
	encMu sync.Mutex
	enc   *json.Encoder
}

func (s *hostSession) send(m HostMessage) {
	s.encMu.Lock()
	defer s.encMu.Unlock()
	_ = s.enc.Encode(m)
}

// runOne carries a run to its end: starts it (or resumes what an earlier
// host left), kills it from outside if planned, resumes it after every
// kill, and checks it.
func (s *hostSession) runOne(ctx context.Context, spec Spec) RunReport {
	id := spec.Execution()
	rep := RunReport{Index: spec.Index, Execution: id}
	fail := func(format string, args ...any) RunReport {
		rep.Errors = append(rep.Errors, fmt.Sprintf(format, args...))
		return rep
	}
	h := s.h
	x, err := h.Execution(id)
	var run *engine.Run
	var jumped <-chan struct{}
	switch {
	case errors.Is(err, engine.ErrNoExecution):
		if spec.ExpireKeys {
			jumped = s.jumpAfterFirstEffect(id)
			go func() {
				select {
				case <-jumped:
					s.gate.landed(spec.Index)
				case <-ctx.Done():
				}
			}()
		}
		keys, journal := spec.Policy.Keys, spec.Policy.Journal
		run, err = h.Start(spec.Name(), engine.RunOptions{Execution: id, Keys: &keys, Journal: &journal})
		if err != nil {
			return fail("start %s: %v", id, err)
		}
		if spec.KillAfter > 0 {
			t := time.AfterFunc(spec.KillAfter, func() { _ = h.Kill(id) })
			defer t.Stop()
		}
	case err != nil:
		return fail("read %s: %v", id, err)
	case !x.Status.Finished():
		if run, err = s.resume(ctx, id); err != nil {
			return fail("resume %s: %v", id, err)
		}
	}
	for resumes := 0; run != nil; resumes++ {
		res, err := run.Wait(ctx)
		if err != nil {
			return fail("wait for %s: %v", id, err)
		}
		if res.Status != history.StatusKilled {
			break
		}
		// An end the worker reported just before it was killed can be
		// recorded after its crash: then there is nothing to resume.
		if x, err := h.Execution(id); err == nil && x.Status.Finished() {
			break
		}
		if resumes >= maxResumes {
			return fail("%s still unfinished after %d resumes", id, resumes)
		}
		if jumped != nil {
			select {
			case <-jumped:
			case <-time.After(5 * time.Second):
			}
		}
		if run, err = s.resume(ctx, id); err != nil {
			return fail("resume %s: %v", id, err)
		}
	}
	res, err := s.live.Execution(engine.NewLocal(h), id)
	if err != nil {
		return fail("check %s: %v", id, err)
	}
	if x, err = h.Execution(id); err != nil {
		return fail("read %s: %v", id, err)
	}
	rep.Status, rep.Runs, rep.LastSeq, rep.Kills, rep.Classes = x.Status, x.Runs, res.LastSeq, res.Kills, res.Classes()
	for _, v := range res.Violations {
		rep.Violations = append(rep.Violations, v.String())
	}
	return rep
}

func (s *hostSession) acquire(spec Spec, jumps bool) {
	if jumps {
		s.gate.enterJumping(spec.Index)
	} else {
		s.gate.enter()
	}
}

func (s *hostSession) release(spec Spec, jumps bool) {
	if jumps {
		s.gate.landed(spec.Index)
	} else {
		s.gate.leave()
	}
}

// runGate keeps the clock jumps of key-expiry runs apart from other runs. A
// run that will jump enters once no other run is in, and holds the others
// back until its jump has landed (or it ended without one); runs that jump
// enter beside each other. Runs enter in the feeder's order, one at a time, so a
// run waiting to enter holds back everything after it.
type runGate struct {
	mu      sync.Mutex
	changed sync.Cond
	in      int          // other runs in
	pending map[int]bool // key-expiry runs in whose jump has not landed
}

func (g *runGate) init() {
	if g.changed.L == nil {
		g.changed.L = &g.mu
		g.pending = map[int]bool{}
	}
}

func (g *runGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	for len(g.pending) > 0 {
		g.changed.Wait()
	}
	g.in++
}

func (g *runGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in--
	g.changed.Broadcast()
}

func (g *runGate) enterJumping(run int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	for g.in > 0 {
		g.changed.Wait()
	}
	g.pending[run] = true
}

// landed lets the other runs on as far as run is concerned; it may be
// called more than once.
func (g *runGate) landed(run int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	delete(g.pending, run)
	g.changed.Broadcast()
}

// resume starts a new run, waiting out the moment in which the last
// worker's end is still being recorded.
func (s *hostSession) resume(ctx context.Context, id string) (*engine.Run, error) {
	for i := 0; ; i++ {
		run, err := s.h.Resume(id)
		if err == nil || !errors.Is(err, engine.ErrBusy) || i >= 100 {
			return run, err
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// jumpAfterFirstEffect moves the world clock past the key retention as soon
// as the execution's first effect is committed; the channel closes once it
// has moved.
func (s *hostSession) jumpAfterFirstEffect(id string) <-chan struct{} {
	done := make(chan struct{})
	notices, stop := s.h.Subscribe(1 << 12)
	go func() {
		defer stop()
		for n := range notices {
			a := n.Activity
			hit := a != nil && a.Attribution.Execution == id && (a.Kind == world.KindDelivered || a.Kind == world.KindCRMWrite)
			if n.Lagged {
				hit = s.hasEffect(id)
			}
			if hit {
				_ = s.h.Providers().AdvanceClock(ExpireBy)
				close(done)
				return
			}
		}
	}()
	return done
}

func (s *hostSession) hasEffect(id string) bool {
	msgs, err := s.h.Providers().Outbox()
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Attribution.Execution == id {
			return true
		}
	}
	return false
}
