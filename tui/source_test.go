package tui

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

func TestMain(m *testing.M) {
	agent.MainForTests() // the tests' hosts start this binary as their workers
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

// base is the normalised start of every recorded history.
var base = time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return base.Add(time.Hour) }

// snapshot is a Source over data recorded from real runs, with times,
// durations and pids normalised so views are the same on every machine.
// Actions are recorded, not carried out.
type snapshot struct {
	mu        sync.Mutex
	execs     []history.Execution // newest first
	events    map[string][]history.Event
	msgs      []world.Message
	records   []world.Record
	scenarios []*scenario.Scenario
	armed     []fault.Point
	offset    time.Duration // the world clock's, as A moved it
	calls     []string
}

var (
	recordedMu sync.Mutex
	recorded   = map[string]*recording{}
)

// recording is one script's recording, made by the first test that asks
// for it while the others asking for the same one wait.
type recording struct {
	done chan struct{}
	snap *snapshot
}

// record runs scripts of actions against a real host on a scratch
// database and snapshots the result. Each script is a scenario name and
// its actions: "run" or "resume". Recordings are made once per test binary
// (different ones at the same time: they wait on timeouts, not the CPU);
// each caller gets its own copy to act on.
func record(t *testing.T, scripts ...[]string) *snapshot {
	t.Helper()
	key := fmt.Sprint(scripts)
	recordedMu.Lock()
	rec, ok := recorded[key]
	if !ok {
		rec = &recording{done: make(chan struct{})}
		recorded[key] = rec
	}
	recordedMu.Unlock()
	if !ok {
		func() {
			defer close(rec.done)
			rec.snap = recordNow(t, scripts...)
		}()
	}
	<-rec.done
	snap := rec.snap
	if snap == nil {
		t.Fatalf("recording %s failed in another test", key)
	}
	// Each test gets its own list and map of events (tests run in
	// parallel and some change them); the events themselves are shared
	// and must be copied before they are changed.
	return &snapshot{execs: slices.Clone(snap.execs), events: maps.Clone(snap.events), msgs: snap.msgs, records: snap.records, scenarios: snap.scenarios}
}

func recordNow(t *testing.T, scripts ...[]string) *snapshot {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS), Imports: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, s := range scripts {
		for _, action := range s[1:] {
			var r *engine.Run
			if action == "advance" { // the A key: the world clock +25h
				if err := h.Providers().AdvanceClock(retentionJump); err != nil {
					t.Fatalf("%s %s: %v", s[0], action, err)
				}
				continue
			}
			if action == "resume" {
				r, err = h.Resume("")
			} else {
				r, err = h.Start(s[0], engine.RunOptions{})
			}
			if err != nil {
				t.Fatalf("%s %s: %v", s[0], action, err)
			}
			<-r.Done()
		}
	}
	if err := h.Store().Check(); err != nil {
		t.Fatal(err)
	}
	snap := &snapshot{events: map[string][]history.Event{}}
	execs, _, err := h.Executions(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range execs {
		evs, err := h.Events(x.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		start := base.Add(time.Duration(len(execs)-i) * time.Minute)
		evs = normalise(start, evs)
		x.Started = start
		x.Updated = evs[len(evs)-1].Time
		snap.execs = append(snap.execs, x)
		snap.events[x.ID] = evs
	}
	msgs, err := h.Providers().Outbox()
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		msgs[i].Time = base.Add(time.Duration(msgs[i].Seq) * time.Second)
	}
	snap.msgs = msgs
	if snap.records, err = h.Providers().Records(); err != nil {
		t.Fatal(err)
	}
	if snap.scenarios, err = h.Catalog().All(); err != nil {
		t.Fatal(err)
	}
	return snap
}

// normalise gives events times 100 ms apart (53 s for the pause before a
// resumed run, as in the article's trace), fixed attempt durations and pids.
func normalise(start time.Time, evs []history.Event) []history.Event {
	at := start
	for i := range evs {
		e := &evs[i]
		if e.Type == history.WorkerStarted && e.Run > 1 {
			at = at.Add(53 * time.Second)
		}
		if e.Type != history.EffectObserved {
			// An effect is recorded within its request, not 100 ms on.
			at = at.Add(100 * time.Millisecond)
		}
		e.Time = at
		if e.PID != 0 {
			e.PID = 4000 + e.Run
		}
		if e.Type == history.AttemptFinished {
			e.Duration = 2 * time.Millisecond
			if e.Outcome == history.OutcomeTimeout {
				e.Duration = time.Second
			}
		}
	}
	return evs
}

func (s *snapshot) log(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
}

func (s *snapshot) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *snapshot) Execution(id string) (history.Execution, error) {
	for _, x := range s.execs {
		if x.ID == id {
			return x, nil
		}
	}
	return history.Execution{}, fmt.Errorf("%w: %s", engine.ErrNoExecution, id)
}

func (s *snapshot) Executions(skip, limit int) ([]history.Execution, int, error) {
	if skip > len(s.execs) {
		skip = len(s.execs)
	}
	end := len(s.execs)
	if limit > 0 && skip+limit < end {
		end = skip + limit
	}
	return append([]history.Execution(nil), s.execs[skip:end]...), len(s.execs), nil
}

// FindExecutions applies the filter's rule (execindex) to every execution,
// as the host's index answers it.
func (s *snapshot) FindExecutions(query string, skip, limit int) ([]history.Execution, int, error) {
	q := execindex.Parse(query)
	var out []history.Execution
	total := 0
	for _, x := range s.execs {
		if q.Match(x) {
			if total >= skip && (limit <= 0 || len(out) < limit) {
				out = append(out, x)
			}
			total++
		}
	}
	return out, total, nil
}

func (s *snapshot) Events(id string, from uint64, limit int) ([]history.Event, error) {
	var out []history.Event
	for _, e := range s.events[id] {
		if e.Seq >= from && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *snapshot) ImportedEvents(id string) ([]trace.Event, error) {
	return nil, fmt.Errorf("snapshot %s: no imported executions", id)
}

func (s *snapshot) MessagesFor(id string) ([]world.Message, error) {
	var out []world.Message
	for _, m := range s.msgs {
		if m.Attribution.Execution == id {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *snapshot) RecentMessages(limit int) ([]world.Message, int, error) {
	start := max(0, len(s.msgs)-limit)
	return s.msgs[start:], len(s.msgs), nil
}

func (s *snapshot) Records() ([]world.Record, error) { return s.records, nil }

func (s *snapshot) Subscribe(int) (<-chan notice.Notice, func()) {
	ch := make(chan notice.Notice)
	close(ch)
	return ch, func() {}
}

func (s *snapshot) Scenarios() ([]*scenario.Scenario, error) { return s.scenarios, nil }

func (s *snapshot) Start(name string, o engine.RunOptions) (*engine.Run, error) {
	s.log("start %s keys=%s journal=%s", name, tri(o.Keys), tri(o.Journal))
	return nil, fmt.Errorf("snapshot: not started")
}

func (s *snapshot) Resume(id string) (*engine.Run, error) {
	s.log("resume %s", id)
	return nil, fmt.Errorf("snapshot: not resumed")
}

func (s *snapshot) Kill(id string) error { s.log("kill %s", id); return nil }

func (s *snapshot) Arm(p fault.Point) {
	s.log("arm %s", p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = []fault.Point{p} // the last armed replaces the one before, as the host does
}

func (s *snapshot) Disarm() {
	s.log("disarm")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = nil
}

func (s *snapshot) Armed() []fault.Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]fault.Point(nil), s.armed...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (s *snapshot) DeleteJournal(id, step string) error {
	s.log("delete-journal %s %s", id, step)
	return nil
}

func (s *snapshot) AdvanceClock(d time.Duration) error {
	s.log("advance %s", d)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
	return nil
}

func (s *snapshot) WorldOffset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}
func (s *snapshot) ResetWorld() error { s.log("reset-world"); return nil }
func (s *snapshot) Running() []string { return nil }

// Reset wipes the snapshot as Host.Reset wipes a database. Tests call it
// from the command loop only, never beside a read.
func (s *snapshot) Reset() error {
	s.log("reset")
	s.execs, s.events, s.msgs, s.records, s.armed = nil, map[string][]history.Event{}, nil, nil, nil
	return nil
}
