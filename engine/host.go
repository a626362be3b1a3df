// Package engine is retrylab's runtime: it owns the database, hosts the
// simulated world, runs scripted agents in worker processes, injects faults,
// and records every attempt of every tool call.
//
// One host process owns the bbolt file. Workers are child processes of the
// same binary; they are stateless and talk to the host's runtime API through
// the runtime channel on a Unix socket beside the database (loopback HTTP
// where there is none), and to the world's services over loopback HTTP with
// real per-attempt deadlines. A crash is a real SIGKILL of a worker: afterwards
// only what the store holds survives, and resuming replays the journal.
//
// The engine knows nothing of screens: faces (the CLI, the explorer) read
// through Host's query methods and follow Subscribe.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// Clock tells the time. Tests inject a fixed or stepped clock.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the real wall clock.
var SystemClock Clock = systemClock{}

// Config configures a Host.
type Config struct {
	// DBPath is the database file; it is created 0600 if missing.
	DBPath string
	// Scenarios is where scenario names are looked up (fixtures.FS).
	Scenarios fs.FS
	// Clock stamps events and drives the world clock. Default: wall clock.
	Clock Clock
	// Executable is the binary started as a worker. Default: os.Executable().
	// It must call agent.MainIfWorker early in main (or TestMain).
	Executable string
	// LockTimeout bounds the wait for the database lock. Default: 1s.
	LockTimeout time.Duration
	// NoSync skips fsync (benchmarks only).
	NoSync bool
	// SlowDelay is how late the providers answer a request under the
	// slow-response fault. Zero: world.DefaultSlowDelay (50 ms, inside
	// every scenario's deadline).
	SlowDelay time.Duration
	// MailPort, CRMPort and ControlPort fix the ports (on 127.0.0.1) of the
	// mail API, the CRM and the runtime and control API, for clients that
	// need known addresses (serve --port). Zero means any free port.
	MailPort, CRMPort, ControlPort int
	// KeepWorkers is how many worker processes the host keeps idle for
	// later runs: a worker that finished its run cleanly waits for the next
	// one instead of exiting, so a run need not start a process. Zero: every
	// run starts its own worker. A crash is a SIGKILL of the process either
	// way, and a killed worker is gone.
	KeepWorkers int
	// Faults, when set, decides the server-side faults of requests
	// attributed to executions this host does not run (a Temporal
	// workflow's activities, which 'retrylab-temporal run' hosts).
	Faults world.FaultSource
	// Imports are the sources of imported traces the host reads and
	// imports (engine/imports/all). Nil: none, and an imported execution
	// cannot be read.
	Imports *imports.Registry
	// Companion, when set, is started once the host is open (the room's
	// mirror, engine/room): it runs beside the host on its own goroutines,
	// must never block the host, and answers with its hooks.
	Companion func(*Host) CompanionHooks
	// KeepOnReset are collections every reset keeps, besides those the
	// caller of Reset names: a room's participants and their
	// mirrored runs (engine/room) outlive the resets of its world.
	KeepOnReset []store.Bucket
}

// CompanionHooks are what a Config.Companion gives the host once started.
// Stop is called first thing in Close, while the database and the notices
// are still there for the companion to drain, and waits for it to end.
// BeforeReset, when set, runs at the start of every Reset, once no worker
// runs and before the wipe: a companion that copies the host's runs
// elsewhere (the room's mirror) sends what it has not sent yet, so a reset
// between two lessons does not take a run before it reached the room. It
// must return within a bound of its own: the reset waits for it.
type CompanionHooks struct {
	Stop        func()
	BeforeReset func()
}

// Host owns the database, the world and the workers.
type Host struct {
	cfg   Config
	clock Clock
	// beforeWorkerStarted, when set (by a test), runs after a run's worker
	// is started and before its WorkerStarted is recorded.
	beforeWorkerStarted func()
	db                  *store.DB
	world               *world.World
	catalog             *scenario.Catalog
	token               string

	runtime     *http.Server
	runtimeMux  *http.ServeMux // the runtime API's routes; others mount theirs (Runtime().Handle)
	beforeClose []func()       // Runtime().BeforeClose; guarded by mu
	runtimeURL  string
	runtimeSock string         // the runtime channel's Unix socket, for workers; "" if none
	channel     *rtchan.Server // the runtime channel, on runtimeSock
	runtimeDone sync.WaitGroup // the runtime API's and the channel's Serve loops

	bus *bus

	companion CompanionHooks // Config.Companion's hooks; zero when none

	find finder // the index FindExecutions answers from

	importMu sync.Mutex // one import at a time (HostTraces.ImportStream)
	// exporting is held for reading while an export streams to a client
	// or an audit reads (HostTraces): a reset then would cut their reading
	// of the executions short.
	exporting sync.RWMutex

	// flagging gives old imports their duplicate or possible flag in the
	// background (flagOldImports): stop ends it, done is closed when it
	// returned.
	flagging struct {
		stop, done chan struct{}
		once       sync.Once
	}

	mu    sync.Mutex
	execs map[string]*execState
	// procs are the live worker processes by pid, idle those waiting for a
	// run (Config.KeepWorkers); quit is closed when the host closes.
	procs    map[int]*process
	idle     []*process
	quit     chan struct{}
	quitOnce sync.Once
	armed    []fault.Point
	// pace is the slow motion every run's worker keeps (RuntimeAPI.SetPace): 0 for none.
	pace time.Duration
	// holds counts attached processes holding the host open; closing is set
	// once CloseWhenIdle found it idle, and refuses new runs and holds.
	holds   int
	closing bool
	// counters for the status bar and checks
	mailRequests map[string]int
	// readOnly says the host only reads its file (OpenReadOnly).
	readOnly bool
}

// execState is what the host keeps in memory about an execution while it
// can run: rebuilt from the history whenever a run starts.
type execState struct {
	scn        *scenario.Scenario
	policy     history.Policy
	run        int
	attempts   map[string]int // last attempt number per step
	firedPlan  map[int]bool
	server     map[attemptKey][]fault.Point
	crashPoint fault.Point // crash fault handed to the current attempt
	worker     *workerProc
	// pace is the run's own slow motion (RunOptions.Pace).
	pace time.Duration

	// rec serialises what the run's worker reports with the recording of
	// the run's end, so nothing a dead worker sent lands after its end.
	rec   sync.Mutex
	ended bool // the run's end is recorded; guarded by rec
}

type attemptKey struct {
	step    string
	attempt int
}

// ErrBusy means an execution already has a live worker (errkind.ErrBusy).
var ErrBusy = errkind.ErrBusy

// ErrNoExecution means the execution id is not in the database
// (errkind.ErrNoExecution).
var ErrNoExecution = errkind.ErrNoExecution

// Open opens the database, starts the world's services and the runtime API
// on 127.0.0.1, and returns the host.
func Open(cfg Config) (*Host, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for workers: %w", err)
		}
		cfg.Executable = exe
	}
	db, err := store.Open(cfg.DBPath, store.Options{LockTimeout: cfg.LockTimeout, NoSync: cfg.NoSync})
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		db.Close()
		return nil, fmt.Errorf("make runtime token: %w", err)
	}
	h := &Host{
		cfg:          cfg,
		clock:        cfg.Clock,
		db:           db,
		catalog:      scenario.NewCatalog(cfg.Scenarios),
		token:        hex.EncodeToString(tok),
		bus:          newBus(),
		execs:        map[string]*execState{},
		procs:        map[int]*process{},
		quit:         make(chan struct{}),
		mailRequests: map[string]int{},
	}
	w, err := world.New(world.Config{DB: db, Clock: cfg.Clock, Faults: h.Faults(), Observe: h.observe, Record: h.recordEffect, SlowDelay: cfg.SlowDelay, MailPort: cfg.MailPort, CRMPort: cfg.CRMPort})
	if err != nil {
		db.Close()
		return nil, err
	}
	h.world = w
	if err := w.Start(); err != nil {
		db.Close()
		return nil, err // it says "start world: ..."
	}
	if err := h.startRuntime(); err != nil {
		w.Close()
		db.Close()
		return nil, err
	}
	if err := h.markOrphans(); err != nil {
		h.Close()
		return nil, err
	}
	h.flagging.stop, h.flagging.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.flagging.done)
		// An error leaves the Meta key unset: the next open tries again.
		_ = h.flagOldImports(h.flagging.stop)
	}()
	if cfg.KeepWorkers > 0 {
		go h.prestart()
	}
	if cfg.Companion != nil {
		h.companion = cfg.Companion(h)
	}
	return h, nil
}

// stopFlagging stops flagOldImports and waits for it.
func (h *Host) stopFlagging() {
	if h.flagging.stop == nil {
		return
	}
	h.flagging.once.Do(func() { close(h.flagging.stop) })
	<-h.flagging.done
}

func (h *Host) startRuntime() error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", h.cfg.ControlPort))
	if err != nil {
		return fmt.Errorf("start runtime API: %w", err)
	}
	h.runtimeURL = "http://" + ln.Addr().String()
	h.runtime = &http.Server{Handler: h.runtimeHandler(), ReadHeaderTimeout: 5 * time.Second}
	h.runtimeDone.Add(1)
	go func() {
		defer h.runtimeDone.Done()
		_ = h.runtime.Serve(ln)
	}()
	if sock, err := listenRuntimeSocket(h.cfg.DBPath); err == nil {
		h.runtimeSock = sock.Addr().String()
		h.channel = &rtchan.Server{Handler: h.channelHandler()}
		h.runtimeDone.Add(1)
		go func() {
			defer h.runtimeDone.Done()
			_ = h.channel.Serve(sock)
		}()
	}
	return nil
}

// listenRuntimeSocket listens on a Unix socket beside the database, mode
// 0600, for the host's own workers: the runtime channel (rtchan), the
// runtime API's requests of a run as frames served through the same
// handlers as HTTP, without net/http's cost around each request (see
// BENCHMARKS.md 1a′). The host
// holds the database's lock, so a socket file left by a host that was
// killed is stale and is replaced. It fails where Unix sockets do not
// exist or the path is too long for one; workers then use TCP.
func listenRuntimeSocket(dbPath string) (net.Listener, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".runtime.sock")
	if len(path) >= maxSocketPath {
		return nil, fmt.Errorf("runtime socket %s: path too long", path)
	}
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("runtime socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("runtime socket: %w", err)
	}
	return ln, nil
}

// maxSocketPath is the room for a Unix socket's path (sun_path, 108 bytes
// on Linux with its terminating zero; 104 on the BSDs and macOS).
const maxSocketPath = 104

// activeIndexBuilt is the Meta key that says store.Active is complete.
const activeIndexBuilt = "active_index"

// ensureActiveIndex builds the index of unfinished executions for a
// database written before it existed: one walk of the records, once.
func (h *Host) ensureActiveIndex() error {
	var built bool
	if err := h.db.View(func(tx *store.Tx) error { built = tx.Meta(activeIndexBuilt) != nil; return nil }); err != nil || built {
		return err
	}
	return h.db.Update(func(tx *store.Tx) error {
		var unfinished []history.Execution
		err := tx.Executions(false, 0, func(id string, rec []byte) bool {
			if x, err := history.DecodeExecution(rec); err == nil && !x.Status.Finished() && x.Imported == "" {
				unfinished = append(unfinished, x)
			}
			return true
		})
		if err != nil {
			return err
		}
		for _, x := range unfinished {
			if err := tx.Put(store.Active, []byte(x.ID), []byte(x.Status)); err != nil {
				return err
			}
		}
		return tx.SetMeta(activeIndexBuilt, []byte{1})
	})
}

// unfinished reads the records of the executions that have not finished,
// through the index, so the cost does not grow with the history; only, when
// given, those with one of the statuses (read from the index, no record
// decoded for the rest).
func (h *Host) unfinished(only ...history.Status) ([]history.Execution, error) {
	var out []history.Execution
	err := h.db.View(func(tx *store.Tx) error {
		return tx.Scan(store.Active, nil, false, func(id, status []byte) bool {
			if len(only) > 0 && !slices.Contains(only, history.Status(status)) {
				return true
			}
			if x, err := history.DecodeExecution(tx.Execution(string(id))); err == nil {
				out = append(out, x)
			}
			return true
		})
	})
	return out, err
}

// markOrphans marks executions left "running" by a host that died: no worker
// of theirs can be alive, since workers die with their host.
func (h *Host) markOrphans() error {
	if err := h.ensureActiveIndex(); err != nil {
		return err
	}
	running, err := h.unfinished(history.StatusRunning)
	if err != nil {
		return err
	}
	for _, x := range running {
		_, err := h.record(x.ID, history.Event{Type: history.WorkerCrashed, Run: x.Runs, ExitCode: 137,
			Error: "the host process died while this execution ran; its worker died with it"},
			func(r *history.Execution) { r.Status = history.StatusKilled })
		if err != nil {
			return err
		}
	}
	return nil
}

// Close kills live workers, stops the services and closes the database.
func (h *Host) Close() error {
	if stop := h.companion.Stop; stop != nil {
		h.companion.Stop = nil
		stop()
	}
	h.quitOnce.Do(func() { close(h.quit) }) // idle kept workers exit
	h.mu.Lock()
	var workers []*workerProc
	for _, st := range h.execs {
		if st.worker != nil && st.worker.proc != nil {
			workers = append(workers, st.worker)
		}
	}
	h.mu.Unlock()
	for _, w := range workers {
		w.kill()
		<-w.done
	}
	h.mu.Lock()
	var procs []*process
	for _, p := range h.procs {
		procs = append(procs, p)
	}
	h.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	h.mu.Lock()
	before := h.beforeClose
	h.beforeClose = nil
	h.mu.Unlock()
	for _, fn := range before {
		fn()
	}
	h.stopFlagging()
	h.stopIndex()
	h.bus.close() // ends attached clients' notice streams and waits
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if h.runtime != nil {
		if err := h.runtime.Shutdown(ctx); err != nil {
			_ = h.runtime.Close() // connections that never sent a request
		}
	}
	if h.channel != nil {
		_ = h.channel.Close() // its workers are gone: it waits for no one
	}
	h.runtimeDone.Wait()
	werr := h.world.Close()
	return errors.Join(werr, h.db.Close())
}

// record appends one event (stamped with the clock) and optionally updates
// the execution record in the same durable commit, then publishes it.
func (h *Host) record(exec string, ev history.Event, update func(*history.Execution)) (history.Event, error) {
	ev.Time = h.clock.Now()
	prepared, err := history.Prepare(ev)
	if err != nil {
		return ev, err
	}
	err = h.db.Update(func(tx *store.Tx) error {
		if _, err := prepared.Append(tx, exec, &ev); err != nil {
			return err
		}
		if update != nil {
			return updateExecution(tx, exec, ev.Time, update)
		}
		return nil
	})
	if err != nil {
		return ev, fmt.Errorf("record %s for %s: %w", ev.Type, exec, err)
	}
	h.bus.publish(notice.Notice{Execution: exec, Event: &ev})
	return ev, nil
}

// pendingEvent is one event of a batch a worker reports in one round trip,
// with the change it makes to the execution record, if any.
type pendingEvent struct {
	ev     history.Event
	update func(*history.Execution)
}

// recordAll appends events in order (each stamped with the clock) and
// applies their updates to the execution record, all in one durable commit,
// then publishes them: a worker's batch costs one fsync, and a batch is
// recorded whole or not at all.
func (h *Host) recordAll(exec string, batch []pendingEvent) ([]history.Event, error) {
	out := make([]history.Event, len(batch))
	prepared := make([]history.Prepared, len(batch))
	for i, p := range batch {
		out[i] = p.ev
		out[i].Time = h.clock.Now()
		var err error
		if prepared[i], err = history.Prepare(out[i]); err != nil {
			return nil, err
		}
	}
	err := h.db.Update(func(tx *store.Tx) error {
		for i, p := range batch {
			if _, err := prepared[i].Append(tx, exec, &out[i]); err != nil {
				return err
			}
			if p.update != nil {
				if err := updateExecution(tx, exec, out[i].Time, p.update); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		types := make([]string, len(batch))
		for i, p := range batch {
			types[i] = string(p.ev.Type)
		}
		return nil, fmt.Errorf("record %s for %s: %w", strings.Join(types, ", "), exec, err)
	}
	for i := range out {
		h.bus.publish(notice.Notice{Execution: exec, Event: &out[i]})
	}
	return out, nil
}

func updateExecution(tx *store.Tx, exec string, now time.Time, update func(*history.Execution)) error {
	data := tx.Execution(exec)
	if data == nil {
		return fmt.Errorf("%w: %s", ErrNoExecution, exec)
	}
	x, err := history.DecodeExecution(data)
	if err != nil {
		return err
	}
	update(&x)
	x.Updated = now
	if x.Status.Finished() && x.Ended.IsZero() {
		x.Ended = now
	}
	return history.Put(tx, x)
}

// effectEvent is the history event that records an effect of the world.
func effectEvent(a world.Activity) history.Event {
	at := a.Attribution
	ev := history.Event{Type: history.EffectObserved, Seq: a.Recorded, Time: a.RecordedAt, Run: at.Run, Step: at.Step,
		Attempt: at.Attempt, Key: at.Key, Effect: &history.Effect{Service: a.Service}}
	switch a.Kind {
	case world.KindDelivered:
		ev.Effect.ID, ev.Effect.Target, ev.Effect.Summary = a.MessageID, a.To, a.Subject
	default:
		ev.Effect.ID, ev.Effect.Summary = a.RecordID, a.Detail
	}
	return ev
}

// recordEffect appends the EffectObserved event of an effect to the
// attributed execution's history, inside the world's transaction that
// makes the effect: what an attempt caused is part of the recorded past,
// and a reset of the world later cannot rewrite it. Effects of external
// clients, or attributed to no execution this database holds, are not
// recorded.
func (h *Host) recordEffect(tx *store.Tx, a *world.Activity) error {
	id := a.Attribution.Execution
	if id == "" {
		return nil
	}
	data := tx.Execution(id)
	if data == nil {
		return nil
	}
	x, err := history.DecodeExecution(data)
	if err != nil {
		return err
	}
	if x.Imported != "" {
		return nil // an imported history is the other engine's record, not the host's to append to
	}
	a.RecordedAt = h.clock.Now()
	ev := effectEvent(*a)
	if err := history.Append(tx, id, &ev); err != nil {
		return err
	}
	a.Recorded = ev.Seq
	if a.Kind != world.KindDelivered {
		return nil
	}
	if x.Sends == nil {
		x.Sends = map[string]int{}
	}
	k := history.SendIntent(a.To, a.Subject)
	x.Sends[k]++
	if x.Sends[k] > 1 {
		x.Duplicates = true
	}
	return history.Put(tx, x)
}

// observe receives the world's activity and forwards it to subscribers:
// an effect recorded in a history first as that history's event.
func (h *Host) observe(a world.Activity) {
	if a.Recorded != 0 {
		ev := effectEvent(a)
		h.bus.publish(notice.Notice{Execution: a.Attribution.Execution, Event: &ev})
	}
	if a.Service == "mail" && a.Kind != "fault" {
		h.mu.Lock()
		h.mailRequests[a.Attribution.Execution]++
		h.mu.Unlock()
	}
	h.bus.publish(notice.Notice{Execution: a.Attribution.Execution, Activity: &a})
}
