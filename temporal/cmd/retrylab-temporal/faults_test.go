package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"go.temporal.io/sdk/client"
	temporalinterceptor "go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/imports/all"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/temporal/agentflow"
	"github.com/retrylab/retrylab/temporal/devserver"
	"github.com/retrylab/retrylab/temporal/interceptor"
	"github.com/retrylab/retrylab/tui"
)

// A fault armed from outside reaches the activities: while run runs, a
// client attached to its database through the host file (what the
// explorer's t does) arms a timeout after the effect; the next activity
// attempt takes it, the world sends the invoice and withholds the answer,
// Temporal retries. Without keys jordan gets two invoices (window 1); with
// the article's key the mail API absorbs the retry: one.
func TestRunTakesFaultsArmedFromOutside(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")
	for _, tt := range []struct {
		keys     string
		messages string
		second   string
	}{
		{"false", ": 2 message(s)\n", "    ✓ #2 ok on worker "},
		{"true", ": 1 message(s)\n", "    ✓ #2 ok key ik_"},
	} {
		scn := filepath.Join(dir, "armed-"+tt.keys+".yaml")
		writeInvoiceScenario(t, scn, `name: armed
title: "A fault armed from outside"
teaches: "The explorer's hotkeys reach Temporal's activities."
execution: exec_ARMED_`+tt.keys+`
policy:
  keys: `+tt.keys+`
  retry: {initial: 50ms, backoff: 1, max_attempts: 3, timeout: 1s}
`, "")
		var w worker.Worker
		var armed []fault.Point
		var out syncBuf
		// Told live: when the world sees attempt 2, run has already told
		// attempt 1, the fault it took, what the world did and how it ended.
		var atRetry string
		err := runAgent(context.Background(), &out, agentRun{
			cluster:  clusterFlags{address: s.Address(), namespace: "default", timeout: 10 * time.Second},
			scenario: scn, dbPath: db, taskQueue: agentflow.TaskQueue,
			observe: func(a world.Activity) {
				if a.Attribution.Attempt == 2 && atRetry == "" {
					atRetry = out.String()
				}
			},
			ready: func(otlpURL, faultsURL string) {
				// From outside, as an attached explorer or CLI does.
				ctl, err := control.Dial(db)
				if err != nil {
					t.Errorf("attach to run's database: %v", err)
					return
				}
				ctl.Arm(fault.TimeoutAfterEffect)
				armed = ctl.Armed()
				ctl.Close()
				tp, err := interceptor.NewTracerProvider(context.Background(), otlpURL)
				if err != nil {
					t.Error(err)
					return
				}
				t.Cleanup(func() { tp.Shutdown(context.Background()) })
				w = worker.New(c, agentflow.TaskQueue, worker.Options{
					Interceptors: []temporalinterceptor.WorkerInterceptor{interceptor.New(interceptor.Options{TracerProvider: tp})},
				})
				agentflow.Register(w, agentflow.Options{FaultsURL: faultsURL})
				if err := w.Start(); err != nil {
					t.Error(err)
				}
			},
		})
		if w != nil {
			w.Stop()
		}
		got := out.String()
		if err != nil {
			t.Fatalf("keys %s: run: %v\n%s", tt.keys, err, got)
		}
		if len(armed) != 1 || armed[0] != fault.TimeoutAfterEffect {
			t.Errorf("keys %s: armed on run's host: %v", tt.keys, armed)
		}
		for _, want := range []string{
			"[fault]     ⚡ timeout after the effect (response lost) on step-4 attempt 1 (armed from the explorer)\n",
			"  5 send_invoice_email (step-4)\n    ⏱ #1 timeout ⚡timeout-after-effect",
			tt.second,
			tt.messages,
			"completed\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("keys %s: run output lacks %q:\n%s", tt.keys, want, got)
			}
		}
		if k := strings.TrimSuffix(keyOf(got), ":"); tt.keys == "true" && (k == "" || strings.Count(got, "key ik_"+k) != 3) {
			t.Errorf("keys true: both attempts and the one message should carry the same key:\n%s", got)
		}
		inOrder(t, atRetry,
			"[agent]     step-4: send_invoice_email(to=jordan@acme.dev, subject=\"Your June invoice\"), activity 5\n",
			"[tool]      attempt 1 of send_invoice_email (activity 5, step-4) on worker ",
			"[fault]     ⚡ timeout after the effect (response lost) on step-4 attempt 1 (armed from the explorer)\n",
			"[mail-api]  delivered id=msg_",
			"[tool]      ⏱ attempt 1 of send_invoice_email (activity 5, step-4): timeout after ",
			"[tool]      attempt 2 of send_invoice_email (activity 5, step-4) on worker ")
		if strings.Contains(atRetry, "history: ") {
			t.Errorf("keys %s: the summary came before the workflow ended:\n%s", tt.keys, atRetry)
		}
		if strings.Contains(got, "#3") {
			t.Errorf("keys %s: the armed fault should apply to one attempt only:\n%s", tt.keys, got)
		}
	}
	if _, err := control.Dial(db); err == nil {
		t.Error("run's host should be gone once run ended")
	}
	// The explorer on the database marks the attempt that took the fault
	// ⚡, as it marks a native trace's, and says so in its details.
	h, err := engine.Open(engine.Config{DBPath: db, Scenarios: fixtures.FS, Imports: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	xs, _, err := h.Executions(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, x := range xs {
		if x.Imported == rltemporal.ImportedFormat && strings.HasPrefix(x.Scenario, agentflow.WorkflowName) {
			last = x.ID
			break
		}
	}
	m := tui.New(tui.Options{Source: engine.NewLocal(h)})
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 40))
	tm.Type("/" + last) // the workflow, not the spans' own OTLP execution
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		v := string(b)
		return strings.Contains(v, "Trace  "+last[:20]) && strings.Contains(v, "⏱ timeout") && strings.Contains(v, "⚡timeout-after-effect")
	}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Quit()
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// A crash armed from outside (the explorer's c) kills the worker process
// running the activity right after its effect: run starts another worker,
// Temporal's start-to-close timeout gives attempt 1 up, attempt 2 sends
// again; without keys, two invoices (window 2).
func TestRunArmedCrashKillsTheWorker(t *testing.T) {
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	t.Setenv(envAsMain, "1") // the workers run starts are this binary
	dir := t.TempDir()
	db := filepath.Join(dir, "retrylab.db")
	scn := filepath.Join(dir, "armed.yaml")
	writeInvoiceScenario(t, scn, `name: armed-crash
title: "A crash armed from outside"
teaches: "The explorer's c kills the worker running the activity."
execution: exec_ARMED_CRASH
policy:
  keys: false
  retry: {initial: 50ms, backoff: 1, max_attempts: 3, timeout: 1s}
`, "")
	var out syncBuf
	// The attached process holds run's host, as the explorer does: run
	// waits for it before closing, and it reads the workflow's trace
	// through the host meanwhile.
	var seen []string
	var seenErr error
	released := make(chan struct{})
	attached := false
	err = runAgent(context.Background(), &out, agentRun{
		cluster:  clusterFlags{address: s.Address(), namespace: "default", timeout: 10 * time.Second},
		scenario: scn, dbPath: db, taskQueue: agentflow.TaskQueue, workers: 1,
		ready: func(string, string) {
			attached = true
			ctl, err := control.Dial(db)
			if err != nil {
				t.Errorf("attach to run's database: %v", err)
				close(released)
				return
			}
			if err := ctl.Hold(); err != nil {
				t.Errorf("hold run's host: %v", err)
			}
			ctl.Arm(fault.CrashAfterEffect)
			go func() {
				defer close(released)
				defer ctl.Close()
				for !strings.Contains(out.String(), "waiting for them before closing") {
					time.Sleep(20 * time.Millisecond)
				}
				got := out.String()
				i := strings.Index(got, "outbox of ")
				if i < 0 {
					seenErr = fmt.Errorf("no outbox line")
					return
				}
				exec := strings.TrimSuffix(strings.Fields(got[i+len("outbox of "):])[0], ":")
				evs, err := ctl.ImportedEvents(exec)
				for _, e := range evs {
					seen = append(seen, fmt.Sprintf("%s %s", e.Kind, e.Outcome))
				}
				seenErr = err
			}()
		},
	})
	if attached {
		<-released // run closed its host only once the attached process let go
	}
	got := out.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, got)
	}
	if seenErr != nil || !strings.Contains(strings.Join(seen, "\n"), "timeout") {
		t.Errorf("the attached process read the workflow's trace: %v %q", seenErr, seen)
	}
	inOrder(t, got,
		"[fault]     ⚡ crash after the effect, before recording on step-4 attempt 1 (armed from the explorer)\n",
		"[mail-api]  delivered id=",
		"ended (signal: killed); starting another\n",
		"[tool]      ☠ attempt 1 of send_invoice_email (activity 5, step-4): started, no end recorded (its worker died?)\n",
		"[tool]      attempt 2 of send_invoice_email (activity 5, step-4) on worker ",
		"[tool]      ✓ attempt 2 of send_invoice_email (activity 5, step-4): ok after ")
	for _, want := range []string{
		"[fault]     ⚡ crash after the effect, before recording on step-4 attempt 1 (armed from the explorer)\n",
		"ended (signal: killed); starting another",
		"    ⏱ #1 timeout ⚡crash-after-effect on worker ",
		"    ✓ #2 ok on worker ",
		": 2 message(s)\n",
		"completed\n",
		"1 retrylab process(es) attached to " + db + "; waiting for them before closing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("run output lacks %q:\n%s", want, got)
		}
	}
}

// invoiceTurn is the scenario's one tool and the turn that calls it once:
// step-4 sends the June invoice by mail, keyed.
const invoiceTurn = `tools:
  send_invoice_email: {service: mail, op: send, kind: keyed}
turns:
  - text: "Sending the June invoice to jordan@acme.dev"
    calls:
      - step: step-4
        tool: send_invoice_email
        args: {to: jordan@acme.dev, subject: "Your June invoice", body: "…"}
`

// writeInvoiceScenario writes to file a scenario of head (name, policy, ...),
// then invoiceTurn, then tail (faults, expect; may be empty).
func writeInvoiceScenario(t *testing.T, file, head, tail string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(head+invoiceTurn+tail), 0o600); err != nil {
		t.Fatal(err)
	}
}
