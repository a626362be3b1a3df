package tui

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
)

// countingSource is a snapshot that counts every Source call it answers.
type countingSource struct {
	*snapshot
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingSource) count(name string) {
	c.mu.Lock()
	c.calls[name]++
	c.mu.Unlock()
}

func (c *countingSource) total() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, out := 0, map[string]int{}
	for k, v := range c.calls {
		n += v
		out[k] = v
	}
	c.calls = map[string]int{}
	return n, out
}

func (c *countingSource) Execution(id string) (history.Execution, error) {
	c.count("Execution")
	return c.snapshot.Execution(id)
}
func (c *countingSource) Executions(skip, limit int) ([]history.Execution, int, error) {
	c.count("Executions")
	return c.snapshot.Executions(skip, limit)
}
func (c *countingSource) Events(id string, from uint64, limit int) ([]history.Event, error) {
	c.count("Events")
	return c.snapshot.Events(id, from, limit)
}
func (c *countingSource) MessagesFor(id string) ([]world.Message, error) {
	c.count("MessagesFor")
	return c.snapshot.MessagesFor(id)
}
func (c *countingSource) RecentMessages(limit int) ([]world.Message, int, error) {
	c.count("RecentMessages")
	return c.snapshot.RecentMessages(limit)
}
func (c *countingSource) Records() ([]world.Record, error) {
	c.count("Records")
	return c.snapshot.Records()
}
func (c *countingSource) Armed() []fault.Point { c.count("Armed"); return c.snapshot.Armed() }
func (c *countingSource) WorldOffset() time.Duration {
	c.count("WorldOffset")
	return c.snapshot.WorldOffset()
}

// synthHistory is a history of n events of one long run: calls that time
// out, retry and succeed, each with its recorded effect.
func synthHistory(n int) []history.Event {
	at := base
	evs := []history.Event{{Type: history.ExecutionStarted, Run: 1, Scenario: "naive", Text: "none"},
		{Type: history.WorkerStarted, Run: 1, PID: 4001, Text: "none"}, {Type: history.TurnStarted, Run: 1, Turn: 1, Text: "go"}}
	for i := 0; len(evs) < n; i++ {
		step := fmt.Sprintf("step-%d", i)
		evs = append(evs,
			history.Event{Type: history.ToolCallScheduled, Run: 1, Step: step, Tool: "send_invoice_email"},
			history.Event{Type: history.AttemptStarted, Run: 1, Step: step, Attempt: 1},
			history.Event{Type: history.AttemptFinished, Run: 1, Step: step, Attempt: 1, Outcome: history.OutcomeTimeout, Duration: time.Second},
			history.Event{Type: history.RetryScheduled, Run: 1, Step: step, Attempt: 1, Delay: time.Millisecond},
			history.Event{Type: history.AttemptStarted, Run: 1, Step: step, Attempt: 2},
			history.Event{Type: history.EffectObserved, Run: 1, Step: step, Attempt: 2,
				Effect: &history.Effect{Service: "mail", ID: "msg_" + step, Target: "jordan@acme.dev"}},
			history.Event{Type: history.AttemptFinished, Run: 1, Step: step, Attempt: 2, Outcome: history.OutcomeOK,
				Response: &history.Exchange{Status: 200, Body: []byte(`{"message_id":"msg_` + step + `"}`)}})
	}
	evs = evs[:n]
	for i := range evs {
		at = at.Add(time.Millisecond)
		evs[i].Seq, evs[i].Time = uint64(i+1), at
	}
	return evs
}

// liveFixture is an explorer following a run whose history holds have
// events of all; the rest come as notices.
func liveFixture(tb testing.TB, have int, all []history.Event) (*Model, *countingSource) {
	x := history.Execution{ID: "exec_LIVE", Scenario: "naive", Status: history.StatusRunning, Runs: 1, Started: base}
	snap := &snapshot{execs: []history.Execution{x}, events: map[string][]history.Event{x.ID: all[:have]}}
	src := &countingSource{snapshot: snap, calls: map[string]int{}}
	m := New(Options{Source: src, Now: fixedNow})
	tb.Cleanup(m.Close)
	settleAll(tb, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	settleAll(tb, m, cmd)
	for m.trace.truncated {
		settleAll(tb, m, m.loadMoreTrace())
	}
	if m.trace.tr == nil || m.trace.tr.events() != have {
		tb.Fatalf("the explorer holds %v events, want %d", m.trace.tr, have)
	}
	return m, src
}

// settleAll runs cmd and what it leads to, as the runtime would.
func settleAll(tb testing.TB, m *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10000 {
			tb.Fatal("command loop did not settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, tea.QuitMsg:
		case noticesMsg:
			if len(msg.batch) > 0 {
				_, next := m.Update(msg)
				queue = append(queue, next)
			}
		case tea.BatchMsg:
			queue = append(queue, msg...)
		default:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// burst delivers the next n events as notices (the source holds them too,
// as the store would) and returns the Source calls the explorer made.
func burst(tb testing.TB, m *Model, src *countingSource, all []history.Event, n int) (int, map[string]int) {
	id := m.selID
	have := len(src.events[id])
	next := all[have : have+n]
	src.events[id] = all[:have+n]
	batch := make([]notice.Notice, len(next))
	for i := range next {
		batch[i] = notice.Notice{Execution: id, Event: &next[i]}
	}
	src.total()
	_, cmd := m.Update(noticesMsg{batch: batch, closed: true})
	settleAll(tb, m, cmd)
	return src.total()
}

// A burst of 100 notices during a 50 000-event run is applied to the kept
// trace: no re-read of the history, at most 2 Source calls; and the rows
// are those of the whole history folded at once. A notice after a gap
// reads only the missing page.
func TestLiveBurstCostsNoReread(t *testing.T) {
	all := synthHistory(50000)
	m, src := liveFixture(t, 49000, all)
	for range 5 {
		if calls, by := burst(t, m, src, all, 100); calls > 2 || by["Events"] > 0 {
			t.Fatalf("a burst of 100 notices made %d Source calls %v; want at most 2, no Events", calls, by)
		}
	}
	want := newTraceView(m.trace.tr.exec, all[:49500]).flatten(m.trace.collapsed, false)
	if len(m.trace.rows) != len(want) || m.trace.rows[len(m.trace.rows)-1].n.text != want[len(want)-1].n.text {
		t.Fatalf("live rows %d, folded at once %d", len(m.trace.rows), len(want))
	}
	// A gap: 50 events never arrive as notices, then 10 do.
	src.events[m.selID] = all[:49550]
	calls, by := burst(t, m, src, all, 10)
	if by["Events"] != 1 || m.trace.tr.events() != 49560 || calls > 3 {
		t.Fatalf("after a gap: %d calls %v, %d events held; want one page read", calls, by, m.trace.tr.events())
	}
}

// BenchmarkLiveBurst is a burst of 100 notices during a 50 000-event run;
// it reports the Source calls per burst.
func BenchmarkLiveBurst(b *testing.B) {
	all := synthHistory(50000)
	var m *Model
	var src *countingSource
	total := 0
	for i := 0; i < b.N; i++ {
		if m == nil || len(src.events[m.selID])+100 > len(all) {
			b.StopTimer()
			m, src = liveFixture(b, 45000, all)
			b.StartTimer()
		}
		calls, _ := burst(b, m, src, all, 100)
		total += calls
	}
	b.ReportMetric(float64(total)/float64(b.N), "calls/burst")
}

// The executions list of 10 000 rows: one redraw reads one window, flags
// included, in at most 2 Source calls.
func TestExecutionsListCalls(t *testing.T) {
	snap := &snapshot{events: map[string][]history.Event{}}
	for i := range 10000 {
		snap.execs = append(snap.execs, history.Execution{ID: fmt.Sprintf("exec_%05d", i), Scenario: "naive",
			Status: history.StatusCompleted, Duplicates: i%3 == 0, Started: base, Updated: base})
	}
	src := &countingSource{snapshot: snap, calls: map[string]int{}}
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	m.width, m.height = 160, 40
	settleAll(t, m, m.loadExecs()) // the first load also reads the selected trace
	src.total()
	settleAll(t, m, m.loadExecs())
	calls, by := src.total()
	if calls > 2 || by["MessagesFor"] > 0 {
		t.Fatalf("one redraw of the list made %d Source calls %v", calls, by)
	}
	if len(m.execs.items) == 0 || !m.execs.items[0].duplicates || m.execs.items[1].duplicates {
		t.Fatalf("flags did not come with the list: %+v", m.execs.items[:2])
	}
}

// tenThousandExecutions is an explorer of width x height over a source
// holding 10 000 executions, which it counts the calls to.
func tenThousandExecutions(b *testing.B, width, height int) (*Model, *countingSource) {
	snap := &snapshot{events: map[string][]history.Event{}}
	for i := range 10000 {
		snap.execs = append(snap.execs, history.Execution{ID: fmt.Sprintf("exec_%05d", i), Scenario: "naive", Started: base, Updated: base})
	}
	src := &countingSource{snapshot: snap, calls: map[string]int{}}
	m := New(Options{Source: src, Now: fixedNow})
	b.Cleanup(m.Close)
	m.width, m.height = width, height
	return m, src
}

// BenchmarkExecutionsList redraws the list of 10 000 executions.
func BenchmarkExecutionsList(b *testing.B) {
	m, src := tenThousandExecutions(b, 160, 40)
	src.total()
	total := 0
	for i := 0; i < b.N; i++ {
		msg := m.loadExecs()()
		m.Update(msg)
		_ = m.View()
		n, _ := src.total()
		total += n
	}
	b.ReportMetric(float64(total)/float64(b.N), "calls/redraw")
}

// BenchmarkFrame draws the explorer's frame (View alone) at 160x48 over a
// list of 10 000 executions: the work each key and each refresh costs the
// screen's goroutine before the frame can go out.
func BenchmarkFrame(b *testing.B) {
	m, _ := tenThousandExecutions(b, 160, 48)
	m.Update(m.loadExecs()())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}

// Resetting the world empties the outbox, but the trace shows what was
// recorded: the crashed attempt that delivered stays ◆, and the list's ⚠
// stays (issue 13, item 8).
func TestResetWorldKeepsThePast(t *testing.T) {
	snap := record(t, []string{"crash", "run", "resume"})
	m := open(t, snap, 160, 36)
	ambiguous := func() bool {
		for _, r := range m.trace.rows {
			if r.n.kind == kindAttempt && r.n.mark == markAmbiguous &&
				strings.Contains(r.n.text, "worker died · ambiguous: provider delivered msg_") {
				return true
			}
		}
		return false
	}
	if !ambiguous() || !m.execs.items[0].duplicates {
		t.Fatalf("before the reset: ◆ %v, ⚠ %v", ambiguous(), m.execs.items[0].duplicates)
	}
	snap.msgs, snap.records = nil, nil // what ResetWorld leaves
	_, cmd := m.Update(noticesMsg{batch: []notice.Notice{{Lagged: true}}, closed: true})
	settleAll(t, m, cmd)
	if len(m.outbox.msgs) != 0 {
		t.Fatalf("the outbox pane still shows %d messages after the reset", len(m.outbox.msgs))
	}
	if !ambiguous() || !m.execs.items[0].duplicates {
		t.Fatalf("after the reset the past changed: ◆ %v, ⚠ %v\n%s", ambiguous(), m.execs.items[0].duplicates, m.View())
	}
}

// A live trace stops at the cap like a read one, and says where it cut.
func TestLiveTraceStopsAtTheCap(t *testing.T) {
	all := synthHistory(maxTraceEvents + 100)
	m, src := liveFixture(t, maxTraceEvents, all)
	if calls, by := burst(t, m, src, all, 100); by["Events"] > 0 || calls > 2 {
		t.Fatalf("a burst past the cap read the history: %d calls %v", calls, by)
	}
	if m.trace.tr.events() != maxTraceEvents || !m.trace.truncated {
		t.Fatalf("holds %d events (truncated %v), want the cap %d", m.trace.tr.events(), m.trace.truncated, maxTraceEvents)
	}
	m.trace.top = len(m.trace.rows) - 1 // the end of the trace, with room below
	if _, lines := m.trace.lines(5, 120); !strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("history cut at %d events", maxTraceEvents)) {
		t.Fatalf("the view does not say where the history was cut:\n%s", strings.Join(lines, "\n"))
	}
}

// The header says each run's policy when they differ, as recorded, not the
// policy the record holds now (issue 13, item 6).
func TestTraceHeaderShowsTheRunsPolicies(t *testing.T) {
	evs := []history.Event{
		{Seq: 1, Type: history.ExecutionStarted, Run: 1, Scenario: "naive", Text: "none", Time: base},
		{Seq: 2, Type: history.WorkerStarted, Run: 1, PID: 4001, Text: "none", Time: base},
		{Seq: 3, Type: history.WorkerCrashed, Run: 1, ExitCode: 137, Error: "killed (SIGKILL) from outside", Time: base.Add(time.Second)},
		{Seq: 4, Type: history.WorkerStarted, Run: 2, PID: 4002, Text: "keys+journal", Time: base.Add(time.Minute)},
	}
	x := history.Execution{ID: "exec_POL", Scenario: "naive", Policy: history.Policy{Keys: true, Journal: true},
		Status: history.StatusRunning, Runs: 2, Started: base, Updated: base.Add(time.Minute)}
	snap := &snapshot{execs: []history.Execution{x}, events: map[string][]history.Event{x.ID: evs}}
	m := open(t, snap, 160, 36)
	title, lines := m.trace.lines(10, 150)
	if !strings.Contains(title, "exec_POL · naive · none → keys+journal") {
		t.Fatalf("title %q", title)
	}
	body := strings.Join(lines, "\n")
	for _, want := range []string{"run 1 · pid 4001 · policy none · ☠ killed", "run 2 · pid 4002 · policy keys+journal · … running"} {
		if !strings.Contains(body, want) {
			t.Errorf("the trace lacks %q:\n%s", want, body)
		}
	}
}
