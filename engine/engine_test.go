package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// TestMain lets the host start this very test binary as its workers.
func TestMain(m *testing.M) {
	agent.MainForTests()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

// The article's ids, as the fixtures fix them.
const (
	recipient  = "jordan@acme.dev"
	articleKey = "ik_a94a0b1d"
	safeExec   = "exec_01H8"
	naiveExec  = "exec_7K2Q"
	crashExec  = "exec_9F1Z"
	crmExec    = "exec_3C5R"
	emailStep  = "step-4"
	crmStep    = "step-5"
)

// offsetClock is the wall clock plus an offset the test moves forward, so a
// test can put a long gap into a history without waiting for it.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// openHost opens a host on a fresh database in t.TempDir(). At cleanup the
// database must pass the consistency check before the host closes.
func openHost(t *testing.T, clock engine.Clock) *engine.Host {
	t.Helper()
	return openHostAt(t, filepath.Join(t.TempDir(), "retrylab.db"), clock)
}

// openHostAt opens a host on path that serves the control API, checked
// and closed when the test ends.
func openHostAt(t *testing.T, path string, clock engine.Clock) *engine.Host {
	t.Helper()
	return openHostWith(t, engine.Config{DBPath: path, Clock: clock})
}

// openHostWith is openHostAt with cfg, the test's scenarios and the
// importers added.
func openHostWith(t *testing.T, cfg engine.Config) *engine.Host {
	t.Helper()
	cfg.Scenarios, cfg.Imports = testrun.QuickTimeouts(t, fixtures.FS), all.Registry()
	h, err := engine.Open(cfg)
	if err != nil {
		t.Fatalf("open host: %v", err)
	}
	// Served, as the CLI's host is, so that tests can attach to it.
	if _, err := control.Serve(h); err != nil {
		h.Close()
		t.Fatalf("serve the control API: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Store().Check(); err != nil {
			t.Errorf("database check: %v", err)
		}
		if err := h.Close(); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	return h
}

// played is one run as a subscriber saw it.
type played struct {
	run     *engine.Run
	res     engine.RunResult
	notices []notice.Notice
	lines   []string // the narration, as `retrylab run` prints it
}

// play starts a run, waits for its end and collects what was published.
// The subscription starts before the run, so nothing is missed; every
// event of the run is published before Done closes.
func play(t *testing.T, h *engine.Host, start func() (*engine.Run, error)) played {
	t.Helper()
	ch, stop := h.Subscribe(1 << 14)
	defer stop()
	run, err := start()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	// A guard against a hung worker, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatalf("run of %s did not end: %v", run.Execution, err)
	}
	p := played{run: run, res: res}
	n := narrate.New(run.Execution)
	for drained := false; !drained; {
		select {
		case no, ok := <-ch:
			if !ok {
				drained = true
				break
			}
			if no.Lagged {
				t.Fatalf("subscriber lagged")
			}
			p.notices = append(p.notices, no)
			p.lines = append(p.lines, n.Lines(no)...)
		default:
			drained = true
		}
	}
	return p
}

func start(t *testing.T, h *engine.Host, name string) played {
	t.Helper()
	return play(t, h, func() (*engine.Run, error) { return h.Start(name, engine.RunOptions{}) })
}

// restart runs a scenario's own execution again (run --restart).
func restart(t *testing.T, h *engine.Host, name string) played {
	t.Helper()
	return play(t, h, func() (*engine.Run, error) { return h.Start(name, engine.RunOptions{Restart: true}) })
}

func resume(t *testing.T, h *engine.Host, id string) played {
	t.Helper()
	return play(t, h, func() (*engine.Run, error) { return h.Resume(id) })
}

func events(t *testing.T, h *engine.Host, id string) []history.Event {
	t.Helper()
	evs, err := h.Events(id, 0, 0)
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	return evs
}

// pick selects the events of one type, of one run (0: any) and step ("": any).
func pick(evs []history.Event, typ history.Type, run int, step string) []history.Event {
	var out []history.Event
	for _, ev := range evs {
		if ev.Type == typ && (run == 0 || ev.Run == run) && (step == "" || ev.Step == step) {
			out = append(out, ev)
		}
	}
	return out
}

func outbox(t *testing.T, h *engine.Host) []world.Message {
	t.Helper()
	msgs, err := h.Providers().Outbox()
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	return msgs
}

func wantStatus(t *testing.T, p played, status history.Status, code int) {
	t.Helper()
	if p.res.Err != nil || p.res.Status != status || p.res.ExitCode != code {
		t.Fatalf("run %d of %s ended %+v, want status %s exit %d", p.run.Number, p.run.Execution, p.res, status, code)
	}
}

func wantLine(t *testing.T, lines []string, want string) {
	t.Helper()
	for _, l := range lines {
		if strings.Contains(l, want) {
			return
		}
	}
	t.Errorf("no narration line contains %q; narration:\n%s", want, strings.Join(lines, "\n"))
}

func noLine(t *testing.T, lines []string, unwanted string) {
	t.Helper()
	for _, l := range lines {
		if strings.Contains(l, unwanted) {
			t.Errorf("narration line %q contains %q", l, unwanted)
		}
	}
}

// messageID reads "message_id" from a JSON result.
func messageID(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		MessageID    string `json:"message_id"`
		Deduplicated bool   `json:"deduplicated"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r.MessageID
}

func deduplicated(t *testing.T, raw json.RawMessage) bool {
	t.Helper()
	var r struct {
		Deduplicated *bool `json:"deduplicated"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Deduplicated == nil {
		t.Fatalf("result %s has no deduplicated field (%v)", raw, err)
	}
	return *r.Deduplicated
}

func wantOutbox(t *testing.T, msgs []world.Message, n int) {
	t.Helper()
	if len(msgs) != n {
		t.Fatalf("outbox holds %d messages, want %d: %+v", len(msgs), n, msgs)
	}
	for _, m := range msgs {
		if m.To != recipient || m.Subject != "Your June invoice" {
			t.Errorf("unexpected message %+v", m)
		}
	}
}

// Done-when 1: the response is lost after the mail API delivered; the retry
// delivers again; the trace is green and the outbox holds two.
func TestNaiveTimeoutDuplicates(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	p := start(t, h, "naive")
	wantStatus(t, p, history.StatusCompleted, 0)
	if p.run.Execution != naiveExec || p.run.Number != 1 {
		t.Fatalf("run = %s #%d", p.run.Execution, p.run.Number)
	}

	evs := events(t, h, naiveExec)
	started := pick(evs, history.AttemptStarted, 1, emailStep)
	finished := pick(evs, history.AttemptFinished, 1, emailStep)
	if len(started) != 2 || len(finished) != 2 {
		t.Fatalf("%d attempts started, %d finished; want 2 and 2", len(started), len(finished))
	}
	for i, ev := range started {
		if ev.Attempt != i+1 || ev.Key != "" {
			t.Errorf("attempt %d: started %+v, want attempt %d without a key", i+1, ev, i+1)
		}
	}
	if f := finished[0]; f.Outcome != history.OutcomeTimeout || f.Response != nil {
		t.Errorf("attempt 1 finished %s (response %v), want timeout with no response", f.Outcome, f.Response)
	}
	if f := finished[1]; f.Outcome != history.OutcomeOK || f.Deduplicated {
		t.Errorf("attempt 2 finished %s deduplicated=%v, want ok and not deduplicated", f.Outcome, f.Deduplicated)
	}
	if fi := pick(evs, history.FaultInjected, 1, emailStep); len(fi) != 1 || fi[0].Fault != string(fault.TimeoutAfterEffect) || fi[0].Attempt != 1 {
		t.Errorf("fault injections %+v, want one timeout-after-effect on attempt 1", fi)
	}
	if n := len(pick(evs, history.RetryScheduled, 1, emailStep)); n != 1 {
		t.Errorf("%d retries scheduled, want 1", n)
	}
	if n := len(pick(evs, history.ExecutionCompleted, 1, "")); n != 1 {
		t.Errorf("%d ExecutionCompleted, want 1", n)
	}

	// The provider's truth: two messages, one per attempt.
	msgs := outbox(t, h)
	wantOutbox(t, msgs, 2)
	for i, m := range msgs {
		at := m.Attribution
		if at.Execution != naiveExec || at.Step != emailStep || at.Attempt != i+1 || at.Key != "" {
			t.Errorf("message %d attributed to %+v, want %s %s attempt %d without key", i, at, naiveExec, emailStep, i+1)
		}
	}
	if msgs[0].ID == msgs[1].ID {
		t.Errorf("both messages have id %s", msgs[0].ID)
	}
	if got := messageID(t, finished[1].Response.Body); got != msgs[1].ID {
		t.Errorf("attempt 2 answered %s, outbox has %s", got, msgs[1].ID)
	}
	if n := h.Providers().MailRequests(naiveExec); n != 2 {
		t.Errorf("mail API saw %d requests, want 2", n)
	}

	// The narration says so.
	wantLine(t, p.lines, "[mail-api]  delivered id="+msgs[0].ID+" to "+recipient)
	wantLine(t, p.lines, "[mail-api]  delivered id="+msgs[1].ID+" to "+recipient)
	wantLine(t, p.lines, "✖ attempt 1: timeout after")
	wantLine(t, p.lines, "✓ attempt 2: 200 OK id="+msgs[1].ID)
	wantLine(t, p.lines, "retrying in 50ms (attempt 2/3)")
	wantLine(t, p.lines, "execution completed")
	sum := narrate.OutboxSummary(msgs, naiveExec)
	if want := "[mail-api]  outbox for jordan@acme.dev: 2 messages   ← duplicate send"; len(sum) != 1 || sum[0] != want {
		t.Errorf("outbox summary %q, want %q", sum, want)
	}
}

// Done-when 2: the worker is killed after the delivery; resuming runs the
// step again, because nothing recorded that it ran.
func TestCrashThenResumeDuplicates(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	p := start(t, h, "crash")
	wantStatus(t, p, history.StatusKilled, engine.ExitKilled)
	evs := events(t, h, crashExec)
	crashed := pick(evs, history.WorkerCrashed, 1, "")
	if len(crashed) != 1 || crashed[0].ExitCode != 137 || crashed[0].Fault != string(fault.CrashAfterEffect) {
		t.Fatalf("WorkerCrashed events %+v, want one with exit 137 and fault crash-after-effect", crashed)
	}
	if n := len(pick(evs, history.AttemptFinished, 0, "")); n != 0 {
		t.Errorf("%d attempts finished before the crash, want none", n)
	}
	if x, err := h.Execution(crashExec); err != nil || x.Status != history.StatusKilled {
		t.Fatalf("execution %+v (%v), want killed", x, err)
	}
	wantOutbox(t, outbox(t, h), 1)
	wantLine(t, p.lines, "✖ killed (exit 137) — delivery happened, result never recorded")

	r := resume(t, h, "")
	wantStatus(t, r, history.StatusCompleted, 0)
	if r.run.Execution != crashExec || r.run.Number != 2 {
		t.Fatalf("resume ran %s #%d, want %s #2", r.run.Execution, r.run.Number, crashExec)
	}
	evs = events(t, h, crashExec)
	again := pick(evs, history.AttemptStarted, 2, emailStep)
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("run 2 attempts %+v, want the step to run again as attempt 2", again)
	}
	if n := len(pick(evs, history.StepReplayed, 0, "")); n != 0 {
		t.Errorf("%d steps replayed without a journal", n)
	}
	msgs := outbox(t, h)
	wantOutbox(t, msgs, 2)
	if at := msgs[1].Attribution; at.Run != 2 || at.Attempt != 2 {
		t.Errorf("second message attributed to %+v, want run 2 attempt 2", at)
	}
	x, err := h.Execution(crashExec)
	if err != nil || x.Status != history.StatusCompleted || x.Runs != 2 {
		t.Fatalf("execution %+v (%v), want completed after 2 runs", x, err)
	}
	if _, err := h.Resume(""); err == nil {
		t.Errorf("resume with every execution finished succeeded")
	}
}

// safeFirstRun is the first run of `safe`: the key absorbs the retry.
func safeFirstRun(t *testing.T, h *engine.Host) (msgID string) {
	t.Helper()
	p := start(t, h, "safe")
	wantStatus(t, p, history.StatusCompleted, 0)
	evs := events(t, h, safeExec)
	started := pick(evs, history.AttemptStarted, 1, emailStep)
	finished := pick(evs, history.AttemptFinished, 1, emailStep)
	if len(started) != 2 || len(finished) != 2 {
		t.Fatalf("%d attempts started, %d finished; want 2 and 2", len(started), len(finished))
	}
	for _, ev := range started {
		if ev.Key != articleKey || ev.Request == nil || ev.Request.Headers["Idempotency-Key"] != articleKey {
			t.Errorf("attempt %d carried key %q (request %+v), want %s", ev.Attempt, ev.Key, ev.Request, articleKey)
		}
	}
	if f := finished[0]; f.Outcome != history.OutcomeTimeout || f.Key != articleKey {
		t.Errorf("attempt 1: %s key %q, want a timeout carrying %s", f.Outcome, f.Key, articleKey)
	}
	f := finished[1]
	if f.Outcome != history.OutcomeOK || !f.Deduplicated || f.Response == nil {
		t.Fatalf("attempt 2: %s deduplicated=%v, want the stored response", f.Outcome, f.Deduplicated)
	}
	if f.Response.Headers["Idempotent-Replayed"] != "true" || !deduplicated(t, f.Response.Body) {
		t.Errorf("attempt 2 response %+v %s, want Idempotent-Replayed and deduplicated: true", f.Response.Headers, f.Response.Body)
	}
	msgs := outbox(t, h)
	wantOutbox(t, msgs, 1)
	msgID = msgs[0].ID
	if got := messageID(t, f.Response.Body); got != msgID {
		t.Errorf("attempt 2 got message %s, want the first one, %s", got, msgID)
	}
	if at := msgs[0].Attribution; at.Attempt != 1 || at.Key != articleKey {
		t.Errorf("message attributed to %+v, want attempt 1 with %s", at, articleKey)
	}

	// The journal records the step.
	rec := pick(evs, history.StepRecorded, 1, emailStep)
	if len(rec) != 1 || messageID(t, rec[0].Result) != msgID {
		t.Fatalf("StepRecorded %+v, want one holding %s", rec, msgID)
	}
	j, err := h.Journal(safeExec)
	if err != nil || len(j) != 1 || j[0].Step != emailStep || j[0].Key != articleKey || j[0].Run != 1 || messageID(t, j[0].Result) != msgID {
		t.Fatalf("journal %+v (%v), want the step's record with %s", j, err, msgID)
	}
	k, ok, err := engine.WorldOf(h).LookupKey(articleKey)
	if err != nil || !ok || k.InFlight || k.Ref != msgID || k.Status != 200 {
		t.Fatalf("key store holds %+v %v (%v), want %s -> %s", k, ok, err, articleKey, msgID)
	}
	if n := h.Providers().MailRequests(safeExec); n != 2 {
		t.Errorf("mail API saw %d requests, want 2", n)
	}
	wantLine(t, p.lines, "POST /v1/send  Idempotency-Key: "+articleKey)
	wantLine(t, p.lines, "duplicate Idempotency-Key "+articleKey+" — returning original result, no send")
	wantLine(t, p.lines, "✓ attempt 2: 200 OK id="+msgID+"  deduplicated: true (Idempotent-Replayed)")
	wantLine(t, p.lines, "[journal]   recorded step-4 = id="+msgID)
	return msgID
}

// Done-when 3: the key absorbs the retry; running again, the journal
// answers and no request reaches the mail API.
func TestSafeKeyThenJournal(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	msgID := safeFirstRun(t, h)

	p := restart(t, h, "safe")
	wantStatus(t, p, history.StatusCompleted, 0)
	if p.run.Number != 2 {
		t.Fatalf("second start was run %d, want run 2 of the same execution", p.run.Number)
	}
	evs := events(t, h, safeExec)
	if n := len(pick(evs, history.AttemptStarted, 2, "")); n != 0 {
		t.Errorf("run 2 started %d attempts, want none", n)
	}
	if n := len(pick(evs, history.ToolCallScheduled, 2, "")); n != 0 {
		t.Errorf("run 2 scheduled %d tool calls, want none", n)
	}
	rep := pick(evs, history.StepReplayed, 2, emailStep)
	if len(rep) != 1 || rep[0].ResultRun != 1 || messageID(t, rep[0].Result) != msgID {
		t.Fatalf("run 2 replays %+v, want step-4 from run 1 with %s", rep, msgID)
	}
	if n := h.Providers().MailRequests(safeExec); n != 2 {
		t.Errorf("mail API saw %d requests in all, want still 2: the rerun must send none", n)
	}
	for _, no := range p.notices {
		if no.Activity != nil && no.Activity.Service == world.ServiceMail {
			t.Errorf("the mail API was active during run 2: %+v", *no.Activity)
		}
	}
	wantOutbox(t, outbox(t, h), 1)
	wantLine(t, p.lines, "step-4 already has a recorded result (id="+msgID+", run 1) — skipping tool call")
	noLine(t, p.lines, "[tool]")
}

// Done-when 4: with the journal record deleted, the key alone holds.
func TestSafeKeyAloneAfterJournalDelete(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	msgID := safeFirstRun(t, h)
	wantStatus(t, restart(t, h, "safe"), history.StatusCompleted, 0)

	if err := h.DeleteJournal(safeExec, emailStep); err != nil {
		t.Fatalf("delete journal: %v", err)
	}
	if err := h.DeleteJournal(safeExec, emailStep); err == nil {
		t.Errorf("deleting a missing journal record succeeded")
	}
	if err := h.DeleteJournal("exec_NOPE", emailStep); err == nil {
		t.Errorf("deleting the journal of a missing execution succeeded")
	}
	if j, err := h.Journal(safeExec); err != nil || len(j) != 0 {
		t.Fatalf("journal after delete %+v (%v)", j, err)
	}

	p := restart(t, h, "safe")
	wantStatus(t, p, history.StatusCompleted, 0)
	evs := events(t, h, safeExec)
	if n := len(pick(evs, history.JournalDeleted, 0, emailStep)); n != 1 {
		t.Errorf("%d JournalDeleted events, want 1", n)
	}
	if n := len(pick(evs, history.StepReplayed, 3, "")); n != 0 {
		t.Errorf("run 3 replayed %d steps with no journal record", n)
	}
	started := pick(evs, history.AttemptStarted, 3, emailStep)
	finished := pick(evs, history.AttemptFinished, 3, emailStep)
	if len(started) != 1 || started[0].Key != articleKey || started[0].Attempt != 3 {
		t.Fatalf("run 3 attempts %+v, want one (attempt 3) carrying %s", started, articleKey)
	}
	if len(finished) != 1 || finished[0].Outcome != history.OutcomeOK || !finished[0].Deduplicated ||
		messageID(t, finished[0].Response.Body) != msgID {
		t.Fatalf("run 3 finished %+v, want the stored response with %s", finished, msgID)
	}
	if n := h.Providers().MailRequests(safeExec); n != 3 {
		t.Errorf("mail API saw %d requests, want 3 (one more, answered from the key store)", n)
	}
	wantOutbox(t, outbox(t, h), 1)
	if rec := pick(evs, history.StepRecorded, 3, emailStep); len(rec) != 1 {
		t.Errorf("run 3 recorded %d results, want the step recorded again", len(rec))
	}
	wantLine(t, p.lines, "deduplicated: true")
	sum := narrate.OutboxSummary(outbox(t, h), safeExec)
	if want := "[mail-api]  outbox for jordan@acme.dev: 1 message"; len(sum) != 1 || sum[0] != want {
		t.Errorf("outbox summary %q, want %q", sum, want)
	}
}

// Done-when 5: a crash between the two steps; the resume replays the email
// from the journal, writes the CRM once with the email's message id, and
// the history shows the gap while no worker ran.
func TestInvoiceCRMResumeReplaysFromJournal(t *testing.T) {
	t.Parallel()
	clock := &offsetClock{}
	h := openHost(t, clock)
	p := start(t, h, "invoice-crm")
	wantStatus(t, p, history.StatusKilled, engine.ExitKilled)
	evs := events(t, h, crmExec)
	if rec := pick(evs, history.StepRecorded, 1, emailStep); len(rec) != 1 {
		t.Fatalf("the email step was recorded %d times before the crash, want 1", len(rec))
	}
	if n := len(pick(evs, history.ToolCallScheduled, 0, crmStep)); n != 0 {
		t.Fatalf("the CRM step was scheduled before the crash")
	}
	if c := pick(evs, history.WorkerCrashed, 1, ""); len(c) != 1 || c[0].Fault != string(fault.CrashAfterRecord) {
		t.Fatalf("crashes %+v, want one crash-after-record", c)
	}
	msgs := outbox(t, h)
	wantOutbox(t, msgs, 1)
	if recs, err := h.Providers().Records(); err != nil || len(recs) != 0 {
		t.Fatalf("CRM before resume: %+v (%v), want empty", recs, err)
	}

	// No worker runs for a minute and a half, by the host's clock.
	const gap = 90 * time.Second
	clock.Advance(gap)

	r := resume(t, h, crmExec)
	wantStatus(t, r, history.StatusCompleted, 0)
	evs = events(t, h, crmExec)
	if n := len(pick(evs, history.AttemptStarted, 2, emailStep)); n != 0 {
		t.Errorf("run 2 sent the email step %d times, want a replay", n)
	}
	rep := pick(evs, history.StepReplayed, 2, emailStep)
	if len(rep) != 1 || rep[0].ResultRun != 1 || messageID(t, rep[0].Result) != msgs[0].ID {
		t.Fatalf("replays %+v, want step-4 from run 1 with %s", rep, msgs[0].ID)
	}
	if a := pick(evs, history.AttemptStarted, 0, crmStep); len(a) != 1 || a[0].Run != 2 {
		t.Fatalf("CRM attempts %+v, want exactly one, in run 2", a)
	}
	wantOutbox(t, outbox(t, h), 1)
	if n := h.Providers().MailRequests(crmExec); n != 1 {
		t.Errorf("mail API saw %d requests, want 1", n)
	}
	recs, err := h.Providers().Records()
	if err != nil || len(recs) != 1 || recs[0].ID != "inv_0611" {
		t.Fatalf("CRM holds %+v (%v), want inv_0611", recs, err)
	}
	if got := recs[0].Fields["message_id"]; got != msgs[0].ID {
		t.Errorf("CRM record points at message %v, want the email's %s", got, msgs[0].ID)
	}
	if w, err := h.Providers().CRMWrites(0, 0); err != nil || len(w) != 1 {
		t.Errorf("CRM write log %+v (%v), want one write", w, err)
	}

	// The gap: the crash of run 1, then the start of run 2, 90 s later.
	crashAt, startAt := -1, -1
	for i, ev := range evs {
		switch {
		case ev.Type == history.WorkerCrashed && ev.Run == 1:
			crashAt = i
		case ev.Type == history.WorkerStarted && ev.Run == 2:
			startAt = i
		}
	}
	if crashAt < 0 || startAt < crashAt {
		t.Fatalf("WorkerCrashed at %d, WorkerStarted of run 2 at %d: want the crash first", crashAt, startAt)
	}
	if d := evs[startAt].Time.Sub(evs[crashAt].Time); d < gap {
		t.Errorf("history gap %v, want at least %v", d, gap)
	}
	wantLine(t, r.lines, "step-4 already has a recorded result (id="+msgs[0].ID+", run 1) — skipping tool call")
	wantLine(t, r.lines, "message_id="+msgs[0].ID)
}

// An execution left "running" by a host that died is marked killed by the
// next host, and resume finishes it.
func TestOrphanMarkedKilledAndResumed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	// What a host killed in the middle of a run leaves behind: the record
	// says running, the history ends with the worker's start.
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = db.Update(func(tx *store.Tx) error {
		rec, err := history.EncodeExecution(history.Execution{ID: safeExec, Scenario: "safe",
			Policy: history.Policy{Keys: true, Journal: true}, Status: history.StatusRunning, Runs: 1, Started: now, Updated: now})
		if err != nil {
			return err
		}
		if err := tx.PutExecution(safeExec, rec); err != nil {
			return err
		}
		for _, ev := range []history.Event{
			{Type: history.ExecutionStarted, Time: now, Run: 1, Scenario: "safe", Text: "keys+journal"},
			{Type: history.WorkerStarted, Time: now, Run: 1, PID: 1},
		} {
			if _, err := tx.AppendEvent(safeExec, func(seq uint64) ([]byte, error) {
				ev.Seq = seq
				return history.Encode(ev)
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	h := openHostAt(t, path, nil)
	x, err := h.Execution(safeExec)
	if err != nil || x.Status != history.StatusKilled {
		t.Fatalf("orphan after a new host opened: %+v (%v), want killed", x, err)
	}
	evs := events(t, h, safeExec)
	last := evs[len(evs)-1]
	if last.Type != history.WorkerCrashed || last.Run != 1 || last.ExitCode != 137 || !strings.Contains(last.Error, "host") {
		t.Fatalf("last event %+v, want WorkerCrashed of run 1 blaming the host", last)
	}
	if u, ok, err := h.LatestUnfinished(); err != nil || !ok || u.ID != safeExec {
		t.Fatalf("latest unfinished %+v %v (%v)", u, ok, err)
	}

	r := resume(t, h, "")
	wantStatus(t, r, history.StatusCompleted, 0)
	if r.run.Execution != safeExec || r.run.Number != 2 {
		t.Fatalf("resumed %s #%d, want %s #2", r.run.Execution, r.run.Number, safeExec)
	}
	wantOutbox(t, outbox(t, h), 1)
}

func TestServicesListenOnLoopback(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	for name, u := range map[string]string{"mail": h.Providers().MailURL(), "crm": h.Providers().CRMURL(), "runtime": h.Runtime().URL()} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("%s listens on %s, want 127.0.0.1", name, u)
		}
	}
	info, err := os.Stat(h.Store().Path())
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("database mode %o, want 600", mode)
	}
}

// Item 22.2: every start of a scenario is a new execution; its first is the
// scenario's own id (the article's exec_M4TX), the next get new ids, and
// Restart (run --restart) runs the scenario's own execution again.
func TestStartIsAFreshExecution(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		p := start(t, h, "one-send")
		wantStatus(t, p, history.StatusCompleted, 0)
		if i == 0 && p.run.Execution != "exec_M4TX" {
			t.Fatalf("the first start is %s, want the scenario's exec_M4TX", p.run.Execution)
		}
		if ids[p.run.Execution] || p.run.Number != 1 {
			t.Fatalf("start %d: run %d of %s, want run 1 of a new execution (had %v)", i+1, p.run.Number, p.run.Execution, ids)
		}
		ids[p.run.Execution] = true
	}
	p := restart(t, h, "one-send")
	wantStatus(t, p, history.StatusCompleted, 0)
	if p.run.Execution != "exec_M4TX" || p.run.Number != 2 {
		t.Fatalf("restart: run %d of %s, want run 2 of exec_M4TX", p.run.Number, p.run.Execution)
	}
}

// Item 22.3: faults armed in a burst leave the last one armed; an armed
// fault that meets the scenario's plan on an attempt takes effect alone,
// and its record says which planned fault it replaced.
func TestArmedFaultTakesTheAttemptAlone(t *testing.T) {
	t.Parallel()
	h := openHost(t, nil)
	for _, p := range []fault.Point{fault.TimeoutAfterEffect, fault.CrashAfterRecord, fault.CrashAfterEffect} {
		h.Faults().Arm(p)
	}
	if got := h.Faults().Armed(); len(got) != 1 || got[0] != fault.CrashAfterEffect {
		t.Fatalf("armed after a burst: %v, want crash-after-effect alone", got)
	}
	p := start(t, h, "naive") // its plan: timeout-after-effect on attempt 1
	wantStatus(t, p, history.StatusKilled, engine.ExitKilled)
	inj := pick(events(t, h, "exec_7K2Q"), history.FaultInjected, 1, "step-4")
	if len(inj) != 1 || inj[0].Fault != string(fault.CrashAfterEffect) || inj[0].Plan != 0 {
		t.Fatalf("attempt 1 met %+v, want the armed crash-after-effect alone", inj)
	}
	if !strings.Contains(inj[0].Text, "instead of the scenario's planned timeout-after-effect") {
		t.Errorf("the record does not say what the armed fault replaced: %q", inj[0].Text)
	}
	wantLine(t, p.lines, "instead of the scenario's planned timeout-after-effect")
}
