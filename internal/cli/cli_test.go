package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

const (
	duplicateLine = "[mail-api]  outbox for jordan@acme.dev: 2 messages   ← duplicate send"
	singleLine    = "[mail-api]  outbox for jordan@acme.dev: 1 message"
)

var deliveredID = regexp.MustCompile(`\[mail-api\]  delivered id=(msg_[0-9a-f]+) to jordan@acme\.dev`)

// Done-when 1.
func TestCLIRunNaive(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, "reset")
	has(t, r, "reset "+db+": no executions, empty outbox, no keys, empty CRM")
	info, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("database mode %o, want 600", mode)
	}

	r = ok(t, db, "run", "naive")
	has(t, r,
		"[runtime]   execution exec_7K2Q started: scenario naive, policy none",
		"[fault]     timeout after the effect (response lost) on step-4 attempt 1",
		"[tool]      ✖ attempt 1: timeout after ",
		"[agent]     tool call failed, retrying in 50ms (attempt 2/3)",
		"[tool]      ✓ attempt 2: 200 OK id=",
		"[agent]     execution completed",
	)
	ids := deliveredID.FindAllStringSubmatch(r.stdout, -1)
	if len(ids) != 2 || ids[0][1] == ids[1][1] {
		t.Fatalf("want two deliveries with different ids\n%s", r)
	}
	// The timeout comes after the first delivery: the response was lost,
	// not the request.
	if strings.Index(r.stdout, ids[0][0]) > strings.Index(r.stdout, "✖ attempt 1: timeout") {
		t.Errorf("attempt 1 timed out before the mail API delivered\n%s", r)
	}
	has(t, r, "✓ attempt 2: 200 OK id="+ids[1][1])
	hasNot(t, r, "Idempotency-Key")
	if got := lastLine(r.stdout); got != duplicateLine {
		t.Errorf("last line %q, want %q", got, duplicateLine)
	}

	s := state(t, db)
	if len(s.Outbox) != 2 || s.Outbox[0].ID != ids[0][1] || s.Outbox[1].ID != ids[1][1] {
		t.Errorf("state outbox %+v, want the two narrated deliveries", s.Outbox)
	}
	o := ok(t, db, "outbox")
	has(t, o, ids[0][1]+" → jordan@acme.dev", "exec_7K2Q step-4 attempt 1", "exec_7K2Q step-4 attempt 2",
		"outbox for jordan@acme.dev: 2 messages   ← duplicate send")
}

// Done-when 2.
func TestCLIRunCrashThenResume(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "reset")
	r := must(t, 137, db, "run", "crash")
	if msg := oneLineError(t, r); msg != "retrylab: worker of exec_9F1Z was killed (exit 137); continue it with 'retrylab resume'" {
		t.Errorf("stderr %q", msg)
	}
	if ids := deliveredID.FindAllString(r.stdout, -1); len(ids) != 1 {
		t.Errorf("want one delivery before the crash\n%s", r)
	}
	has(t, r, "[agent]     ✖ killed (exit 137) — delivery happened, result never recorded")
	hasNot(t, r, "✓ attempt", "execution completed")
	if strings.Index(r.stdout, "delivered id=") > strings.Index(r.stdout, "✖ killed") {
		t.Errorf("killed before the delivery\n%s", r)
	}
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("last line %q, want %q", got, singleLine)
	}
	if s := state(t, db); len(s.Outbox) != 1 {
		t.Fatalf("outbox %d after the crash, want 1", len(s.Outbox))
	}

	r = ok(t, db, "resume")
	has(t, r, "[runtime]   run 2: worker started (pid ", "[tool]      POST /v1/send", "✓ attempt 2: 200 OK", "execution completed")
	if ids := deliveredID.FindAllString(r.stdout, -1); len(ids) != 1 {
		t.Errorf("the resumed step should deliver once more\n%s", r)
	}
	if got := lastLine(r.stdout); got != duplicateLine {
		t.Errorf("last line %q, want %q", got, duplicateLine)
	}
	sh := show(t, db, "exec_9F1Z")
	if sh.Execution.Status != "completed" || sh.Execution.Runs != 2 || sh.countEvents("AttemptStarted", 2, "step-4") != 1 {
		t.Errorf("history: %+v", sh.Execution)
	}
	msg := oneLineError(t, must(t, 1, db, "resume"))
	if !strings.Contains(msg, "nothing to resume") {
		t.Errorf("second resume: %q", msg)
	}
}

// Done-when 3 and 4.
func TestCLIRunSafeTwiceThenWithoutJournal(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "reset")

	// 3a: the key absorbs the retry.
	r := ok(t, db, "run", "safe")
	if n := count(r.stdout, "[tool]      POST /v1/send  Idempotency-Key: ik_a94a0b1d\n"); n != 2 {
		t.Errorf("%d attempts carried ik_a94a0b1d, want 2\n%s", n, r)
	}
	has(t, r, "[tool]      ✖ attempt 1: timeout after ",
		"[mail-api]  duplicate Idempotency-Key ik_a94a0b1d — returning original result, no send")
	ids := deliveredID.FindAllStringSubmatch(r.stdout, -1)
	if len(ids) != 1 {
		t.Fatalf("want exactly one delivery\n%s", r)
	}
	first := ids[0][1]
	has(t, r, "[tool]      ✓ attempt 2: 200 OK id="+first+"  deduplicated: true (Idempotent-Replayed)",
		"[journal]   recorded step-4 = id="+first)
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("last line %q, want %q", got, singleLine)
	}
	s := state(t, db)
	if len(s.Outbox) != 1 || s.Outbox[0].ID != first || s.Outbox[0].Attribution.Key != "ik_a94a0b1d" {
		t.Errorf("outbox %+v", s.Outbox)
	}
	if len(s.Keys) != 1 || s.Keys[0].Key != "ik_a94a0b1d" || s.Keys[0].Ref != first {
		t.Errorf("keys %+v", s.Keys)
	}
	if len(s.Journal) != 1 || s.Journal[0].Step != "step-4" || !strings.Contains(string(s.Journal[0].Result), first) {
		t.Errorf("journal %+v", s.Journal)
	}
	jl := ok(t, db, "journal", "list")
	has(t, jl, "exec_01H8 step-4 = id="+first+" (attempt 2, run 1, recorded ")

	// 3b: run again: the journal answers; not one request reaches the mail API.
	r = ok(t, db, "run", "safe")
	has(t, r, "[runtime]   run 2: worker started (pid ",
		"[journal]   step-4 already has a recorded result (id="+first+", run 1) — skipping tool call",
		"[agent]     execution completed")
	hasNot(t, r, "[tool]", "[fault]", "delivered id=", "Idempotency-Key")
	if n := count(r.stdout, "[mail-api]"); n != 1 {
		t.Errorf("the mail API said %d things, want only the outbox summary\n%s", n, r)
	}
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("last line %q, want %q", got, singleLine)
	}
	sh := show(t, db, "exec_01H8")
	if n := sh.countEvents("AttemptStarted", 2, ""); n != 0 {
		t.Errorf("run 2 has %d AttemptStarted events, want 0", n)
	}
	if n := sh.countEvents("StepReplayed", 2, "step-4"); n != 1 {
		t.Errorf("run 2 has %d StepReplayed events, want 1", n)
	}
	if s := state(t, db); len(s.Outbox) != 1 {
		t.Errorf("outbox %d, want 1", len(s.Outbox))
	}

	// 4: the article's exercise: delete the record, run again; the key holds.
	r = ok(t, db, "journal", "delete", "exec_01H8", "step-4")
	if r.stdout != "deleted the journal record of exec_01H8 step-4\n" {
		t.Errorf("journal delete said %q", r.stdout)
	}
	msg := oneLineError(t, must(t, 1, db, "journal", "delete", "exec_01H8", "step-4"))
	if msg != `retrylab: execution exec_01H8 has no journal record for step "step-4"` {
		t.Errorf("deleting again: %q", msg)
	}
	r = ok(t, db, "run", "safe")
	has(t, r, "[runtime]   run 3: worker started",
		"[tool]      POST /v1/send  Idempotency-Key: ik_a94a0b1d",
		"[mail-api]  duplicate Idempotency-Key ik_a94a0b1d — returning original result, no send",
		"✓ attempt 3: 200 OK id="+first+"  deduplicated: true",
		"[journal]   recorded step-4 = id="+first)
	hasNot(t, r, "delivered id=", "already has a recorded result")
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("last line %q, want %q", got, singleLine)
	}
	if s := state(t, db); len(s.Outbox) != 1 || len(s.Journal) != 1 {
		t.Errorf("outbox %d, journal %d; want 1 and 1", len(s.Outbox), len(s.Journal))
	}
	has(t, ok(t, db, "show", "exec_01H8"), "[journal]   record of step-4 deleted by hand")
}

// Done-when 5.
func TestCLIInvoiceCRMCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "reset")
	r := must(t, 137, db, "run", "invoice-crm")
	oneLineError(t, r)
	ids := deliveredID.FindAllStringSubmatch(r.stdout, -1)
	if len(ids) != 1 {
		t.Fatalf("want one delivery\n%s", r)
	}
	email := ids[0][1]
	has(t, r, "[journal]   recorded step-4 = id="+email, "[agent]     ✖ killed (exit 137) — after the result was recorded")
	hasNot(t, r, "step-5", "[crm]")

	// A real pause, long enough for `show` to point out the gap. It is
	// the subject of an assertion, not a way to wait for something.
	time.Sleep(1100 * time.Millisecond)

	r = ok(t, db, "resume")
	has(t, r, "[journal]   step-4 already has a recorded result (id="+email+", run 1) — skipping tool call",
		"[agent]     step-5: record_invoice(id=inv_0611, customer=jordan@acme.dev, invoice=June, message_id="+email+")",
		"[tool]      PUT /v1/records/inv_0611",
		"[crm]       upsert: created inv_0611",
		"[agent]     execution completed")
	hasNot(t, r, "delivered id=", "POST /v1/send")
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("last line %q, want %q", got, singleLine)
	}

	s := state(t, db)
	if len(s.Outbox) != 1 || len(s.CRM) != 1 {
		t.Fatalf("outbox %d, CRM %d; want 1 and 1", len(s.Outbox), len(s.CRM))
	}
	if got := s.CRM[0].Fields["message_id"]; s.CRM[0].ID != "inv_0611" || got != email {
		t.Errorf("CRM record %+v, want inv_0611 pointing at %s", s.CRM[0], email)
	}

	sh := show(t, db, "exec_3C5R")
	if n := sh.countEvents("AttemptStarted", 2, "step-4"); n != 0 {
		t.Errorf("run 2 sent step-4 %d times, want a replay", n)
	}
	if sh.countEvents("StepReplayed", 2, "step-4") != 1 || sh.countEvents("AttemptStarted", 0, "step-5") != 1 {
		t.Errorf("run 2: want step-4 replayed and step-5 attempted once\n%+v", sh.Events)
	}
	// The crash of run 1, then the start of run 2, later in time.
	crash, start := -1, -1
	for i, ev := range sh.Events {
		if ev.Type == "WorkerCrashed" && ev.Run == 1 {
			crash = i
		}
		if ev.Type == "WorkerStarted" && ev.Run == 2 {
			start = i
		}
	}
	if crash < 0 || start != crash+1 {
		t.Fatalf("WorkerCrashed at %d, WorkerStarted of run 2 at %d\n%+v", crash, start, sh.Events)
	}
	t1, _ := time.Parse(time.RFC3339Nano, sh.Events[crash].Time)
	t2, _ := time.Parse(time.RFC3339Nano, sh.Events[start].Time)
	if gap := t2.Sub(t1); gap < time.Second {
		t.Errorf("gap %v between the crash and run 2, want the pause of at least 1s", gap)
	}
	text := ok(t, db, "show")
	gapLine := regexp.MustCompile(`(?m)^ +┆ \d+(\.\d)?s with no worker running$`)
	if !gapLine.MatchString(text.stdout) {
		t.Errorf("show does not point out the gap\n%s", text)
	}
	killed := strings.Index(text.stdout, "✖ killed (exit 137)")
	gapAt := gapLine.FindStringIndex(text.stdout)
	run2 := strings.Index(text.stdout, "run 2: worker started")
	if gapAt == nil || !(killed < gapAt[0] && gapAt[0] < run2) {
		t.Errorf("the gap line is not between the crash and run 2\n%s", text)
	}
	has(t, text, "exec_3C5R  scenario invoice-crm  policy journal  completed  runs 2  started ")
}

// Done-when 7: kill -9 of the host at random moments during runs.
func TestCLIHostKilledAtRandomMoments(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rng := rand.New(rand.NewPCG(20250614, 2))
	var orphans, resumed int
	began := time.Now()
	for round := range 10 {
		scn := []string{"naive", "safe"}[round%2]
		// A run lasts about 350ms (the 300ms timeout, then the 50ms retry
		// delay) after the host has opened, so most kills land inside it;
		// some hit the host's start or its end.
		delay := time.Duration(rng.IntN(450)) * time.Millisecond
		lines, killed := runAndKillHost(t, db, delay, "run", scn)

		// The database opens and passes bbolt's check.
		raw, err := store.Open(db, store.Options{})
		if err != nil {
			t.Fatalf("round %d: open after kill: %v", round, err)
		}
		if err := raw.Check(); err != nil {
			t.Fatalf("round %d: check after kill: %v", round, err)
		}
		running := map[string]bool{}
		err = raw.View(func(tx *store.Tx) error {
			return tx.Executions(false, 0, func(id string, rec []byte) bool {
				if x, err := history.DecodeExecution(rec); err == nil && x.Status == history.StatusRunning {
					running[id] = true
				}
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Close(); err != nil {
			t.Fatal(err)
		}
		if len(running) > 0 {
			orphans++
		}

		// A new host marks the orphans killed, and every event that was
		// acknowledged (narrated lines are printed after their commit) is
		// in the history.
		unfinished := checkAfterKill(t, round, db, lines, running)
		t.Logf("round %d: %s killed=%v after %v: %d lines, orphaned %v", round, scn, killed, delay, len(lines), running)
		if unfinished != "" {
			r := ok(t, db, "resume")
			has(t, r, "[agent]     execution completed")
			if sh := show(t, db, unfinished); sh.Execution.Status != "completed" {
				t.Errorf("round %d: %s is %s after resume", round, unfinished, sh.Execution.Status)
			}
			resumed++
		}
		ok(t, db, "reset") // so the next run meets its fault again
		if t.Failed() {
			return
		}
	}
	if orphans == 0 || resumed == 0 {
		t.Errorf("no kill landed inside a run (%d orphans, %d resumed)", orphans, resumed)
	}
	t.Logf("10 host kills in %v: %d left an execution running, %d resumed", time.Since(began), orphans, resumed)
}

// runAndKillHost runs retrylab, kills it with SIGKILL d after it started,
// and returns the complete lines it printed, and whether the kill found it
// still running.
func runAndKillHost(t *testing.T, db string, d time.Duration, args ...string) ([]string, bool) {
	t.Helper()
	return runAndKill(t, db, func(<-chan string) { time.Sleep(d) }, args...)
}

// runAndKillAfter runs a command and kills it (SIGKILL) once it printed a
// line containing marker: a kill at a known point of the run, whatever the
// machine's load.
func runAndKillAfter(t *testing.T, db, marker string, args ...string) ([]string, bool) {
	t.Helper()
	return runAndKill(t, db, func(lines <-chan string) {
		for line := range lines {
			if strings.Contains(line, marker) {
				return
			}
		}
	}, args...)
}

// runAndKill runs a command, waits for until to return (it reads the
// command's lines as they come) and kills it.
func runAndKill(t *testing.T, db string, until func(lines <-chan string), args ...string) ([]string, bool) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	cmd.Dir = filepath.Dir(db)
	cmd.Env = cliEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	done := make(chan struct{})
	seen := make(chan string, 1024)
	go func() {
		defer close(done)
		defer close(seen)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return // EOF; a partial last line is not acknowledged
			}
			lines = append(lines, strings.TrimSuffix(line, "\n"))
			select {
			case seen <- line:
			default: // until stopped reading: the kill is under way
			}
		}
	}()
	until(seen) // the moment of the kill
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
	if !killed && cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("retrylab %v exited %d before the kill: %s", args, cmd.ProcessState.ExitCode(), stderr.String())
	}
	return lines, killed
}

// eventTags are the narration tags of recorded events; [mail-api] and
// [crm] lines tell of the world's activity.
var eventTags = []string{"[runtime]", "[agent]", "[tool]", "[fault]", "[journal]"}

// checkAfterKill opens a host on db, checks that the executions that were
// left running are now killed, that every narrated event line is in the
// histories, and returns an unfinished execution to resume ("" if none).
func checkAfterKill(t *testing.T, round int, db string, printed []string, running map[string]bool) string {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: db, Scenarios: fixtures.FS, Imports: all.Registry()})
	if err != nil {
		t.Fatalf("round %d: host open after kill: %v", round, err)
	}
	defer func() {
		if err := h.Store().Check(); err != nil {
			t.Errorf("round %d: check: %v", round, err)
		}
		if err := h.Close(); err != nil {
			t.Errorf("round %d: close: %v", round, err)
		}
	}()
	recorded := map[string]int{} // narration of every recorded event
	list, _, err := h.Executions(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list {
		evs, err := h.Events(x.ID, 0, 0)
		if err != nil {
			t.Fatalf("round %d: events of %s: %v", round, x.ID, err)
		}
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Errorf("round %d: %s event %d has seq %d", round, x.ID, i+1, ev.Seq)
			}
		}
		n := narrate.New(x.ID)
		for _, ev := range evs {
			for _, l := range n.Lines(notice.Notice{Execution: x.ID, Event: &ev}) {
				recorded[l]++
			}
		}
		if running[x.ID] {
			last := evs[len(evs)-1]
			if x.Status != history.StatusKilled || last.Type != history.WorkerCrashed || !strings.Contains(last.Error, "host process died") {
				t.Errorf("round %d: orphan %s is %s, last event %+v; want killed by markOrphans", round, x.ID, x.Status, last)
			}
		}
	}
	for _, l := range printed {
		isEvent := false
		for _, tag := range eventTags {
			isEvent = isEvent || strings.HasPrefix(l, tag)
		}
		if !isEvent {
			continue
		}
		if recorded[l] == 0 {
			t.Errorf("round %d: acknowledged %q is not in the history", round, l)
			continue
		}
		recorded[l]--
	}
	x, found, err := h.LatestUnfinished()
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return x.ID
}

// Done-when 8: a second retrylab on the same database fails fast, naming
// the file; a corrupt file gives a one-line error, not a panic.
func TestCLISecondInstanceAndCorruptFile(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := exec.Command(bin, "--db", db, "serve")
	serve.Dir = filepath.Dir(db)
	serve.Env = cliEnv()
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var serveErr strings.Builder
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var printed []string // read only after exited is closed
	ready := make(chan []string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			printed = append(printed, sc.Text())
			if sc.Text() == "press Ctrl-C to stop" {
				ready <- append([]string(nil), printed...)
			}
		}
		_ = serve.Wait()
	}()
	t.Cleanup(func() {
		_ = serve.Process.Kill()
		<-exited
	})
	var banner []string
	select {
	case banner = <-ready:
	case <-exited:
		t.Fatalf("serve exited: %s", serveErr.String())
	}
	urls := regexp.MustCompile(`http://[^ /]+`).FindAllString(strings.Join(banner, "\n"), -1)
	if len(urls) < 2 {
		t.Fatalf("serve printed no addresses: %q", banner)
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("serve listens on %s, want 127.0.0.1", u)
		}
	}

	// A second retrylab finds the running host announced beside the
	// database and works through it instead of fighting over the file.
	if _, err := os.Stat(control.HostFile(db)); err != nil {
		t.Errorf("serve did not announce itself: %v", err)
	}
	has(t, ok(t, db, "outbox"), "outbox is empty")

	if err := serve.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-exited
	if code := serve.ProcessState.ExitCode(); code != 0 || printed[len(printed)-1] != "stopped" {
		t.Errorf("serve after Ctrl-C: exit %d, last line %q, stderr %q", code, printed[len(printed)-1], serveErr.String())
	}
	if _, err := os.Stat(control.HostFile(db)); !os.IsNotExist(err) {
		t.Errorf("serve left its announcement behind (%v)", err)
	}

	// A holder of the file that is not a retrylab host to attach to: the
	// second retrylab gives up after about a second, naming the file.
	holder, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"outbox"}, {"run", "naive"}} {
		began := time.Now()
		r := rl(t, db, args...)
		elapsed := time.Since(began)
		msg := oneLineError(t, r)
		if elapsed > 3*time.Second {
			t.Errorf("%v: the second retrylab took %v to give up", args, elapsed)
		}
		if r.code != 1 || !strings.Contains(msg, db) || !strings.Contains(msg, "locked") {
			t.Errorf("%v: exit %d, %q: want exit 1 and the locked file named", args, r.code, msg)
		}
		if r.stdout != "" {
			t.Errorf("stdout %q", r.stdout)
		}
	}
	if err := holder.Check(); err != nil {
		t.Error(err)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	ok(t, db, "outbox") // the lock is free again

	// Garbage bytes.
	bad := filepath.Join(t.TempDir(), "garbage.db")
	junk := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	if err := os.WriteFile(bad, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"outbox"}, {"run", "naive"}, {"show"}, {"reset"}} {
		r := rl(t, bad, args...)
		msg := oneLineError(t, r)
		if !strings.Contains(msg, bad) || !strings.Contains(msg, "corrupt") {
			t.Errorf("%v on a corrupt file: %q, want the file named and the word corrupt", args, msg)
		}
		if r.code != 1 || r.stdout != "" {
			t.Errorf("%v on a corrupt file\n%s", args, r)
		}
	}
	if after, err := os.ReadFile(bad); err != nil || string(after) != string(junk) {
		t.Errorf("the corrupt file was modified (%v)", err)
	}
}

// CLI errors are one line and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	badYAML := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(badYAML, []byte("name: broken\ntools:\n  send: {service: mail, op: send, kind: keyed}\nturns:\n  - text: x\n    calls:\n      - {step: s1, tool: sned}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string // in the error line
	}{
		{[]string{"run", "nope"}, 2, `retrylab: unknown scenario "nope" (known: `},
		{[]string{"verify", "nope"}, 2, `retrylab: unknown scenario "nope" (known: `},
		{[]string{"--run", "nope"}, 2, `retrylab: --run: unknown scenario "nope" (known: `},
		// A scenario path with no file is as much a mistake in the name.
		{[]string{"run", "./missing.yaml"}, 2, "retrylab: no such scenario file: ./missing.yaml"},
		{[]string{"verify", "./missing.yaml"}, 2, "retrylab: no such scenario file: ./missing.yaml"},
		{[]string{"--run", "./missing.yaml"}, 2, "retrylab: --run: no such scenario file: ./missing.yaml"},
		{[]string{"run", "./missing.yaml", "--engine", "temporal"}, 2, "retrylab: no such scenario file: ./missing.yaml"},
		{[]string{"--run", badYAML}, 1, "retrylab: --run: " + badYAML + `:7: turns.0.calls.0.tool: unknown tool "sned"`},
		{[]string{"run"}, 2, "retrylab: retrylab run needs SCENARIO (see --help)"},
		{[]string{"run", "naive", "safe"}, 2, "retrylab: retrylab run needs SCENARIO (see --help)"},
		{[]string{"run", "naive", "--keys", "maybe"}, 2, `want on or off, not "maybe"`},
		{[]string{"run", badYAML}, 1, badYAML + `:7: turns.0.calls.0.tool: unknown tool "sned" (valid: send)`},
		{[]string{"resume"}, 1, "retrylab: nothing to resume"},
		{[]string{"resume", "exec_NOPE"}, 1, "retrylab: no such execution: exec_NOPE"},
		{[]string{"journal", "delete", "exec_01H8", "step-4"}, 1, "retrylab: no such execution: exec_01H8"},
		{[]string{"journal", "delete", "exec_01H8"}, 2, "needs EXECUTION and STEP"},
		{[]string{"journal", "list", "exec_NOPE"}, 1, "retrylab: no such execution: exec_NOPE"},
		{[]string{"show", "exec_7K2Q", "exec_01H8"}, 2, "retrylab: retrylab show: accepts at most 1 arg(s), received 2 (see --help)"},
		{[]string{"outbox", "extra"}, 2, `unknown command "extra" for "retrylab outbox" (see --help)`},
		{[]string{"import"}, 2, "retrylab: retrylab import: requires at least 1 arg(s), only received 0 (see --help)"},
		{[]string{"show", "exec_NOPE"}, 1, "retrylab: no such execution: exec_NOPE"},
		{[]string{"show"}, 1, "retrylab: no executions yet"},
		{[]string{"no-such-command"}, 2, `unknown command "no-such-command"`},
		// A typo gets cobra's suggestion, a mistyped scenario the nearest
		// names instead of the whole catalogue.
		{[]string{"rnu"}, 2, `unknown command "rnu" for "retrylab"; did you mean run? (see --help)`},
		{[]string{"run", "nave"}, 2, `retrylab: unknown scenario "nave" (did you mean naive? ` + "`retrylab scenarios`" + ` lists them all; or give a path to a .yaml file)`},
		{[]string{"outbox", "--frobnicate"}, 2, "unknown flag: --frobnicate"},
	} {
		if msg := fails(t, tt.code, db, tt.args...); !strings.Contains(msg, tt.want) {
			t.Errorf("%v: want %q, got %q", tt.args, tt.want, msg)
		}
	}
	// The unknown scenario lists the known ones.
	msg := oneLineError(t, rl(t, db, "run", "nope"))
	for _, name := range []string{"naive", "crash", "safe", "invoice-crm"} {
		if !strings.Contains(msg, name) {
			t.Errorf("%q does not list %s", msg, name)
		}
	}
	// A missing journal record of an existing execution.
	ok(t, db, "run", "safe")
	ok(t, db, "journal", "delete", "exec_01H8", "step-4")
	if msg := oneLineError(t, must(t, 1, db, "journal", "delete", "exec_01H8", "step-9")); !strings.Contains(msg, `no journal record for step "step-9"`) {
		t.Errorf("missing record: %q", msg)
	}
}

// --help works on every command, and touches no database.
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, args := range [][]string{{}, {"run"}, {"resume"}, {"reset"}, {"scenarios"}, {"show"}, {"outbox"},
		{"state"}, {"journal"}, {"journal", "list"}, {"journal", "delete"}, {"serve"}} {
		r := ok(t, db, append(args, "--help")...)
		use := "retrylab " + strings.Join(args, " ")
		if !strings.Contains(r.stdout, "Usage:\n  "+strings.TrimSpace(use)) {
			t.Errorf("no usage for %q\n%s", use, r)
		}
	}
	has(t, ok(t, db, "help", "run"), "Exit status: 0 when the execution completed, 137 when its worker was killed")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("--help created the database (%v)", err)
	}
}

// state --json is one object with outbox, keys, journal and crm; outbox
// --json is valid JSON; scenarios lists the catalogue.
func TestCLIJSONAndScenarios(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	// A read creates no database (clock, which only prints the offset,
	// neither); a command that writes (reset) does.
	if r := rl(t, db, "state", "--json"); r.code != 1 || !strings.Contains(r.stderr, "no database at") {
		t.Errorf("state --json with no database: want exit 1, \"no database at\"\n%s", r)
	}
	ok(t, db, "reset")
	for _, args := range [][]string{{"state", "--json"}, {"state"}} {
		r := ok(t, db, args...)
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Errorf("%v: more than one JSON value\n%s", args, r)
		}
		if len(obj) != 4 {
			t.Errorf("%v: keys %v, want outbox, keys, journal, crm", args, obj)
		}
		for _, k := range []string{"outbox", "keys", "journal", "crm"} {
			if string(obj[k]) != "[]" {
				t.Errorf("%v: %s = %s, want [] on an empty database", args, k, obj[k])
			}
		}
	}
	r := ok(t, db, "outbox", "--json")
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty outbox --json: %q", r.stdout)
	}
	has(t, ok(t, db, "outbox"), "outbox is empty")

	ok(t, db, "run", "naive")
	r = ok(t, db, "outbox", "--json")
	var msgs []struct {
		ID, To, Subject string
	}
	if err := json.Unmarshal([]byte(r.stdout), &msgs); err != nil || len(msgs) != 2 {
		t.Fatalf("outbox --json: %v\n%s", err, r)
	}
	var shown struct {
		Execution map[string]any   `json:"execution"`
		Events    []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(ok(t, db, "show", "--json").stdout), &shown); err != nil || shown.Execution["id"] != "exec_7K2Q" || len(shown.Events) == 0 {
		t.Errorf("show --json: %v %+v", err, shown.Execution)
	}

	r = ok(t, db, "scenarios")
	for _, want := range []string{"naive", "crash", "safe", "invoice-crm", "keys+journal"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("scenarios lacks %q\n%s", want, r)
		}
	}
}

// An unknown scenario is a usage error (exit 2) also when another retrylab
// hosts the database and answers the run with its error as text.
func TestCLIUnknownScenarioThroughAHost(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := background(t, db, "serve")
	serve.banner(t)
	if msg := fails(t, 2, db, "run", "nope"); !strings.Contains(msg, `retrylab: unknown scenario "nope" (known: `) {
		t.Errorf("run nope through a host: %q", msg)
	}
	if msg := fails(t, 2, db, "run", "./missing.yaml"); msg != "retrylab: no such scenario file: ./missing.yaml" {
		t.Errorf("run ./missing.yaml through a host: %q", msg)
	}
	serve.stop(t)
}

// A scenario file named relative to the directory run is started in is the
// file run reads, also when the host that reads it is another retrylab
// started elsewhere: it read ./mine.yaml in its own directory ("no such
// scenario file", or another file of that name).
func TestCLIRunRelativePathThroughAHostElsewhere(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := background(t, db, "serve")
	serve.banner(t)
	naive, err := fixtures.FS.ReadFile("naive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "mine.yaml"), naive, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--db", db, "run", "./mine.yaml")
	cmd.Dir, cmd.Env = elsewhere, cliEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), duplicateLine) {
		t.Errorf("run ./mine.yaml in another directory than the host's: %v\n%s", err, out)
	}
	serve.stop(t)
}
