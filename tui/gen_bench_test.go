package tui

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// The explorer over generated histories: a test that it reads and draws
// them, and the benchmarks of opening it and of a key press at scale.
//
// The benchmarks read databases generated once into gen.CacheDir() and
// reused by later runs. By default they use small ones, so that
// `go test ./... -run XXX -bench . -benchtime 1x` stays quick; with
// RETRYLAB_BENCH_FULL=1 they use the sizes BENCHMARKS.md reports: 1 000 000
// attempts in 10 000 executions, against 10 000 attempts in 100.

// benchFull reports whether RETRYLAB_BENCH_FULL asks for the full sizes.
func benchFull() bool { return os.Getenv("RETRYLAB_BENCH_FULL") == "1" }

// attemptsPerStep makes the generated executions average about 100
// attempts each (most make one tool call, invoice-crm two).
const attemptsPerStep = 89

// explorerSizes are the small and the large database of the open benchmark.
func explorerSizes() (small, large gen.Options) {
	small = gen.Options{Executions: 10, AttemptsPerStep: attemptsPerStep, Seed: 1}
	large = gen.Options{Executions: 100, AttemptsPerStep: attemptsPerStep, Seed: 1}
	if benchFull() {
		small.Executions, large.Executions = 100, 10000
	}
	return small, large
}

// cachedDB generates (or finds) a database for a benchmark.
func cachedDB(tb testing.TB, opts gen.Options) (string, gen.Stats) {
	tb.Helper()
	start := time.Now()
	opts.Progress = func(p gen.Progress) {
		if p.Done == p.Total || p.Done%1000 < 100 {
			tb.Logf("generating %d/%d executions (%s)", p.Done, p.Total, time.Since(start).Round(time.Second))
		}
	}
	path, st, err := gen.Cached(context.Background(), gen.CacheDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return path, st
}

// runner plays the Bubble Tea runtime's part for a model over a live host:
// every command runs in its own goroutine and its message comes back to
// Update, in arrival order. The notice follower blocks until the host
// publishes, as in a real program; settle waits for everything else.
type runner struct {
	m       *Model
	msgs    chan tea.Msg
	pending int // commands running or messages not yet handled
}

func newRunner(m *Model) *runner { return &runner{m: m, msgs: make(chan tea.Msg, 1024)} }

func (r *runner) spawn(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	r.pending++
	go func() { r.msgs <- cmd() }()
}

func (r *runner) handle(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil, tea.QuitMsg:
	case tea.BatchMsg:
		for _, c := range msg {
			r.spawn(c)
		}
	default:
		_, cmd := r.m.Update(msg)
		r.spawn(cmd)
	}
	r.pending-- // after spawning what it led to, so pending never dips early
}

// send delivers a message as the runtime would.
func (r *runner) send(msg tea.Msg) {
	r.pending++
	r.handle(msg)
}

// settle handles messages until only the notice follower is left.
func (r *runner) settle(tb testing.TB) {
	tb.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for r.pending > 1 {
		select {
		case msg := <-r.msgs:
			r.handle(msg)
		case <-timeout.C:
			tb.Fatalf("the explorer did not settle: %d commands pending", r.pending)
		}
	}
}

// runUntil handles messages until done says so, as the notices of
// executions arriving from elsewhere are followed; what names the wait.
func (r *runner) runUntil(tb testing.TB, what string, done func() bool) {
	tb.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for !done() {
		select {
		case msg := <-r.msgs:
			r.handle(msg)
		case <-timeout.C:
			tb.Fatalf("%s never came:\n%s", what, ansi.Strip(r.m.View()))
		}
	}
}

// runUntilView is runUntil the screen shows want.
func (r *runner) runUntilView(tb testing.TB, want string) {
	tb.Helper()
	r.runUntil(tb, fmt.Sprintf("a screen with %q", want), func() bool { return strings.Contains(ansi.Strip(r.m.View()), want) })
}

// openExplorer starts the explorer on h and runs it to its first full
// frame, which it returns.
func openExplorer(tb testing.TB, h engine.Source, w, hgt int) (*Model, *runner, string) {
	tb.Helper()
	m := New(Options{Source: h, Now: fixedNow})
	r := newRunner(m)
	// Init's batch is handled here, not spawned: it holds the notice
	// follower, and settle stops when one command is left, which before
	// the batch is read would be the batch itself, its loads not begun.
	r.send(m.Init()())
	r.send(tea.WindowSizeMsg{Width: w, Height: hgt})
	r.settle(tb)
	if m.trace.tr == nil || len(m.execs.items) == 0 {
		tb.Fatalf("first frame without a trace or executions: %d executions", len(m.execs.items))
	}
	return m, r, m.View()
}

// openHost opens a host on path as the CLI does: serving the control API,
// so that tests can attach to it.
func openHost(tb testing.TB, path string) *control.Server {
	tb.Helper()
	// Benchmarks in other processes may hold a cached database: wait.
	h, err := control.Open(engine.Config{DBPath: path, Scenarios: testrun.QuickTimeouts(tb, fixtures.FS), LockTimeout: 10 * time.Minute, Imports: all.Registry()})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func benchKey(s string) tea.KeyMsg {
	switch s {
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	}
	return keyMsg(s)
}

// TestGeneratedHistoriesInTheExplorer generates 50 executions, reads them
// through a Host and draws every one of them in the explorer.
func TestGeneratedHistoriesInTheExplorer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(context.Background(), db, gen.Options{Executions: 50, AttemptsPerStep: 3, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	h := openHost(t, path)
	defer h.Close()
	if err := h.Store().Check(); err != nil {
		t.Fatal(err)
	}
	list, total, err := h.Executions(0, 0)
	if err != nil || total != 50 || len(list) != 50 {
		t.Fatalf("executions: %d of %d, %v", len(list), total, err)
	}
	var events, msgs int
	for _, x := range list {
		evs, err := h.Events(x.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := h.Providers().MessagesFor(x.ID)
		if err != nil {
			t.Fatal(err)
		}
		events += len(evs)
		msgs += len(ms)
	}
	if int64(events) != st.Events || int64(msgs) != st.Messages {
		t.Fatalf("read %d events and %d messages; generated %d and %d", events, msgs, st.Events, st.Messages)
	}

	m, r, frame := openExplorer(t, h, 160, 48)
	t.Logf("DEBUG total=%d flash=%q pending=%d notices=%v", m.outbox.total, m.status.text, r.pending, m.feed.notices != nil)
	defer m.Close()
	for _, want := range []string{"Executions 50", list[0].ID, gen.ScenarioPrefix, "Outbox", "whole outbox"} {
		if !strings.Contains(frame, want) {
			t.Fatalf("first frame lacks %q:\n%s", want, frame)
		}
	}
	// Walk every execution in the executions pane; each frame shows its trace.
	r.send(benchKey("shift+tab"))
	r.settle(t)
	seen := map[string]bool{}
	dup := false
	for i := 0; i < 50; i++ {
		frame := m.View()
		if m.trace.tr == nil || !strings.Contains(frame, "Trace  "+m.trace.tr.exec.ID) {
			t.Fatalf("selection %d: no trace in the frame:\n%s", i, frame)
		}
		seen[m.trace.tr.exec.ID] = true
		dup = dup || strings.Contains(frame, "duplicate send")
		r.send(benchKey("j"))
		r.settle(t)
	}
	if len(seen) != 50 {
		t.Errorf("walked %d distinct executions, want 50", len(seen))
	}
	if !dup {
		t.Error("no frame flagged a duplicate send")
	}
	// Scroll a trace to its end and back.
	r.send(benchKey("tab"))
	r.send(benchKey("G"))
	r.send(benchKey("g"))
	r.settle(t)
	if len(m.View()) == 0 {
		t.Fatal("empty frame")
	}
}

// pagedSource is a Source whose CRM is read a page at a time.
type pagedSource struct {
	Source
	rows  []world.Record
	pages int
}

func (p *pagedSource) RecordsPage(from string, limit int) ([]world.Record, error) {
	p.pages++
	return p.rows[:min(limit, len(p.rows))], nil
}

// TestCRMRowsLoadLazily checks that the CRM rows, the one read of the
// outbox pane that grows with the database, are read only while the CRM
// tab shows, a window at a time.
func TestCRMRowsLoadLazily(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(context.Background(), db, gen.Options{Executions: 40, AttemptsPerStep: 2, Seed: 5})
	db.Close()
	if err != nil || st.CRMWrites == 0 {
		t.Fatalf("generate: %+v, %v", st, err)
	}
	h := openHost(t, path)
	defer h.Close()
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	if m.outbox.records != nil {
		t.Fatalf("the first frame read %d CRM rows; want none until the CRM tab shows", len(m.outbox.records))
	}
	r.send(benchKey("o"))
	r.settle(t)
	if len(m.outbox.records) == 0 || m.outbox.recordsCut || !strings.Contains(m.View(), "CRM (provider's truth)") {
		t.Fatalf("the CRM tab shows %d rows (cut %v)", len(m.outbox.records), m.outbox.recordsCut)
	}

	rows := make([]world.Record, crmWindow+5)
	for i := range rows {
		rows[i] = world.Record{ID: fmt.Sprintf("rec_%05d", i)}
	}
	src := &pagedSource{Source: h, rows: rows}
	got, cut, err := loadRecords(src)
	if err != nil || !cut || len(got) != crmWindow || src.pages != 1 {
		t.Fatalf("a large CRM: %d rows, cut %v, %d pages, %v", len(got), cut, src.pages, err)
	}
}

// TestLongHistoryPagesIn opens the explorer on one execution whose
// history is several trace pages long: the first frame reads one page,
// and scrolling to the end reads the rest, page by page.
func TestLongHistoryPagesIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(context.Background(), db, gen.Options{Executions: 1, AttemptsPerStep: 2500, Seed: 1})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Events <= 2*tracePage {
		t.Fatalf("generated %d events; the test needs more than two pages", st.Events)
	}
	h := openHost(t, path)
	defer h.Close()
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	if m.trace.tr.events() != tracePage || !m.trace.truncated {
		t.Fatalf("first frame holds %d events (truncated %v); want one page of %d", m.trace.tr.events(), m.trace.truncated, tracePage)
	}
	for pages := 1; m.trace.truncated; pages++ {
		if pages > 10 {
			t.Fatalf("still truncated after %d pages (%d events)", pages, m.trace.tr.events())
		}
		r.send(benchKey("G"))
		r.settle(t)
	}
	if int64(m.trace.tr.events()) != st.Events {
		t.Fatalf("paged in %d events of %d", m.trace.tr.events(), st.Events)
	}
	all, err := h.Events(m.trace.tr.exec.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := newTraceView(m.trace.tr.exec, all).flatten(m.trace.collapsed, false); len(m.trace.rows) != len(want) {
		t.Fatalf("the paged trace has %d rows; read whole it has %d", len(m.trace.rows), len(want))
	}
	if strings.Contains(m.View(), "keep scrolling") {
		t.Fatal("the end of the history still says there is more")
	}
}

// --- memory ----------------------------------------------------------------

// resetPeakRSS resets the kernel's high-water mark of this process's
// resident set (Linux). It reports false where that is not possible.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is the high-water mark of the resident set in bytes, or 0.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func quiesce() {
	runtime.GC()
	debug.FreeOSMemory()
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// diff is a[i] - b[i] for each i.
func diff(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.5) - 1
	return s[clamp(i, 0, len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// openOnce opens a host and the explorer on path, to the first full
// frame, and closes them. It returns the time to the frame, of it the
// host's open, and the peak resident set meanwhile.
func openOnce(b *testing.B, path string) (total, host time.Duration, peak int64) {
	quiesce()
	measured := resetPeakRSS()
	start := time.Now()
	h := openHost(b, path)
	host = time.Since(start)
	m, _, frame := openExplorer(b, h, 160, 48)
	total = time.Since(start)
	if measured {
		peak = peakRSS()
	}
	if !strings.Contains(frame, "Trace  ") {
		b.Fatalf("first frame has no trace:\n%s", frame)
	}
	m.Close()
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	return total, host, peak
}

// BenchmarkExplorerOpen opens the explorer (the host on the database, then
// the explorer to its first full frame) on a small and a large database in
// turn, and reports both times, their ratio (medians of the same run) and
// the peak resident set while opening the large one.
func BenchmarkExplorerOpen(b *testing.B) {
	smallOpts, largeOpts := explorerSizes()
	small, smallSt := cachedDB(b, smallOpts)
	large, largeSt := cachedDB(b, largeOpts)
	openOnce(b, small) // warm the page cache and the code paths
	openOnce(b, large)
	var ts, tl, hs, hl []time.Duration
	var peak int64
	b.ResetTimer()
	for range b.N {
		t, h, _ := openOnce(b, small)
		ts, hs = append(ts, t), append(hs, h)
		t, h, p := openOnce(b, large)
		tl, hl = append(tl, t), append(hl, h)
		peak = max(peak, p)
	}
	b.StopTimer()
	b.ReportMetric(float64(smallSt.Attempts), "small-attempts")
	b.ReportMetric(float64(largeSt.Attempts), "large-attempts")
	b.ReportMetric(ms(median(ts)), "small-ms")
	b.ReportMetric(ms(median(tl)), "large-ms")
	b.ReportMetric(float64(median(tl))/float64(median(ts)), "large/small")
	// The same split in two: engine.Open (the host: store, world, runtime
	// API), then the explorer from New to its first full frame.
	es, el := diff(ts, hs), diff(tl, hl)
	b.ReportMetric(ms(median(hs)), "small-host-ms")
	b.ReportMetric(ms(median(hl)), "large-host-ms")
	b.ReportMetric(ms(median(es)), "small-explorer-ms")
	b.ReportMetric(ms(median(el)), "large-explorer-ms")
	b.ReportMetric(float64(median(el))/float64(median(es)), "explorer-large/small")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	}
}

// keyScript is what a reader does: scroll a trace, move through the
// executions (loading each one's trace, paging the list, jumping to the
// oldest and back), and scroll again.
var keyScript = func() []string {
	var s []string
	rep := func(k string, n int) {
		for range n {
			s = append(s, k)
		}
	}
	rep("j", 40)
	rep("pgdown", 3)
	rep("k", 10)
	s = append(s, "G", "g", "shift+tab") // to the executions pane
	rep("j", 60)
	rep("pgdown", 10)
	s = append(s, "G")
	rep("k", 15)
	rep("pgup", 3)
	s = append(s, "g", "tab") // back to the trace
	return s
}()

// BenchmarkExplorerKeyPress presses keys in the explorer on the large
// database; one op is one key press, from the message to the next frame
// drawn with everything the key loaded. It reports the 99th percentile.
func BenchmarkExplorerKeyPress(b *testing.B) {
	_, largeOpts := explorerSizes()
	path, _ := cachedDB(b, largeOpts)
	h := openHost(b, path)
	defer h.Close()
	m, r, _ := openExplorer(b, h, 160, 48)
	defer m.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		r.send(benchKey(keyScript[i%len(keyScript)]))
		r.settle(b)
		_ = m.View()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
}
