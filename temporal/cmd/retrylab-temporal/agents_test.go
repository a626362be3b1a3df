package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/temporal/agentflow"
	"github.com/retrylab/retrylab/temporal/devserver"
	"github.com/retrylab/retrylab/temporal/internal/workerproc"
)

// The environment that turns this test binary into the command (for the
// workers 'run' starts); workerproc.EnvAddr turns it into a test's own
// worker process.
const envAsMain = "RETRYLAB_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
	}
	if addr := os.Getenv(workerproc.EnvAddr); addr != "" {
		os.Exit(markingWorker(addr, os.Getenv(workerproc.EnvOTLP), os.Getenv(workerproc.EnvMark)))
	}
	os.Exit(m.Run())
}

// markingWorker is a worker process of the demo agents whose tool calls
// write this process's id to mark as they are sent: the test learns which
// worker is in the middle of an activity.
func markingWorker(addr, otlpURL, mark string) int {
	return workerproc.Serve(addr, otlpURL, agentflow.TaskQueue, func(w worker.Worker) {
		agentflow.Register(w, agentflow.Options{HTTP: &http.Client{Transport: markTransport{mark}}})
	})
}

type markTransport struct{ file string }

func (m markTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	os.WriteFile(m.file, []byte(fmt.Sprint(os.Getpid())), 0o600)
	return http.DefaultTransport.RoundTrip(r)
}

// The same agent-level retry, keyed two ways, on a real cluster with the
// workers 'run' starts: the article's exec:step:args key is the same for
// the agent's second call of step-4, so the mail API replays the first
// answer (one invoice); Temporal's workflow id + activity id is new for the
// second call (another activity), so jordan gets two.
func TestRunKeysCompared(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	t.Setenv(envAsMain, "1") // the workers run starts are this binary
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")

	out, errOut, code := cli(t, "run", "agent-retry-same-step", "--address", s.Address(), "--db", db, "--workers", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"agent-retry-same-step: workflow exec_4AR2, run ",
		"  5 send_invoice_email (step-4)\n    ⏱ #1 timeout ⚡timeout-after-effect key ik_",
		"  11 send_invoice_email (step-4)\n    ✓ #1 ok key ik_",
		"outbox of temporal-", ": 1 message(s)\n",
		"jordan@acme.dev", "completed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}

	if k := keyOf(out); k == "" || k != keyOf(out[strings.Index(out, "  11 send"):]) {
		t.Errorf("the article's key should be the same for both calls of step-4:\n%s", out)
	}
	yml, err := os.ReadFile("../../../fixtures/agent-retry-same-step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tk := strings.Replace(string(yml), "  keys: true\n", "  keys: true\n  key_from: temporal\n", 1)
	tk = strings.Replace(tk, "execution: exec_4AR2", "execution: exec_4AR2T", 1)
	file := filepath.Join(dir, "temporal-key.yaml")
	if err := os.WriteFile(file, []byte(tk), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli(t, "run", file, "--address", s.Address(), "--db", db, "--workers", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, ": 2 message(s)\n") || keyOf(out) == keyOf(out[strings.Index(out, "  11 send"):]) {
		t.Errorf("with Temporal's key the agent's second call is a new activity, a new key, a second invoice:\n%s", out)
	}

	// A crash fault kills the worker process right after the effect; run
	// starts another, Temporal's start-to-close timeout gives attempt 1 up
	// and attempt 2 sends again: without keys, two invoices (window 2).
	out, errOut, code = cli(t, "run", "crash", "--address", s.Address(), "--db", db, "--workers", "1")
	if code != 0 {
		t.Fatalf("run crash: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ended (signal: killed); starting another", "⏱ #1 timeout ⚡crash-after-effect on worker ", "✓ #2 ok", ": 2 message(s)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("run crash output lacks %q:\n%s", want, out)
		}
	}
	// run tells each attempt as it happens, as 'retrylab run' does, before
	// the summary it prints at the end: the attempt starts, takes the
	// scenario's crash, the invoice is delivered, the worker dies, another
	// attempt sends again.
	inOrder(t, out,
		"[agent]     step-4: send_invoice_email(to=jordan@acme.dev, subject=\"Your June invoice\"), activity 5\n",
		"[tool]      attempt 1 of send_invoice_email (activity 5, step-4) on worker ",
		"[fault]     ⚡ crash after the effect, before recording on step-4 attempt 1 (from the scenario's fault plan)\n",
		"[mail-api]  delivered id=",
		"ended (signal: killed); starting another\n",
		"[tool]      attempt 2 of send_invoice_email (activity 5, step-4) on worker ",
		"[mail-api]  delivered id=",
		"[tool]      ✓ attempt 2 of send_invoice_email (activity 5, step-4): ok after ",
		"[temporal]  activity 5 (send_invoice_email) completed\n",
		"[temporal]  workflow completed\n",
		"history: ",
		"outbox of ")

	// An unsafe create whose answer was lost is not retried: escalated,
	// exit 3, one CRM row.
	out, errOut, code = cli(t, "run", "unsafe-escalates", "--address", s.Address(), "--db", db, "--workers", "1")
	if code != exitEscalated || !strings.Contains(errOut, "escalated: step-6: open_ticket outcome unknown (timeout)") ||
		strings.Contains(out, "#2") {
		t.Errorf("run unsafe-escalates: exit %d\n%s%s", code, out, errOut)
	}

	// Bad input: one line, no workflow.
	for _, tt := range []struct{ args, want string }{
		{"run no-such-scenario --address " + s.Address() + " --db " + db, "no-such-scenario"},
		{"run invoice-crm --address " + s.Address() + " --db " + db, "crash-after-record has no Temporal form"},
		{"run naive --address 127.0.0.1:1 --connect-timeout 300ms --db " + db, "cannot reach a Temporal cluster at 127.0.0.1:1"},
		{"run", "run needs SCENARIO"},
	} {
		_, e, code := cli(t, strings.Fields(tt.args)...)
		if code != 1 || strings.Count(e, "\n") != 1 || !strings.Contains(e, tt.want) {
			t.Errorf("%s: exit %d, %q; want one line with %q", tt.args, code, e, tt.want)
		}
	}
}

// Many workers on one cluster: two worker processes serve the agents; the
// one in the middle of step-4's first attempt (its effect done, its answer
// held back by the world) is killed with SIGKILL. Temporal's start-to-close
// timeout gives the attempt up, the other worker makes attempt 2 with the
// same key, the mail API replays: one invoice. The trace shows the killed
// attempt (its started span names the dead worker) and the replayed one.
func TestRunWorkerKilledMidActivity(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	dir := t.TempDir()
	mark := filepath.Join(dir, "sending")
	scn := filepath.Join(dir, "killed.yaml")
	writeInvoiceScenario(t, scn, `name: killed
title: "A worker killed mid-activity"
teaches: "Temporal retries the activity on another worker; the key makes it safe."
execution: exec_KILL
policy:
  keys: true
  retry: {initial: 50ms, backoff: 1, max_attempts: 3, timeout: 3s}
`, `faults:
  - {step: step-4, attempt: 1, point: timeout-after-effect}
expect:
  outbox: {jordan@acme.dev: 1}
`)
	workers := map[int]*exec.Cmd{}
	started := make(chan struct{}) // closed once workers is filled
	effect := make(chan struct{}, 1)
	var out syncBuf
	done := make(chan error, 1)
	go func() {
		done <- runAgent(context.Background(), &out, agentRun{
			cluster:  clusterFlags{address: s.Address(), namespace: "default", timeout: 10 * time.Second},
			scenario: scn, dbPath: filepath.Join(dir, "retrylab.db"), taskQueue: agentflow.TaskQueue,
			observe: func(a world.Activity) {
				if a.Kind == world.KindDelivered {
					select {
					case effect <- struct{}{}:
					default:
					}
				}
			},
			ready: func(otlpURL, _ string) {
				defer close(started)
				for range 2 {
					cmd := workerproc.Command(s.Address(), otlpURL, mark)
					if err := cmd.Start(); err != nil {
						t.Error(err)
						return
					}
					workers[cmd.Process.Pid] = cmd
				}
			},
		})
	}()
	t.Cleanup(func() {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			return // run failed before it got to its workers
		}
		for _, cmd := range workers {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	select {
	case <-effect:
	case err := <-done:
		t.Fatalf("run ended before the effect: %v\n%s", err, out.String())
	case <-time.After(time.Minute):
		t.Fatalf("no effect within a minute\n%s", out.String())
	}
	<-started
	data, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(data), &pid)
	killed, ok := workers[pid]
	if !ok {
		t.Fatalf("the mark names %d, not a worker of this test", pid)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("run did not end\n%s", out.String())
	}
	got := out.String()
	host, _ := os.Hostname()
	for _, want := range []string{
		"  5 send_invoice_email (step-4)\n    ⏱ #1 timeout on worker ",
		"    ✓ #2 ok key ik_",
		": 1 message(s)\n",
		"completed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("run output lacks %q:\n%s", want, got)
		}
	}
	if want := fmt.Sprintf("#1 timeout on worker %d@%s", pid, host); !strings.Contains(got, want) {
		t.Errorf("the killed attempt should name its worker (%q):\n%s", want, got)
	}
}

// keyOf is the hex of the first key in run's output.
func keyOf(out string) string {
	i := strings.Index(out, "key ik_")
	if i < 0 {
		return ""
	}
	return strings.Fields(out[i+len("key ik_"):])[0]
}

// inOrder checks that out holds each of want, each after the one before.
func inOrder(t *testing.T, out string, want ...string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("output lacks %q after what came before it, in order %q:\n%s", w, want, out)
			return
		}
		rest = rest[i+len(w):]
	}
}
