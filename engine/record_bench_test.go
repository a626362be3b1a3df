package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/engine/wire"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/cputime"
	"github.com/retrylab/retrylab/store"
)

// Durable recording, measured through the path a worker uses: HTTP requests
// to the runtime API (POST /v1/executions/{id}/events, PUT .../journal/{step})
// and to the mail API, each acknowledged only after its fsynced commit.

// benchFull reports whether RETRYLAB_BENCH_FULL asks for the full sizes
// (see BENCHMARKS.md); the default sizes keep a -benchtime 1x run quick.
func benchFull() bool { return os.Getenv("RETRYLAB_BENCH_FULL") == "1" }

func benchHost(b *testing.B) *Host {
	b.Helper()
	return benchHostFS(b, fstest.MapFS{})
}

// benchHostFS is benchHost with a scenario catalogue.
func benchHostFS(b *testing.B, scenarios fs.FS) *Host {
	b.Helper()
	h, err := Open(Config{DBPath: filepath.Join(b.TempDir(), "bench.db"), Scenarios: scenarios,
		Executable: "/nonexistent/worker"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.Close(); err != nil {
			b.Error(err)
		}
	})
	return h
}

// benchWorker makes execution id look to the runtime API like one whose
// worker runs (a live worker entry, run 1), without a process: everything
// a request to it goes through (HTTP, the token, decoding, the durable
// record, the notice) is the real path; only the child process is missing.
func benchWorker(b testing.TB, h *Host, id string, policy history.Policy) {
	b.Helper()
	now := h.clock.Now()
	enc, err := history.EncodeExecution(history.Execution{ID: id, Scenario: "bench", Policy: policy,
		Status: history.StatusRunning, Runs: 1, Started: now, Updated: now})
	if err != nil {
		b.Fatal(err)
	}
	// The record and its ExecutionStarted in one commit, as Start writes
	// them: a record of a run with no history is damage to every reader.
	if err := h.db.Update(func(tx *store.Tx) error {
		ev := history.Event{Type: history.ExecutionStarted, Time: now, Run: 1, Scenario: "bench", Text: policy.String()}
		if err := history.Append(tx, id, &ev); err != nil {
			return err
		}
		return tx.PutExecution(id, enc)
	}); err != nil {
		b.Fatal(err)
	}
	h.mu.Lock()
	h.execs[id] = &execState{run: 1, policy: policy, attempts: map[string]int{}, firedPlan: map[int]bool{},
		server: map[attemptKey][]fault.Point{}, worker: &workerProc{done: make(chan struct{})}}
	h.mu.Unlock()
}

// client speaks to the host's APIs over kept connections, as a worker: to
// the runtime API through the runtime channel on the host's Unix socket
// (HTTP over TCP if it has none), to the world's services over TCP.
type client struct {
	h    *Host
	http *http.Client   // TCP
	ch   *rtchan.Client // the runtime channel
}

func newClient(b *testing.B, h *Host) *client {
	tcp := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	c := &client{h: h, http: tcp}
	if sock := h.Runtime().Socket(); sock != "" {
		c.ch = rtchan.NewClient(sock, time.Minute)
		b.Cleanup(func() { c.ch.Close() })
	}
	return c
}

func (c *client) do(method, url string, body []byte, header map[string]string) ([]byte, error) {
	return c.doVia(c.http, method, url, body, header)
}

func (c *client) doVia(hc *http.Client, method, url string, body []byte, header map[string]string) ([]byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, out)
	}
	return out, nil
}

// runtime sends a request to the runtime API of execution id, as a worker
// the host started does (through the runtime channel).
func (c *client) runtime(method, id, path string, body []byte) error {
	if c.ch == nil {
		return c.runtimeTCP(method, id, path, body)
	}
	a, err := c.ch.Call(context.Background(), rtchan.Request{Method: method, Path: "/v1/executions/" + id + path,
		Token: c.h.token, Run: "1", Body: body}) // the live state above is run 1
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, a.Status, a.Body)
	}
	return nil
}

// runtimeTCP is runtime over TCP, as workers reached the host before the
// socket and as other programs still reach it.
func (c *client) runtimeTCP(method, id, path string, body []byte) error {
	_, err := c.doVia(c.http, method, c.h.Runtime().URL()+"/v1/executions/"+id+path, body,
		map[string]string{"Authorization": "Bearer " + c.h.token, wire.HeaderRun: "1"})
	return err
}

// reporter is the worker's own client of run 1 of execution id (the
// runtime channel when socket is set, else HTTP over TCP), in a Clients of
// its own as a worker process has.
func reporter(b *testing.B, h *Host, socket, id string) *agent.Reporter {
	c := agent.NewClients(socket)
	b.Cleanup(c.Close)
	return c.Reporter(h.Runtime().URL(), id, 1, h.token)
}

// finished is the AttemptFinished event a worker reports after a send,
// as it puts it on the wire.
func finished(attempt int) history.Event {
	return history.Event{Type: history.AttemptFinished, Step: "step-4", Tool: "send_invoice_email", Attempt: attempt,
		Key: "ik_a94a0b1d", Outcome: history.OutcomeOK, Duration: 42 * time.Millisecond,
		Response: &history.Exchange{Status: 200, Headers: map[string]string{"Content-Type": "application/json"},
			Body: json.RawMessage(`{"deduplicated":false,"idempotency_key":"ik_a94a0b1d","message_id":"msg_41bcc7","status":"sent"}`)}}
}

// bareBolt is the baseline: a plain bbolt file, written by db.Update.
type bareBolt struct{ db *bolt.DB }

func openBare(b *testing.B) *bareBolt {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		h, err := tx.CreateBucketIfNotExists([]byte("histories"))
		if err == nil {
			_, err = h.CreateBucketIfNotExists([]byte("bench"))
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return &bareBolt{db}
}

// append writes data under the next sequence number, one commit.
func (bb *bareBolt) append(data []byte) error {
	return bb.db.Update(func(tx *bolt.Tx) error {
		h := tx.Bucket([]byte("histories")).Bucket([]byte("bench"))
		seq, err := h.NextSequence()
		if err != nil {
			return err
		}
		return h.Put(store.U64(seq), data)
	})
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// BenchmarkRecordEvent compares one execution's events recorded through the
// runtime API (HTTP POST, decode, fsynced commit, notice) with a bare bbolt
// Update loop writing the same bytes the host stores, in alternating rounds
// of the same run. One op is one event through the runtime; the metrics are
// both rates and their ratio.
func BenchmarkRecordEvent(b *testing.B) {
	h := benchHost(b)
	benchWorker(b, h, "exec_bench", history.Policy{Keys: true})
	bare := openBare(b)
	stored := finished(1)
	stored.Seq, stored.Time, stored.Run = 1, time.Now(), 1
	data, err := history.Encode(stored)
	if err != nil {
		b.Fatal(err)
	}
	benchWorker(b, h, "exec_direct", history.Policy{Keys: true})
	benchWorker(b, h, "exec_tcp", history.Policy{Keys: true})
	// The worker's own client: the runtime channel, and HTTP over TCP.
	rep := reporter(b, h, h.Runtime().Socket(), "exec_bench")
	repTCP := reporter(b, h, "", "exec_tcp")
	ctx := context.Background()
	const round = 50
	n := max(b.N, 2*round) // enough events for a rate even with -benchtime 1x
	var tRuntime, tBare, tDirect, tTCP time.Duration
	b.ResetTimer()
	for done := 0; done < n; done += round {
		k := min(round, n-done)
		start := time.Now()
		for range k {
			if err := rep.Event(ctx, finished(1)); err != nil {
				b.Fatal(err)
			}
		}
		tRuntime += time.Since(start)
		b.StopTimer()
		start = time.Now()
		for range k {
			if err := bare.append(data); err != nil {
				b.Fatal(err)
			}
		}
		tBare += time.Since(start)
		// The host's record alone, without HTTP, to split the difference.
		start = time.Now()
		for range k {
			if _, err := h.record("exec_direct", finished(1), nil); err != nil {
				b.Fatal(err)
			}
		}
		tDirect += time.Since(start)
		// The same requests over TCP, to split the socket's share.
		start = time.Now()
		for range k {
			if err := repTCP.Event(ctx, finished(1)); err != nil {
				b.Fatal(err)
			}
		}
		tTCP += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(tBare)/float64(tTCP), "runtime-tcp/bare")
	b.ReportMetric(float64(len(data)), "event-bytes")
	b.ReportMetric(rate(n, tRuntime), "runtime-events/s")
	b.ReportMetric(rate(n, tBare), "bare-events/s")
	b.ReportMetric(rate(n, tDirect), "record-events/s")
	b.ReportMetric(float64(tBare)/float64(tRuntime), "runtime/bare")
	b.ReportMetric(float64(tBare)/float64(tDirect), "record/bare")
}

// BenchmarkRecordConcurrent compares 64 executions appending at once, each
// from its own goroutine like 64 workers, with one execution appending
// alone, in alternating rounds; every event is acknowledged only after the
// commit that holds it. Group commit folds the concurrent events into
// shared fsyncs. One op is one event of the 64; the metrics are both rates
// and their ratio.
func BenchmarkRecordConcurrent(b *testing.B) {
	const workers = 64
	h := benchHost(b)
	for w := range workers {
		benchWorker(b, h, fmt.Sprintf("exec_bench%02d", w), history.Policy{Keys: true})
	}
	benchWorker(b, h, "exec_single", history.Policy{Keys: true})
	// Each execution reports through the worker's own client, with
	// connections of its own as a worker process has.
	single := reporter(b, h, h.Runtime().Socket(), "exec_single")
	many := make([]*agent.Reporter, workers)
	for w := range many {
		many[w] = reporter(b, h, h.Runtime().Socket(), fmt.Sprintf("exec_bench%02d", w))
	}
	ctx := context.Background()
	// A round is 50 events alone, then 64 x 10 events at once.
	const alone, each = 50, 10
	rounds := max(1, (b.N+workers*each-1)/(workers*each))
	var tSingle, tMany time.Duration
	var nMany atomic.Int64
	b.ResetTimer()
	for range rounds {
		b.StopTimer()
		start := time.Now()
		for range alone {
			if err := single.Event(ctx, finished(1)); err != nil {
				b.Fatal(err)
			}
		}
		tSingle += time.Since(start)
		b.StartTimer()
		start = time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if err := many[w].Event(ctx, finished(1)); err != nil {
						b.Error(err)
						return
					}
					nMany.Add(1)
				}
			}()
		}
		wg.Wait()
		tMany += time.Since(start)
	}
	b.StopTimer()
	rs, rm := rate(rounds*alone, tSingle), rate(int(nMany.Load()), tMany)
	b.ReportMetric(rs, "single-events/s")
	b.ReportMetric(rm, "concurrent64-events/s")
	b.ReportMetric(rm/rs, "concurrent/single")

	// The same through the host's record alone, without HTTP: the ceiling
	// group commit reaches when the requests cost no CPU.
	var tds, tdm time.Duration

	for range rounds {
		start := time.Now()
		for range alone {
			if _, err := h.record("exec_single", finished(1), nil); err != nil {
				b.Fatal(err)
			}
		}
		tds += time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if _, err := h.record(fmt.Sprintf("exec_bench%02d", w), finished(1), nil); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		tdm += time.Since(start)
	}
	ds, dm := rate(rounds*alone, tds), rate(rounds*workers*each, tdm)
	b.ReportMetric(dm/ds, "record-concurrent/single")
}

// --- the article's approach ------------------------------------------------

// articleState is the article's state.json: the outbox, the key store and
// the journal in one object, rewritten whole on every save.
type articleState struct {
	Outbox  []articleMessage  `json:"outbox"`
	Keys    map[string]string `json:"keys"`
	Journal map[string]string `json:"journal"`
}

type articleMessage struct {
	ID string `json:"id"`
	To string `json:"to"`
}

// save is the article's save(), json.dump(s, open(STATE, "w"), indent=1),
// with the fsync it needs to survive a crash.
func (s *articleState) save(path string) error {
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// step is the article's safe mode for one step: deliver with a key (save),
// then record the result in the journal (save).
func (s *articleState) step(path string, i int) error {
	key, id := fmt.Sprintf("ik_%08x", i), fmt.Sprintf("msg_%06x", i)
	s.Outbox = append(s.Outbox, articleMessage{ID: id, To: "jordan@acme.dev"})
	s.Keys[key] = id
	if err := s.save(path); err != nil {
		return err
	}
	s.Journal[fmt.Sprintf("exec_%d/step-4", i)] = id
	return s.save(path)
}

func newArticleState(n int) *articleState {
	s := &articleState{Keys: make(map[string]string, n), Journal: make(map[string]string, n)}
	for i := range n {
		key, id := fmt.Sprintf("ik_%08x", i), fmt.Sprintf("msg_%06x", i)
		s.Outbox = append(s.Outbox, articleMessage{ID: id, To: "jordan@acme.dev"})
		s.Keys[key] = id
		s.Journal[fmt.Sprintf("exec_%d/step-4", i)] = id
	}
	return s
}

// preload gives the host n recorded steps of n executions: a delivered
// message with its stored key, the journal record and its event, written
// as the world and the runtime write them, in large transactions.
func preload(b *testing.B, h *Host, n int) {
	b.Helper()
	now := h.clock.Now()
	const batch = 5000
	for from := 0; from < n; from += batch {
		err := h.db.Update(func(tx *store.Tx) error {
			for i := from; i < min(from+batch, n); i++ {
				id := fmt.Sprintf("exec_%07d", i)
				body := fmt.Appendf(nil, `{"to":"jordan@acme.dev","subject":"Invoice %d","body":"…"}`, i)
				key := fmt.Sprintf("ik_%032x", i)
				reply, err := world.Apply(tx, world.Call{Service: world.ServiceMail, Method: http.MethodPost, Path: "/v1/send",
					Body: body, Key: key, Dedupe: true, Now: now,
					Attribution: world.Attribution{Execution: id, Step: "step-4", Attempt: 1, Run: 1}})
				if err != nil {
					return err
				}
				rec, err := json.Marshal(history.JournalRecord{Step: "step-4", Tool: "send_invoice_email", Key: key,
					Attempt: 1, Run: 1, Result: reply.Body, Recorded: now})
				if err != nil {
					return err
				}
				if err := tx.PutJournal(id, "step-4", rec); err != nil {
					return err
				}
				ev := history.Event{Type: history.StepRecorded, Time: now, Run: 1, Step: "step-4", Tool: "send_invoice_email",
					Key: key, Attempt: 1, Result: reply.Body}
				if _, err := tx.AppendEvent(id, func(seq uint64) ([]byte, error) { ev.Seq = seq; return history.Encode(ev) }); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// retrylabStep is the same step through retrylab, as a worker makes it: the
// keyed send to the mail API (the key claimed, then the effect and the
// stored response committed together), then the journal PUT to the runtime
// (the record and its StepRecorded event in one commit).
func retrylabStep(c *client, exec string, i int) error {
	key := fmt.Sprintf("ik_bench%024x", i)
	step := fmt.Sprintf("step-%d", i)
	resp, err := c.do(http.MethodPost, c.h.Providers().MailURL()+"/v1/send",
		fmt.Appendf(nil, `{"to":"jordan@acme.dev","subject":"Bench invoice %d","body":"…"}`, i),
		map[string]string{world.HeaderIdempotencyKey: key, world.HeaderExecution: exec, world.HeaderStep: step,
			world.HeaderAttempt: "1", world.HeaderRun: "1"})
	if err != nil {
		return err
	}
	rec, err := json.Marshal(history.JournalRecord{Tool: "send_invoice_email", Key: key, Attempt: 1, Result: resp})
	if err != nil {
		return err
	}
	return c.runtime(http.MethodPut, exec, "/journal/"+step, rec)
}

// BenchmarkRecordedStep sets the article's approach (the whole state
// rewritten to one JSON file, with fsync, on each of a step's two saves)
// beside retrylab's (a keyed send and a journal write through the APIs), on
// stores already holding the given number of recorded steps. They alternate
// step by step in one run. One op is one step of each; the metrics are the
// time of each and the ratio.
func BenchmarkRecordedStep(b *testing.B) {
	sizes := []int{1000, 10000}
	if benchFull() {
		sizes = []int{10000, 100000}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			h := benchHost(b)
			preload(b, h, n)
			benchWorker(b, h, "exec_bench", history.Policy{Keys: true, Journal: true})
			c := newClient(b, h)
			state := newArticleState(n)
			path := filepath.Join(b.TempDir(), "state.json")
			if err := state.save(path); err != nil {
				b.Fatal(err)
			}
			var ta, tr []time.Duration
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := state.step(path, n+i); err != nil {
					b.Fatal(err)
				}
				ta = append(ta, time.Since(start))
				start = time.Now()
				if err := retrylabStep(c, "exec_bench", i); err != nil {
					b.Fatal(err)
				}
				tr = append(tr, time.Since(start))
			}
			b.StopTimer()
			ma, mr := medianDur(ta), medianDur(tr)
			b.ReportMetric(float64(ma)/1e6, "article-ms/step")
			b.ReportMetric(float64(mr)/1e6, "retrylab-ms/step")
			b.ReportMetric(float64(ma)/float64(mr), "article/retrylab")
			if info, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(info.Size())/(1<<20), "state.json-MB")
			}
		})
	}
}

func medianDur(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// --- the worker's whole path -----------------------------------------------

// benchRun makes execution id live for one run of scenario name, as
// launch does, without starting a process: the bench plays the run with
// the worker's own code (agent.Run) in this process.
func benchRun(b *testing.B, h *Host, id, name string) {
	b.Helper()
	scn, err := h.catalog.Get(name)
	if err != nil {
		b.Fatal(err)
	}
	policy := history.Policy{Keys: scn.Policy.Keys, Journal: scn.Policy.Journal}
	benchWorker(b, h, id, policy)
	h.mu.Lock()
	h.execs[id].scn = scn
	h.mu.Unlock()
	h.configureWorld(id, scn)
}

// playRuns plays the runs of the given executions with the worker's code,
// all at once, each with its own worker's clients (the runtime channel on
// the host's socket, as its workers reach it).
func playRuns(b *testing.B, h *Host, clients []*agent.Clients, ids []string) {
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = clients[i].Run(context.Background(), h.Runtime().URL(), id, 1, h.token)
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			b.Fatalf("run of %s: %v", id, errs[i])
		}
	}
}

// countEvents is how many events the histories of ids hold, read after
// the timed runs (the bare loop reads nothing back either).
func countEvents(b *testing.B, h *Host, ids []string) int {
	n := 0
	for _, id := range ids {
		evs, err := h.Events(id, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		n += len(evs)
	}
	return n
}

// BenchmarkRecordWorker records whole executions through the worker's path:
// the worker's own code (agent.Run, in this process rather than a child)
// plays the fixture one-send under keys+journal against a real host: plan,
// journal read, the attempt (with the turn and the call it reported before,
// one commit), the keyed send to the mail API (the effect and its
// EffectObserved, one commit), the journal write (with the attempt's
// answer, one commit) and the end (one commit), every one acknowledged
// after its fsync. In alternating rounds a bare bbolt loop writes the same
// number of events, one Update each, with the bytes the host stored. Then
// 64 executions at once against one at a time, through the same path, the
// 64 workers' clients dialled before the clock as the single one is. One
// op is one execution; the metrics are events per second and the ratios.
func BenchmarkRecordWorker(b *testing.B) {
	h := benchHostFS(b, fixtures.FS)
	bare := openBare(b)
	const round, conc = 10, 64
	// A worker's clients each, kept across runs as a worker process keeps
	// them.
	rt := make([]*agent.Clients, conc)
	for i := range rt {
		rt[i] = agent.NewClients(h.Runtime().Socket())
		b.Cleanup(rt[i].Close)
	}
	serial := 0
	fresh := func(k int) []string {
		ids := make([]string, k)
		for i := range ids {
			serial++
			ids[i] = fmt.Sprintf("exec_w%06d", serial)
			benchRun(b, h, ids[i], "one-send")
		}
		return ids
	}
	// The bytes the host stores for one execution, for the bare loop.
	ids := fresh(1)
	playRuns(b, h, rt, ids)
	var stored [][]byte
	if err := h.db.View(func(tx *store.Tx) error {
		return tx.Events(ids[0], 0, func(_ uint64, data []byte) bool {
			stored = append(stored, append([]byte(nil), data...))
			return true
		})
	}); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 2*round)
	var tWorker, tBare, tMany time.Duration
	var cpuWorker, cpuMany time.Duration // the process's CPU in the timed runs
	var evWorker, evBare, evMany, execMany int
	b.ResetTimer()
	for done := 0; done < n; done += round {
		k := min(round, n-done)
		b.StopTimer()
		ids := fresh(k)
		b.StartTimer()
		start, cpu := time.Now(), cputime.Process()
		for _, id := range ids {
			playRuns(b, h, rt, []string{id})
		}
		tWorker += time.Since(start)
		cpuWorker += cputime.Process() - cpu
		b.StopTimer()
		evWorker += countEvents(b, h, ids)
		start = time.Now()
		for i := range evWorker - evBare {
			if err := bare.append(stored[i%len(stored)]); err != nil {
				b.Fatal(err)
			}
		}
		tBare += time.Since(start)
		evBare = evWorker
		b.StartTimer()
	}
	b.StopTimer()
	// 64 executions at once. The single side's client played an execution
	// before its clock started (the stored bytes above); the 64 play one
	// each first too, untimed, as a worker process has dialled the host
	// and the mail API before its runs: otherwise the clock counted 63
	// dials of each and the first run's growth of 64 workers' goroutines,
	// in a phase of one round of 64 (448 events). Then as many executions
	// as the single side played, give or take a round.
	playRuns(b, h, rt, fresh(conc))
	for range max(1, n/conc) {
		ids := fresh(conc)
		start, cpu := time.Now(), cputime.Process()
		playRuns(b, h, rt, ids)
		tMany += time.Since(start)
		cpuMany += cputime.Process() - cpu
		evMany += countEvents(b, h, ids)
		execMany += len(ids)
	}
	rw, rb, rm := rate(evWorker, tWorker), rate(evBare, tBare), rate(evMany, tMany)
	b.ReportMetric(float64(evWorker)/float64(n), "events/execution")
	b.ReportMetric(rw, "worker-events/s")
	b.ReportMetric(rb, "bare-events/s")
	b.ReportMetric(rw/rb, "worker/bare")
	b.ReportMetric(rm, "worker64-events/s")
	b.ReportMetric(rm/rw, "worker64/single")
	// CPU of the whole process (worker, host, mail API, store) for one
	// execution: on this machine's 2 cores the 64 at once can reach at most
	// 2 s of CPU a second, so this bounds their rate whatever the commits do.
	b.ReportMetric(float64(cpuWorker.Microseconds())/float64(n), "cpu-µs/execution")
	b.ReportMetric(float64(cpuMany.Microseconds())/float64(max(execMany, 1)), "cpu-µs/execution64")
}
