package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/internal/tailbuf"
	"github.com/retrylab/retrylab/store"
)

// Config configures a chaos run.
type Config struct {
	// DB is the database file; it must not hold executions yet.
	DB string
	// Seed plans every run.
	Seed uint64
	// Runs is the number of executions.
	Runs int
	// Concurrency is how many executions a host runs at once (default 8).
	Concurrency int
	// Policy is none, keys, journal, keys+journal, or all ("") for a random
	// policy per run.
	Policy string
	// HostKills is how many times the host is killed with SIGKILL; a
	// negative value picks one kill per 40 runs (at least 1, at most 50).
	HostKills int
	// Bug plants a mistake in every generated agent (BugKeyFromAttempt), for
	// tests and demonstrations of the checker only.
	Bug string
	// Executable is the binary started as the host; default os.Executable().
	Executable string
	// HostArgs are its arguments; default ["chaos-host"].
	HostArgs []string
	// Progress, if set, is called after every event worth showing.
	Progress func(Progress)
}

// Progress is how far a chaos run has come.
type Progress struct {
	Runs, Total int
	// WorkersKilled counts worker deaths in acknowledged runs (by crash
	// faults, from outside, and with their host), as the check's summary
	// counts them; HostKills counts host processes killed.
	WorkersKilled int
	HostKills     int
	Hosts         int
	Violations    int
	// Line describes the latest event, for plain output.
	Line string
}

// Result is the outcome of a chaos run.
type Result struct {
	Report    *check.Report
	Runs      int
	Hosts     int
	HostKills int
	Elapsed   time.Duration
	DB        string
}

// ErrNotFresh means the database already holds executions.
var ErrNotFresh = errors.New("chaos needs a database without executions")

// Run carries out a chaos run and checks the database.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	if cfg.Runs <= 0 {
		return nil, fmt.Errorf("chaos: --runs must be at least 1")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if _, err := ParsePolicy(cfg.Policy); err != nil {
		return nil, err
	}
	if cfg.Bug != "" && cfg.Bug != BugKeyFromAttempt {
		return nil, fmt.Errorf("chaos: unknown bug %q (valid: %s)", cfg.Bug, BugKeyFromAttempt)
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("chaos: find own executable: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.HostArgs == nil {
		cfg.HostArgs = []string{"chaos-host"}
	}
	if err := fresh(cfg.DB); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, acks: map[int]RunReport{}, rng: rand.New(rand.NewPCG(cfg.Seed, 0x686f7374))}
	r.planHostKills()
	// Hosts follow one another until every run is acknowledged and the last
	// host ended by itself: a kill always has a host open the database after it.
	for gen := 0; ; gen++ {
		if gen > len(r.killAt)+3 {
			return nil, fmt.Errorf("chaos: %s started and %d of %d runs finished; giving up", plural.Count(gen, "host"), len(r.acks), cfg.Runs)
		}
		killed, err := r.host(ctx)
		if err != nil {
			return nil, err
		}
		if !killed && len(r.acks) == cfg.Runs {
			break
		}
	}
	rep, err := r.verify()
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep, Runs: len(r.acks), Hosts: r.hosts, HostKills: r.hostKills,
		Elapsed: time.Since(start), DB: cfg.DB}, nil
}

// fresh refuses a database that already holds executions.
func fresh(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && info.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	defer db.Close()
	n := 0
	_ = db.View(func(tx *store.Tx) error { n = tx.ExecutionCount(); return nil })
	if n > 0 {
		return fmt.Errorf("chaos: %w: %s holds %d (give a new file with --db)", ErrNotFresh, path, n)
	}
	return nil
}

type runner struct {
	cfg       Config
	rng       *rand.Rand
	killAt    []int // kill a host once this many runs are acknowledged
	acks      map[int]RunReport
	hosts     int
	hostKills int
	checks    []string // consistency checks at each host's open
	mu        sync.Mutex
	kills     int
	vio       int
}

// planHostKills spreads the host kills over the runs.
func (r *runner) planHostKills() {
	n := r.cfg.HostKills
	if n < 0 {
		n = min(max(r.cfg.Runs/40, 1), 50)
	}
	n = min(n, r.cfg.Runs-1)
	seen := map[int]bool{}
	for len(r.killAt) < n {
		at := 1 + r.rng.IntN(r.cfg.Runs-1)
		if !seen[at] {
			seen[at] = true
			r.killAt = append(r.killAt, at)
		}
	}
	slices.Sort(r.killAt)
}

func (r *runner) progress(line string) {
	if r.cfg.Progress == nil {
		return
	}
	r.mu.Lock()
	p := Progress{Runs: len(r.acks), Total: r.cfg.Runs, WorkersKilled: r.kills, HostKills: r.hostKills,
		Hosts: r.hosts, Violations: r.vio, Line: line}
	r.mu.Unlock()
	r.cfg.Progress(p)
}

// host starts one host process, feeds it the job, follows its reports, and
// kills it with SIGKILL at the planned moment. It reports whether it did.
func (r *runner) host(ctx context.Context) (bool, error) {
	skip := make([]int, 0, len(r.acks))
	for i := range r.acks {
		skip = append(skip, i)
	}
	slices.Sort(skip)
	job := HostJob{DB: r.cfg.DB, Seed: r.cfg.Seed, Runs: r.cfg.Runs, Concurrency: r.cfg.Concurrency,
		Policy: r.cfg.Policy, Bug: r.cfg.Bug, Skip: skip}
	cmd := exec.CommandContext(ctx, r.cfg.Executable, r.cfg.HostArgs...)
	cmd.Env = append(os.Environ(), EnvHost+"=1")
	cmd.SysProcAttr = hostProcAttr()
	stderr := tailbuf.New(4 << 10)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return false, fmt.Errorf("chaos: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, fmt.Errorf("chaos: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("chaos: start host %s: %w", r.cfg.Executable, err)
	}
	defer stdin.Close()
	r.hosts++
	data, _ := json.Marshal(job)
	if _, err := stdin.Write(append(data, '\n')); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return false, fmt.Errorf("chaos: hand the job to host %d: %w (%s)", r.hosts, err, stderr)
	}
	killAt := -1
	if r.hostKills < len(r.killAt) {
		killAt = r.killAt[r.hostKills]
	}
	var killed sync.WaitGroup
	killing := false
	done := false
	var hostErr string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m HostMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not ours
		}
		switch m.Type {
		case "ready":
			r.checks = append(r.checks, m.Check)
			line := fmt.Sprintf("host %d up (pid %d): consistency check %s, %d unfinished executions to resume", r.hosts, cmd.Process.Pid, m.Check, m.Unfinished)
			if m.Check != "ok" {
				r.mu.Lock()
				r.vio++
				r.mu.Unlock()
			}
			r.progress(line)
		case "run":
			rep := *m.Run
			r.mu.Lock()
			if _, dup := r.acks[rep.Index]; !dup {
				r.acks[rep.Index] = rep
				r.kills += rep.Kills
				r.vio += len(rep.Violations) + len(rep.Errors)
			}
			n := len(r.acks)
			r.mu.Unlock()
			line := fmt.Sprintf("run %d %s %s after %d run(s), %d kill(s)", rep.Index, rep.Execution, rep.Status, rep.Runs, rep.Kills)
			if problems := append(rep.Errors, rep.Violations...); len(problems) > 0 {
				line += ": " + strings.Join(problems, "; ")
			}
			r.progress(line)
			if killAt > 0 && n >= killAt && !killing {
				killing = true
				delay := time.Duration(r.rng.IntN(100)) * time.Millisecond
				killed.Add(1)
				time.AfterFunc(delay, func() {
					defer killed.Done()
					_ = cmd.Process.Signal(syscall.SIGKILL)
				})
			}
		case "done":
			done = true
			if !killing {
				stdin.Close() // let the host go
			}
		case "error":
			hostErr = m.Error
		}
	}
	killed.Wait()
	werr := cmd.Wait()
	// A host killed (by plan, or as the runner was interrupted) leaves its
	// announcement beside the database: no command should find it.
	control.RemoveHostFileOf(r.cfg.DB, cmd.Process.Pid)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var exitErr *exec.ExitError
	signaled := false
	if errors.As(werr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			signaled = true
		}
	}
	if killing && signaled {
		r.mu.Lock()
		r.hostKills++
		r.mu.Unlock()
		r.progress(fmt.Sprintf("host %d killed with SIGKILL (%s acknowledged)", r.hosts, plural.Count(len(r.acks), "run")))
		return true, nil
	}
	if done && werr == nil {
		return false, nil
	}
	msg := hostErr
	if msg == "" {
		msg = strings.TrimSpace(stderr.String())
	}
	return false, fmt.Errorf("chaos: host %d ended early (%v): %s", r.hosts, werr, msg)
}

// verify opens the database read-only, runs the store's consistency check
// and the checker, and holds the database to every acknowledgement.
func (r *runner) verify() (*check.Report, error) {
	db, err := store.Open(r.cfg.DB, store.Options{ReadOnly: true, LockTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("chaos: open for the check: %w", err)
	}
	defer db.Close()
	rep, err := check.CheckDB(db, check.Options{Resolve: Resolve})
	if err != nil {
		return nil, err
	}
	if err := db.Check(); err != nil {
		rep.AddViolation(check.Violation{Kind: "durability", Detail: "final consistency check: " + err.Error()})
	}
	okChecks := 0
	for i, c := range r.checks {
		if c == "ok" {
			okChecks++
		} else {
			rep.AddViolation(check.Violation{Kind: "durability", Detail: fmt.Sprintf("host %d: consistency check at open: %s", i+1, c)})
		}
	}
	lostAcks := 0
	err = db.View(func(tx *store.Tx) error {
		for i := 0; i < r.cfg.Runs; i++ {
			ack, ok := r.acks[i]
			id := Generate(r.cfg.Seed, i, nil).Execution()
			data := tx.Execution(id)
			if data == nil {
				rep.AddViolation(check.Violation{Execution: id, Kind: "durability", Detail: "acknowledged run has no execution"})
				lostAcks++
				continue
			}
			x, err := history.DecodeExecution(data)
			if err != nil {
				return err
			}
			if !x.Status.Finished() {
				rep.AddViolation(check.Violation{Execution: id, Kind: "invariant", Detail: fmt.Sprintf("never finished: %s", x.Status)})
			}
			if !ok {
				continue
			}
			if last := tx.LastSeq(id); last < ack.LastSeq {
				rep.AddViolation(check.Violation{Execution: id, Kind: "durability",
					Detail: fmt.Sprintf("a host acknowledged %d events; %d survive", ack.LastSeq, last)})
				lostAcks++
			}
			for _, e := range ack.Errors {
				rep.AddViolation(check.Violation{Execution: id, Kind: "runner", Detail: e})
			}
			if ack.Status != "" && x.Status != ack.Status {
				rep.AddViolation(check.Violation{Execution: id, Kind: "durability",
					Detail: fmt.Sprintf("a host acknowledged it %s; the database says %s", ack.Status, x.Status)})
				lostAcks++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: verify acknowledgements: %w", err)
	}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("hosts: %d started, %d killed with SIGKILL at random moments; consistency check passed at %d of %d opens and at the end",
			r.hosts, r.hostKills, okChecks, len(r.checks)),
		fmt.Sprintf("acknowledged runs: %d; every acknowledged event and status survived: %v", len(r.acks), lostAcks == 0))
	return rep, nil
}
