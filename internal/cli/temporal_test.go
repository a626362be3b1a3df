package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func temporalFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "fixtures/temporal", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// import recognises Temporal histories by their content, beside OTLP
// files, and a bad one fails alone with a one-line error; audit then finds
// the confirmation sent in both runs of the continue-as-new chain.
func TestCLIImportTemporalAndAudit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	run1, run2 := temporalFixture(t, "order-run1.cli.json"), temporalFixture(t, "order-run2.ui.json")
	bad := temporalFixture(t, "bad-unknown-event-type.json")
	r := must(t, 1, db, "import", run1, bad, run2)
	has(t, r,
		run1+": Temporal history JSON, 41 events of run 3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001 imported -> temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001",
		run2+": Temporal history JSON (Web UI), 11 events of run 3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1002 imported -> temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001")
	want := "retrylab: import " + bad + `: line 234: event 13: unknown event type "EVENT_TYPE_WORKFLOW_EXECUTION_TIME_TRAVELLED" (written by a newer Temporal server than this retrylab reads; not marked workerMayIgnore)`
	if msg := strings.TrimSpace(r.stderr); msg != want {
		t.Errorf("stderr %q\nwant   %q", msg, want)
	}
	r = ok(t, db, "import", run2)
	has(t, r, "0 events of run 3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1002 imported, 11 already there")

	r = must(t, 1, db, "audit")
	has(t, r, "audit of 1 execution:",
		`DUPLICATE SendConfirmation {"order": 1042, "to": "ana@example.com"}`,
		`call 12 attempt 1  ref event 13  error "start-to-close timeout"`,
		"call 12 attempt 2  ref event 13",
		"call 5@r2e5 attempt 1  ref run 2 event 6",
		"1 duplicate, 0 possible, 0 absorbed")
	hasNot(t, r, "ChargeCard", "RefundPayment")

	// Within run 1 alone: the attempt that timed out, then the one that
	// succeeded, is the article's first window.
	db1 := newDB(t)
	ok(t, db1, "import", run1)
	r = ok(t, db1, "audit", "--effects", "send_*")
	has(t, r, "POSSIBLE  SendConfirmation", "an attempt with an unknown outcome was followed by another", "0 duplicate, 1 possible, 0 absorbed")
}

// show prints an imported workflow as the fold sees it: both runs of the
// chain, the attempts Temporal did not keep with the last failure, notes.
func TestCLIShowTemporal(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "import", temporalFixture(t, "order-run1.cli.json"), temporalFixture(t, "order-run2.ui.json"))
	r := ok(t, db, "show", "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001")
	has(t, r, "scenario OrderWorkflow  completed  runs 2  events 52",
		"⋯ attempts 1-2  attempts the source did not keep  —  event 7  HTTPError: card service answered 503",
		"✓ attempt 3  ok  400ms  event 7",
		"⏱ attempt 4  timeout  2s  event 20  heartbeat timeout",
		"noted RefundPayment timed out before an attempt started: schedule-to-close timeout",
		"✓ run ended continued as new",
		"+89.600s  run 2",
		"✓ attempt 1  ok  300ms  run 2 event 6",
		"✓ execution completed")
}

// The worker interceptor's spans of run 1, with a fault retrylab injected
// into attempt 1 of ChargeCard (a crash that killed its worker, known from
// the marker sent as it was taken) and 2 (on the attempt's own span):
// show marks those attempts ⚡, as it marks a native trace's.
func TestCLIShowTemporalRecordedFaults(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const run = "3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	span := func(id, name string, attempt, at int, status string, kv ...string) string {
		attrs := []string{"gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "ChargeCard", "gen_ai.tool.call.id", "5",
			"gen_ai.conversation.id", "temporal-run-" + run, "temporal.run_id", run, "temporal.activity_id", "5",
			"retrylab.attempt", fmt.Sprint(attempt)}
		attrs = append(attrs, kv...)
		var list []string
		for i := 0; i+1 < len(attrs); i += 2 {
			list = append(list, fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, attrs[i], attrs[i+1]))
		}
		code := 1
		if status == "error" {
			code = 2
		}
		start := int64(1772445600+at) * 1e9
		return fmt.Sprintf(`{"traceId":"0123456789abcdef0123456789abcdef","spanId":%q,"name":%q,"kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s],"status":{"code":%d}}`,
			id, name, start, start+1e9, strings.Join(list, ","), code)
	}
	spans := []string{
		span("c000000000000001", "retrylab.attempt.started", 1, 0, "ok", "retrylab.phase", "started", "temporal.worker", "41@box"),
		span("c000000000000002", "retrylab.fault.injected", 1, 0, "ok", "retrylab.phase", "fault",
			"retrylab.faults", "crash-after-effect", "retrylab.fault.source", "armed from the explorer"),
		span("c000000000000003", "execute_tool ChargeCard", 2, 2, "error", "retrylab.faults", "server-error", "error.type", "HTTPError"),
		span("c000000000000004", "execute_tool ChargeCard", 3, 3, "ok"),
	}
	file := filepath.Join(t.TempDir(), "spans.json")
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"worker"}}]},"scopeSpans":[{"spans":[` +
		strings.Join(spans, ",") + `]}]}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, db, "import", file, temporalFixture(t, "order-run1.cli.json"))
	r := ok(t, db, "show", "temporal-"+run)
	has(t, r, "⏱ attempt 1  timeout  <1ms  span c000000000000001  ⚡crash-after-effect  started, no end recorded (its worker died?)",
		"✖ attempt 2  failed  1s  span c000000000000003  ⚡server-error",
		"✓ attempt 3  ok  400ms  event 7")
	hasNot(t, r, "⋯ attempts 1-2")
}

// run --engine temporal hands the scenario to retrylab-temporal; what it
// cannot do says so in one line.
func TestCLIRunEngineTemporal(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	msg := oneLineError(t, must(t, 2, db, "run", "naive", "--engine", "spark"))
	if !strings.Contains(msg, `unknown --engine "spark" (valid: local, temporal)`) {
		t.Errorf("bad engine: %q", msg)
	}
	msg = oneLineError(t, must(t, 2, db, "run", "naive", "--engine", "temporal", "--keys", "off"))
	if !strings.Contains(msg, "--keys and --journal are for the local engine") {
		t.Errorf("--keys with temporal: %q", msg)
	}
	if _, err := exec.LookPath("retrylab-temporal"); err == nil {
		return // installed here: the temporal module's tests run it
	}
	msg = oneLineError(t, must(t, 1, db, "run", "naive", "--engine", "temporal"))
	if !strings.Contains(msg, "run --engine temporal needs the retrylab-temporal command on PATH") {
		t.Errorf("missing retrylab-temporal: %q", msg)
	}
}

// show of Temporal's smorgasbord history, whose clocks disagree (a signal
// stamped before the workflow task that saw it): the times shown never go
// backwards, the lines keep the source's order, and a line stamped earlier
// than the one above says its own stamp.
func TestCLIShowTemporalTimesInOrder(t *testing.T) {
	t.Parallel()
	var file string
	for _, d := range []string{"../../../shared/real-traces", "../../../../shared/real-traces", os.Getenv("RETRYLAB_REAL_TRACES")} {
		if p, err := filepath.Abs(filepath.Join(d, "temporal-smorgasbord.json")); d != "" && err == nil && fileExists(p) {
			file = p
		}
	}
	if file == "" {
		t.Skip("temporal-smorgasbord.json is not here (RETRYLAB_REAL_TRACES)")
	}
	db := newDB(t)
	ok(t, db, "import", file)
	r := ok(t, db, "show")
	has(t, r, "+0.029s       noted signal activityStarted received  (stamped +0.023s)",
		"+0.035s       noted signal delivered to 4951fb36-36e1-414c-a359-ae6f70541afe  (stamped +0.030s)")
	last := -1.0
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		var at float64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "+%fs", &at); err != nil {
			t.Fatalf("no time on %q: %v", l, err)
		}
		if at < last {
			t.Errorf("the time goes backwards at %q (after +%.3fs)", l, last)
		}
		last = at
	}
}

// endedAs writes the in-flight SendEmail history of run id with a close
// event of type kind (attributes attr) after it, and returns its path.
func endedAs(t *testing.T, id, kind, attr string) string {
	t.Helper()
	var doc struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(readFile(t, temporalFixture(t, "inflight-sendemail.cli.json")), &doc); err != nil {
		t.Fatal(err)
	}
	started := doc.Events[0]["workflowExecutionStartedEventAttributes"].(map[string]any)
	started["originalExecutionRunId"], started["firstExecutionRunId"] = id, id
	doc.Events = append(doc.Events, map[string]any{"eventId": "7", "eventTime": "2026-03-02T10:00:20Z", "eventType": kind,
		"taskId": "1048583", attr: map[string]any{}})
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), id+".json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// show says an imported workflow's end as Temporal gave it, once
// ("execution cancelled", not "execution ended cancelled workflow
// cancelled"), and an attempt's time only where the source kept one: "—"
// for attempts not kept and the one in flight, not "0s".
func TestCLIShowTemporalEndsAndAttempts(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const cancelled, timedOut = "5a7e9c20-1b2d-4e3f-8a90-0c1d2e3f7002", "5a7e9c20-1b2d-4e3f-8a90-0c1d2e3f7003"
	ok(t, db, "import", endedAs(t, cancelled, "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED", "workflowExecutionCanceledEventAttributes"),
		endedAs(t, timedOut, "EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT", "workflowExecutionTimedOutEventAttributes"),
		temporalFixture(t, "inflight-sendemail.cli.json"))
	for id, end := range map[string]string{cancelled: "✖ execution cancelled\n", timedOut: "✖ execution timed out\n"} {
		r := ok(t, db, "show", "temporal-"+id)
		has(t, r, end, "⋯ attempts 1-2  attempts the source did not keep  —  event 6", "… attempt 3  in flight  —  event 6")
		hasNot(t, r, "workflow cancelled", "workflow timed out", "execution ended", "  0s  ")
	}
	r := ok(t, db, "audit", "temporal-5a7e9c20-1b2d-4e3f-8a90-0c1d2e3f7001")
	has(t, r, "POSSIBLE  SendEmail", "the repeat is in flight", "⋯ not-kept ", "call 5 attempts 1-2  ref event 6", "… in flight  ", "call 5 attempt 3  ref event 6")
	r = ok(t, db, "audit", "--json", "temporal-5a7e9c20-1b2d-4e3f-8a90-0c1d2e3f7001")
	has(t, r, `"attempt": 2,`, `"not_kept": 2,`, `"outcome": "not-kept"`, `"outcome": "in flight"`)
	hasNot(t, r, "attempts the source did not keep")
}

// readFile is the file's bytes.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
