package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/freeport"
)

// The command-line items of the "workshop-ready" issue: what a new user and
// a workshop teacher tripped on, each as the user sees it.

// Item 16: --keys and --journal state one default, the scenario's policy.
func TestCLIOnOffFlagsStateOneDefault(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, cmd := range []string{"run", "verify"} {
		r := ok(t, db, cmd, "--help")
		for _, flag := range []string{"--keys on|off", "--journal on|off"} {
			i := strings.Index(r.stdout, flag)
			if i < 0 {
				t.Fatalf("%s --help lacks %s\n%s", cmd, flag, r)
			}
			line := r.stdout[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if n := strings.Count(line, "(default"); n != 1 || !strings.Contains(line, "policy)") {
				t.Errorf("%s --help: %q states %d defaults, want the policy's only", cmd, line, n)
			}
		}
	}
}

// Item 22: a bad --db path is named for what is wrong with it.
func TestCLIBadDBPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		db   string
		want string
	}{
		{dir, "--db " + dir + " is a directory, not a database file; name a file in it, e.g. --db " + filepath.Join(dir, "retrylab.db")},
		{filepath.Join(dir, "missing", "x.db"), "directory " + filepath.Join(dir, "missing") + " does not exist (create it first: mkdir -p"},
		{"", "--db is empty: name a database file"},
		{filepath.Join(file, "x.db"), "a directory in that path is a file"},
	}
	for _, c := range cases {
		for _, cmd := range [][]string{{"show"}, {"run", "naive"}, {"check"}, {"outbox"}} {
			r := rl(t, filepath.Join(dir, "unused"), append([]string{"--db", c.db}, cmd...)...)
			msg := oneLineError(t, r)
			if !strings.Contains(msg, c.want) {
				t.Errorf("--db %q %v: %q, want it to say %q", c.db, cmd, msg, c.want)
			}
			if strings.Contains(msg, "corrupt") || strings.Contains(msg, "open : open") {
				t.Errorf("--db %q %v: %q", c.db, cmd, msg)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a bad path created a directory: %v", err)
	}
}

// Item 18: the chaos progress line and the summary count kills with the
// same words and the same numbers.
func TestCLIChaosProgressCountsAsTheSummary(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chaos.db")
	r := must(t, 0, db, "chaos", "--runs", "16", "--seed", "3", "--host-kills", "1")
	progress := regexp.MustCompile(`(?m)^\[16/16 runs · workers killed (\d+) · hosts killed (\d+) · 0 violations\]`).FindAllStringSubmatch(r.stdout, -1)
	if len(progress) == 0 {
		t.Fatalf("no final progress line\n%s", r)
	}
	last := progress[len(progress)-1]
	summary := regexp.MustCompile(`(?m)^workers killed: (\d+) \(`).FindStringSubmatch(r.stdout)
	if summary == nil || summary[1] != last[1] {
		t.Errorf("progress says workers killed %s, the summary %v\n%s", last[1], summary, r)
	}
	hosts := regexp.MustCompile(`(?m)^chaos: 16 runs in \S+ with \d+ hosts \(hosts killed (\d+)\)`).FindStringSubmatch(r.stdout)
	if hosts == nil || hosts[1] != last[2] {
		t.Errorf("progress says hosts killed %s, the summary %v\n%s", last[2], hosts, r)
	}
}

// Item 21: a database with a damaged page is refused before anything is
// written to it, and both run and check say so in our words, not bbolt's
// assertion.
func TestCLIDamagedPageRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "damaged.db")
	must(t, 0, db, "run", "naive")
	page := historyRoot(t, db, "exec_7K2Q")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, 4000), int64(page)*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("page %d is damaged (its header says it is page 4000)", page)
	for _, args := range [][]string{{"run", "safe"}, {"check"}, {"show", "exec_7K2Q"}} {
		r := rl(t, db, args...)
		msg := oneLineError(t, r)
		if !strings.Contains(msg, want) || !strings.Contains(msg, db) {
			t.Errorf("%v: %q, want the file named and %q", args, msg, want)
		}
		for _, bad := range []string{"panic", "assertion"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%v: %q says %q", args, msg, bad)
			}
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Fatalf("%v wrote to the damaged file\n%s", args, r)
		}
	}
}

// A damaged compressed history chunk, found deep in a read, is one line
// that names the database file, from every command that reads the history.
func TestCLIDamagedHistoryChunkNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "damaged.db")
	must(t, 0, db, "run", "naive")
	b, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		events := tx.Bucket([]byte("history_events"))
		k, v := events.Cursor().First()
		if k == nil {
			return fmt.Errorf("no history chunk")
		}
		return events.Put(k, v[:len(v)/2]) // cut short: the compressed chunk cannot decode
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "exec_7K2Q"}, {"export", "--otlp", filepath.Join(dir, "out.json")}, {"audit"}, {"check"}} {
		msg := oneLineError(t, rl(t, db, args...))
		if !strings.Contains(msg, "history chunk") || !strings.Contains(msg, "corrupt") || strings.Count(msg, db) != 1 {
			t.Errorf("%v: %q, want the damaged chunk and the file named once", args, msg)
		}
	}
}

// historyRoot is a page where the histories are stored: the root of the
// bucket every short history shares, or while that bucket is small enough to
// be stored inline, the page of the top-level buckets that holds it.
func historyRoot(t *testing.T, path, exec string) uint64 {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var root uint64
	err = b.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("history_ids")).Get([]byte(exec)) == nil {
			return fmt.Errorf("no history for %s", exec)
		}
		root = uint64(tx.Bucket([]byte("history_events")).Root())
		if root == 0 {
			root = uint64(tx.Cursor().Bucket().Root())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatalf("the histories of %s are inline; the test needs them on a page of their own", exec)
	}
	return root
}

// started is a retrylab process running in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
}

// syncBuffer is a bytes.Buffer safe to read while the process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// background starts `retrylab --db db args...` and does not wait for it.
func background(t *testing.T, db string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	cmd.Dir = filepath.Dir(db)
	cmd.Env = cliEnv()
	s := &started{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	return s
}

// wait waits for the process to end and returns what it did.
func (s *started) wait(t *testing.T) ran {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("retrylab %v did not end\nstdout %s\nstderr %s", s.cmd.Args, s.stdout, s.stderr)
	}
	return ran{args: s.cmd.Args[3:], stdout: s.stdout.String(), stderr: s.stderr.String(), code: s.cmd.ProcessState.ExitCode()}
}

// stop interrupts the process (Ctrl-C) and returns what it did once it
// ends.
func (s *started) stop(t *testing.T) ran {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	return s.wait(t)
}

// awaitBanner waits for serve's banner ("press Ctrl-C to stop"): it
// reports false if serve ended first (its output says why), and fails the
// test if neither happens within 10 s.
func (s *started) awaitBanner(t *testing.T) bool {
	t.Helper()
	shown := func() bool { return strings.Contains(s.stdout.String(), "press Ctrl-C to stop") }
	for end := time.Now().Add(10 * time.Second); !shown(); time.Sleep(10 * time.Millisecond) {
		select {
		case <-s.done:
			return shown()
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for the banner of retrylab %v\nstdout %s\nstderr %s", s.cmd.Args[3:], s.stdout, s.stderr)
		}
	}
	return true
}

// banner waits for serve's banner, failing at once, with what serve said,
// if serve ended first.
func (s *started) banner(t *testing.T) {
	t.Helper()
	if !s.awaitBanner(t) {
		t.Fatalf("retrylab %v ended before its banner\n%s", s.cmd.Args[3:], s.wait(t))
	}
}

// until polls cond (every 10 ms, for up to 10 s).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Item 20: two runs started together on one database. The second attaches
// to the first's host; when the first run ends, its host waits for the
// second's run instead of killing its worker. The second is naive with a 3 s
// deadline, so it surely outlasts the first (safe, about 1 s).
func TestCLITwoRunsOnOneDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	naive, err := fixtures.FS.ReadFile("naive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(filepath.Dir(db), "naive-slow.yaml")
	if !bytes.Contains(naive, []byte("timeout: 1s}")) {
		t.Fatal("naive.yaml no longer has a 1 s deadline")
	}
	if err := os.WriteFile(slow, bytes.Replace(naive, []byte("timeout: 1s}"), []byte("timeout: 3s}"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	first := background(t, db, "run", "safe")
	until(t, "the first run's host", func() bool { _, err := os.Stat(control.HostFile(db)); return err == nil })
	second := must(t, 0, db, "run", slow)
	has(t, second, "[agent]     execution completed", duplicateLine)
	hasNot(t, second, "killed")
	r := first.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "[agent]     execution completed") {
		t.Fatalf("the first run\n%s", r)
	}
	if !strings.Contains(r.stderr, "waiting for it before closing") {
		t.Errorf("the first run's host did not wait for the second run\n%s", r)
	}
	for _, exec := range []string{"exec_7K2Q", "exec_01H8"} {
		if s := show(t, db, exec); s.Execution.Status != "completed" || s.Execution.Runs != 1 {
			t.Errorf("%s: %+v, want completed in one run", exec, s.Execution)
		}
	}
}

// Item 20 again, without timing: serve is stopped while a run attached to
// it goes on; it waits for the run, says so, and the run completes.
func TestCLIServeWaitsForAnAttachedRun(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := background(t, db, "serve")
	serve.banner(t)
	run := background(t, db, "run", "naive")
	until(t, "the run to start", func() bool { return strings.Contains(run.stdout.String(), "[runtime]   execution exec_7K2Q started") })
	if err := serve.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := run.wait(t)
	if r.code != 0 {
		t.Fatalf("the attached run\n%s", r)
	}
	has(t, r, "[agent]     execution completed", duplicateLine)
	s := serve.wait(t)
	if s.code != 0 || !strings.Contains(s.stderr, "(running exec_7K2Q); waiting for it before closing") {
		t.Errorf("serve\n%s", s)
	}
	if sh := show(t, db, "exec_7K2Q"); sh.Execution.Status != "completed" || sh.Execution.Runs != 1 {
		t.Errorf("exec_7K2Q: %+v", sh.Execution)
	}
}

// Item 4: every read command works while another retrylab (the explorer,
// here serve) holds the database, and prints what it prints without one.
func TestCLIReadCommandsAttach(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 0, db, "run", "naive")
	reads := [][]string{{"show"}, {"show", "--json"}, {"show", "--markdown"}, {"check"}, {"outbox"}, {"state", "--json"}, {"journal", "list"}}
	alone := map[int]ran{}
	for i, args := range reads {
		alone[i] = ok(t, db, args...)
	}
	serve := background(t, db, "serve")
	serve.banner(t)
	for i, args := range reads {
		r := ok(t, db, args...)
		if r.stdout != alone[i].stdout {
			t.Errorf("%v while serve holds the database differs from without it\n%s\n--- without\n%s", args, r, alone[i].stdout)
		}
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// Item 25: the README says how to get retrylab on the PATH before its first
// `retrylab ...` command, and the way it says works.
func TestREADMEInstallsBeforeUsing(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	first := regexp.MustCompile(`(?m)^retrylab (reset|run|resume|show|outbox|state|journal|serve|check|lesson|clock)\b`).FindStringIndex(readme)
	install := strings.Index(readme, "go install .")
	if first == nil || install < 0 || install > first[0] {
		t.Fatalf("README: `go install .` at %d, the first retrylab command at %v", install, first)
	}
	// go install honours GOBIN: the directory to put on the PATH is the
	// one go list names as the install target, not GOPATH/bin.
	if !strings.Contains(readme[:first[0]], `export PATH="$PATH:$(dirname "$(go list -f '{{.Target}}' .)")"`) {
		t.Error("README does not say how to put go install's directory ($GOBIN or GOPATH/bin) on the PATH before using retrylab")
	}
	if strings.Contains(readme, `PATH="$PATH:$(go env GOPATH)/bin"`) {
		t.Error("README assumes go install writes to GOPATH/bin; with GOBIN set it does not")
	}
}

// Item 17: key-retention shown from the command line: the worker dies after
// the send, the world clock moves 25 hours, the resumed step sends again.
func TestCLIClockAdvanceShowsKeyRetention(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	has(t, ok(t, db, "clock"), "world clock +0h: the providers' clock runs 0h ahead of real time")
	r := must(t, 137, db, "run", "key-retention")
	if got := lastLine(r.stdout); got != singleLine {
		t.Errorf("after the crash: %q, want %q", got, singleLine)
	}
	has(t, ok(t, db, "clock", "advance", "25h"), "world clock advanced 25h: now +25h")
	has(t, ok(t, db, "clock"), "world clock +25h: the providers' clock runs 25h ahead of real time")
	r = ok(t, db, "resume")
	if got := lastLine(r.stdout); got != duplicateLine {
		t.Errorf("after 25 hours: %q, want the duplicate the scenario's title promises\n%s", got, r)
	}
	for _, bad := range []struct{ arg, want string }{
		{"soon", `clock advance: "soon" is not a duration (e.g. 25h, 90m, 2d)`},
		{"0s", "the world clock only moves forward"},
		// More days than a duration holds is refused, not wrapped round.
		{"99999999999d", `clock advance: "99999999999d" is too far: at most 106751d`},
		{"9999999999h", `clock advance: "9999999999h" is not a duration`},
	} {
		msg := oneLineError(t, must(t, 2, db, "clock", "advance", bad.arg))
		if !strings.Contains(msg, bad.want) {
			t.Errorf("clock advance %s: %q, want %q", bad.arg, msg, bad.want)
		}
	}
	has(t, ok(t, db, "clock", "advance", "2d"), "world clock advanced 48h: now +73h")
	// Durations read as people write them, without Go's zero units.
	has(t, ok(t, db, "clock", "advance", "90m"), "world clock advanced 1h30m: now +74h30m")
	has(t, ok(t, db, "clock"), "world clock +74h30m: the providers' clock runs 74h30m ahead of real time")
}

// freePorts finds n consecutive free ports on 127.0.0.1 below the
// kernel's ephemeral range (freeport.Ports), where neither a listener on
// port 0 nor an outgoing connection is ever given a port: only a process
// that names the port can take it before the test binds it. (A port the
// kernel handed out on 127.0.0.1:0 and was closed again is taken by other
// tests' outgoing connections within seconds now and then: the kernel
// gives connections the ports of the other parity, and N+1 is one.)
func freePorts(t testing.TB, n int) int {
	t.Helper()
	base, err := freeport.Ports("127.0.0.1", n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// serveOnFixedPorts starts 'retrylab serve --port N' on n free ports
// (freePorts) and waits for its banner. Should a process take one of them
// before serve binds it, serve says so ("one is in use") and ends: it is
// started again on other ports, a few times.
func serveOnFixedPorts(t *testing.T, db string) (*started, int) {
	t.Helper()
	for try := 1; ; try++ {
		port := freePorts(t, 3)
		serve := background(t, db, "serve", "--port", strconv.Itoa(port))
		if serve.awaitBanner(t) {
			return serve, port
		}
		r := serve.wait(t)
		if try == 5 || !strings.Contains(r.stderr, fmt.Sprintf("ports %d-%d: one is in use", port, port+2)) {
			t.Fatalf("serve --port %d ended before its banner (try %d)\n%s", port, try, r)
		}
		t.Logf("ports %d-%d were taken before serve bound them; trying others", port, port+2)
	}
}

// Item 19 and the control endpoint of item 17: serve --port gives fixed,
// printed addresses; an HTTP client moves the world clock through the
// control API; check explains what the client's unattributed effects are.
func TestCLIServeFixedPortsAndControl(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve, port := serveOnFixedPorts(t, db)
	mail := fmt.Sprintf("http://127.0.0.1:%d", port)
	controlURL := fmt.Sprintf("http://127.0.0.1:%d", port+2)
	for _, want := range []string{
		"  mail API  POST " + mail + "/v1/send",
		fmt.Sprintf("  CRM       PUT  http://127.0.0.1:%d/v1/records/{id}", port+1),
		"  control   POST " + controlURL + `/v1/control/advance  {"duration": "25h"}  (bearer token: "token" in ` + control.HostFile(db) + ")",
	} {
		if !strings.Contains(serve.stdout.String(), want) {
			t.Errorf("serve's banner lacks %q\n%s", want, serve.stdout)
		}
	}

	// An agent of one's own: plain HTTP, no attribution headers.
	resp, err := http.Post(mail+"/v1/send", "application/json", strings.NewReader(`{"to":"sam@acme.dev","subject":"Hello","body":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/send: %s", resp.Status)
	}
	var info struct {
		Token string `json:"token"`
	}
	data, err := os.ReadFile(control.HostFile(db))
	if err != nil || json.Unmarshal(data, &info) != nil || info.Token == "" {
		t.Fatalf("host file: %v %s", err, data)
	}
	req, _ := http.NewRequest(http.MethodPost, controlURL+"/v1/control/advance", strings.NewReader(`{"duration": "25h"}`))
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/control/advance: %s", resp.Status)
	}
	has(t, ok(t, db, "clock"), "world clock +25h")

	// A second serve cannot take the same ports, and says why.
	msg := oneLineError(t, rl(t, db, "serve", "--port", strconv.Itoa(port)))
	if !strings.Contains(msg, "already hosts "+db) || !strings.Contains(msg, "leave out --port") {
		t.Errorf("second serve --port: %q", msg)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	msg = oneLineError(t, rl(t, other, "serve", "--port", strconv.Itoa(port)))
	if !strings.Contains(msg, fmt.Sprintf("ports %d-%d: one is in use", port, port+2)) {
		t.Errorf("serve --port on busy ports: %q", msg)
	}

	// check, while serve still runs, says why the effect is unexpected.
	r := must(t, 1, db, "check")
	if msg := oneLineError(t, r); !strings.Contains(msg, "have no attribution, as an HTTP client of 'retrylab serve' makes them") ||
		!strings.Contains(msg, "--external-ok") {
		t.Errorf("check: %q", msg)
	}
	has(t, ok(t, db, "check", "--external-ok"), "verdict: PASS")
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// Item 24: a CRM 409 (the record id is taken with other fields) is narrated
// as the CRM's, not as a mail API key in flight, live and in the handout.
func TestCLICRMConflictNarratedAsTheCRMs(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	yaml := filepath.Join(filepath.Dir(db), "taken.yaml")
	if err := os.WriteFile(yaml, []byte(`name: crm-id-taken
title: "A CRM create whose id is taken with other fields"
policy:
  keys: false
  journal: false
  retry: {initial: 10ms, backoff: 2, max_attempts: 1, timeout: 1s}
tools:
  create_customer: {service: crm, op: create, kind: idempotent}
turns:
  - text: "Creating the customer twice, the second time with another name"
    calls:
      - {step: step-1, tool: create_customer, args: {id: cus_1, name: "Jordan"}}
      - {step: step-2, tool: create_customer, args: {id: cus_1, name: "Jordan Lee"}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := must(t, 1, db, "run", yaml)
	has(t, r, `[crm]       record "cus_1" already exists with different fields — 409, nothing written`)
	hasNot(t, r, "Idempotency-Key", "[mail-api]  Idempotency")
	md := ok(t, db, "show", "--markdown")
	has(t, md, `✖ attempt 1: 409 conflict, record "cus_1" already exists with different fields; nothing written`)
	hasNot(t, md, "still in flight")
}

// Item 23: scenario files. An error in an inline map names the key it is
// about; a reference to no earlier step, a tab and a zero timeout are
// refused with the file, the line and the field.
func TestCLIScenarioFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")
	base := `name: mine
title: "x"
policy:
  keys: true
  journal: true
  retry: RETRY
tools:
  send: {service: mail, op: send, kind: keyed}
  record: {service: crm, op: upsert, kind: idempotent}
turns:
  - text: "Sending, then recording"
    calls:
      - {step: confirm, tool: send, args: {to: a@b.c, subject: x}}
      - step: log
        tool: record
        args: {id: r1, message_id: "REF"}
`
	file := func(name, retry, ref string) string {
		path := filepath.Join(dir, name)
		body := strings.NewReplacer("RETRY", retry, "REF", ref).Replace(base)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tab := filepath.Join(dir, "tab.yaml")
	if err := os.WriteFile(tab, []byte("\tname: mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, want string
	}{
		{file("initial.yaml", "{initial: fifty, backoff: 2}", "${confirm.message_id}"),
			`initial.yaml:6: policy.retry.initial: invalid duration "fifty"`},
		{file("backoff.yaml", "{initial: 50ms, backoff: two}", "${confirm.message_id}"),
			"backoff.yaml:6: policy.retry.backoff: cannot unmarshal str `two` into float64"},
		{file("ref.yaml", "{initial: 50ms}", "${confirmx.message_id}"),
			"ref.yaml:16: turns.0.calls.1.args.message_id: ${confirmx.message_id} refers to no earlier step's result (write ${STEP.field}; earlier steps: confirm)"},
		{file("later.yaml", "{initial: 50ms}", "${log.id}"),
			"later.yaml:16: turns.0.calls.1.args.message_id: ${log.id} refers to no earlier step's result"},
		{file("malformed.yaml", "{initial: 50ms}", "${confirm.message_id"),
			`malformed.yaml:16: turns.0.calls.1.args.message_id: "${confirm.message_id" has a malformed reference`},
		{file("zero.yaml", "{initial: 50ms, timeout: 0s}", "${confirm.message_id}"),
			"zero.yaml:6: policy.retry.timeout: 0s is not allowed: it must be more than 0 (leave it out for the default, 1s)"},
		{tab, "tab.yaml:1: a tab character: YAML indents with spaces, never tabs"},
	}
	for _, c := range cases {
		for _, cmd := range []string{"run", "verify"} {
			msg := oneLineError(t, must(t, 1, db, cmd, c.path))
			if !strings.Contains(msg, c.want) {
				t.Errorf("%s %s: %q\nwant %q", cmd, filepath.Base(c.path), msg, c.want)
			}
		}
	}
	// The right reference runs, and the CRM gets the message id, not the text.
	ok(t, db, "run", file("good.yaml", "{initial: 50ms}", "${confirm.message_id}"))
	s := state(t, db)
	if len(s.CRM) != 1 || len(s.Outbox) != 1 || s.CRM[0].Fields["message_id"] != s.Outbox[0].ID {
		t.Errorf("CRM %+v, outbox %+v", s.CRM, s.Outbox)
	}
}
