package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The article's comparison, as a user runs it: naive and safe in one
// database, then `retrylab diff`: two messages against one, and where the
// runs part.
func TestCLIDiffNaiveVersusSafe(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	ok(t, db, "run", "safe")
	ok(t, db, "run", "safe") // the rerun: answered from the journal
	r := ok(t, db, "diff", "exec_7K2Q", "exec_01H8")
	has(t, r,
		"A  exec_7K2Q naive · none · ✓ · 1 run, 1 call, 2 attempts",
		"B  exec_01H8 safe · keys+journal · ✓ · 2 runs, 1 call, 2 attempts, 1 ↺, 1 ⟲",
		"≠  r1 t1  step-4 send_invoice_email  #1 ◆+1 #2 ✓+1  │ r1 t1  step-4 send_invoice_email",
		"#2 ✓ vs ↺; 2 vs 1 effects",
		"⟲ step-4 replayed from journal (run 1)",
		"they part at row 1, step-4 send_invoice_email: #2 ✓ vs ↺",
		"effects  naive: 2 messages to jordan@acme.dev; safe: 1",
		"↺ deduplicated by key",
	)
	// The same the other way round.
	has(t, ok(t, db, "diff", "exec_01H8", "exec_7K2Q"), "effects  safe: 1 message to jordan@acme.dev; naive: 2")

	j := ok(t, db, "diff", "exec_7K2Q", "exec_01H8", "--json")
	var res struct {
		A, B struct {
			Label     string
			Execution string
		}
		Rows []struct {
			A, B *struct {
				Call     string
				Attempts []struct {
					N    int
					Mark string
				}
			}
			Match   string
			Differs bool
		}
		EffectLines []string `json:"effect_lines"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, j)
	}
	if res.A.Execution != "exec_7K2Q" || len(res.Rows) < 2 || res.Rows[0].Match != "step" || !res.Rows[0].Differs ||
		res.Rows[0].B.Attempts[1].Mark != "↺" || res.EffectLines[0] != "naive: 2 messages to jordan@acme.dev; safe: 1" {
		t.Errorf("--json: %+v", res)
	}
	md := ok(t, db, "diff", "exec_7K2Q", "exec_01H8", "--markdown")
	has(t, md, "## naive vs safe", "| ≠ | r1 t1 step-4 send\\_invoice\\_email | #1 ◆+1 #2 ✓+1 |",
		"- Effects: naive: 2 messages to jordan@acme.dev; safe: 1")
}

// Window 2 without and with the defences: the worker killed after the
// send, then resumed. Without a key the resume sends again; with one the
// provider answers from its key store.
func TestCLIDiffCrashVersusSafeAfterCrash(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	src, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "crash.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	safe := strings.NewReplacer("name: crash", "name: safe-after-crash", "exec_9F1Z", "exec_9F1S",
		"keys: false", "keys: true", "journal: false", "journal: true").Replace(string(src))
	file := filepath.Join(t.TempDir(), "safe-after-crash.yaml")
	if err := os.WriteFile(file, []byte(safe), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, 137, db, "run", "crash")
	ok(t, db, "resume", "exec_9F1Z")
	must(t, 137, db, "run", file)
	ok(t, db, "resume", "exec_9F1S")
	r := ok(t, db, "diff", "exec_9F1Z", "exec_9F1S")
	has(t, r,
		"A  exec_9F1Z crash · none · ✓ · 2 runs, 2 calls, 2 attempts, 1 ☠",
		"B  exec_9F1S safe-after-crash · keys+journal · ✓ · 2 runs, 2 calls, 2 attempts, 1 ↺, 1 ☠",
		"=  r1     ☠ worker killed (crash-after-effect)",
		"#2 ✓ vs ↺; 1 vs 0 effects",
		"effects  crash: 2 messages to jordan@acme.dev; safe-after-crash: 1",
	)
	if lines := strings.Split(r.stdout, "\n"); !strings.HasPrefix(lines[4], "=  r1 t1  step-4 send_invoice_email") ||
		strings.Count(lines[4], "#1 ◆+1") != 2 {
		t.Errorf("the first attempts, killed after the send, should be the same on both sides\n%s", r)
	}
}

// Different scenarios may be compared; bad input is one line and a
// non-zero exit.
func TestCLIDiffErrorsAndNothingInCommon(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	ok(t, db, "run", "natural-idempotency")
	r := ok(t, db, "diff", "exec_7K2Q", "exec_8NI1")
	// Calls of different tools stand alone: a row paired as ≠ would be a
	// call they have in common, which the summary denies.
	has(t, r, "nothing in common: no call of naive matches one of natural-idempotency by step id or by tool",
		"<  r1 t1  step-4 send_invoice_email", ">                                                   │ r1 t1  step-5 record_invoice",
		"effects  naive: 2 messages to jordan@acme.dev; natural-idempotency: 0",
		"effects  naive: 0 CRM rows (0 writes); natural-idempotency: 1 (2)")
	hasNot(t, r, "≠  r1 t1", "tool send_invoice_email vs record_invoice")
	has(t, ok(t, db, "diff", "--help"), "Usage:\n  retrylab diff A B", "lined up")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "exec_NOPE", "exec_7K2Q"}, 1, "retrylab: diff A: no such execution: exec_NOPE in " + db},
		{[]string{"diff", "exec_7K2Q", "exec_01H8"}, 1, "retrylab: diff B: no such execution: exec_01H8 in " + db},
		{[]string{"diff", "exec_7K2Q"}, 2, "retrylab diff needs two executions, A and B (see --help)"},
		{[]string{"diff", "exec_7K2Q", "exec_8NI1", "--json", "--markdown"}, 2, "--json and --markdown exclude each other"},
	} {
		if msg := fails(t, tt.code, db, tt.args...); !strings.Contains(msg, tt.want) {
			t.Errorf("%v: want %q, got %q", tt.args, tt.want, msg)
		}
	}
}

// The handout of a mistake or its fix ends with the pair's diff line: with
// both executions in the database, and with only one (the other half is
// run on a scratch database, which leaves this one alone).
func TestCLIShowMarkdownPairDiff(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "key-the-intent")
	ok(t, db, "run", "key-the-intent-fixed")
	line := "diff: key-the-intent: 2 messages to jordan@acme.dev; key-the-intent-fixed: 1 — they part at row 1, step-4 send_invoice_email: #2 ✓ vs ↺; new key at #2 vs the same key; 2 vs 1 effects"
	for _, id := range []string{"exec_2KT2", "exec_2KT1"} {
		r := ok(t, db, "show", id, "--markdown")
		has(t, r, "## What the fix changes", "key-the-intent-fixed fixes key-the-intent:", line,
			"`retrylab diff exec_2KT1 exec_2KT2` lines the two up call by call.")
		// The comparison is part of the handout: its closing note stays last.
		if got := lastLine(r.stdout); !strings.HasPrefix(got, "*Handout written by `retrylab show "+id+" --markdown`") {
			t.Errorf("the handout of %s ends %q, not with its closing note", id, got)
		}
	}
	// No pair, no section.
	ok(t, db, "run", "one-send")
	hasNot(t, ok(t, db, "show", "--markdown"), "## What the fix changes")

	only := newDB(t)
	ok(t, only, "run", "key-the-intent-fixed")
	has(t, ok(t, only, "show", "--markdown"), line,
		"This database holds no execution of key-the-intent: it was run on a scratch database for this comparison.")
	if n := count(ok(t, only, "outbox").stdout, "jordan@acme.dev"); n != 2 {
		t.Errorf("the scratch run touched the database's outbox: %d lines name jordan@acme.dev, want 2 (one message, one summary)", n)
	}
}

// fixture is a fixture file's absolute path (the commands run in the
// database's directory).
func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// adkSendOnce is adk-send-twice.json with the second send refused by the
// provider (409: the idempotency key was used): the fix, as a trace.
func adkSendOnce(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(fixture(t, "otlp/adk-send-twice.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.LastIndex(s, `"status": {},`)
	if i < 0 || !strings.Contains(s[i:], `"parentSpanId": "a000000000000007"`) {
		t.Fatal("adk-send-twice.json no longer ends with the second send_email span")
	}
	s = s[:i] + `"status": {"code": 2, "message": "409 Conflict: idempotency key already used"},` + s[i+len(`"status": {},`):]
	file := filepath.Join(dir, "adk-send-once.json")
	if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Two imported traces, straight from their files: the rows line up by
// tool-call id, and the effects are the audit's inferred ones, per call
// ("1 vs 0 effects") and per tool. The database is never touched.
func TestCLIDiffTraceFiles(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	twice, once := fixture(t, "otlp/adk-send-twice.json"), adkSendOnce(t, filepath.Dir(db))
	r := ok(t, db, "diff", twice, once)
	has(t, r,
		"A  otlp-conv-sess-adk-mail-1 invoke_workflow mail_agent · unknown (imported) · ✓ · 1 run, 3 calls, 3 attempts",
		"=  r1 t1  adk-11111111-0000-4000-8000-000000000002 send_email   #1 ✓+1  │ r1 t1  adk-11111111-0000-4000-8000-000000000002 send_email   #1 ✓+1",
		"≠  r1 t2  adk-11111111-0000-4000-8000-000000000003 send_email   #1 ✓+1  │ r1 t2  adk-11111111-0000-4000-8000-000000000003 send_email   #1 ✖    #1 ✓ vs ✖; 1 vs 0 effects",
		"they part at row 3, adk-11111111-0000-4000-8000-000000000003 send_email: #1 ✓ vs ✖; 1 vs 0 effects",
		"effects  adk-send-twice.json: 2 send_email calls took effect (inferred); adk-send-once.json: 1",
	)
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("diff of two files touched the database %s: %v", db, err)
	}
	j := ok(t, db, "diff", twice, once+"#otlp-conv-sess-adk-mail-1", "--json")
	var res struct {
		A, B struct {
			Label   string
			Effects struct {
				Inferred bool
				Calls    []struct {
					Target string
					N      int
				}
			}
		}
		Rows []struct {
			A, B *struct {
				Attempts []struct {
					Effects  int
					Inferred bool
				}
			}
			Why string
		}
		EffectLines []string `json:"effect_lines"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, j)
	}
	if res.A.Label != "adk-send-twice.json" || res.B.Label != "adk-send-once.json#otlp-conv-sess-adk-mail-1" ||
		!res.A.Effects.Inferred || len(res.A.Effects.Calls) != 1 || res.A.Effects.Calls[0].N != 2 || res.B.Effects.Calls[0].N != 1 ||
		len(res.Rows) != 4 || res.Rows[2].Why != "#1 ✓ vs ✖; 1 vs 0 effects" ||
		res.Rows[2].A.Attempts[0].Effects != 1 || !res.Rows[2].A.Attempts[0].Inferred || res.Rows[2].B.Attempts[0].Effects != 0 {
		t.Errorf("--json: %+v", res)
	}
	md := ok(t, db, "diff", twice, once, "--markdown")
	has(t, md, "## adk-send-twice.json vs adk-send-once.json",
		"| ≠ | r1 t2 adk-11111111-0000-4000-8000-000000000003 send\\_email | #1 ✓+1 | r1 t2 adk-11111111-0000-4000-8000-000000000003 send\\_email | #1 ✖ | #1 ✓ vs ✖; 1 vs 0 effects |",
		"- Effects: adk-send-twice.json: 2 send\\_email calls took effect (inferred); adk-send-once.json: 1")

	// Two Temporal histories: runs 1 and 2 of one workflow, each file
	// alone. SendConfirmation, sent in both runs, lines up by activity
	// type and arguments, though its event ids differ.
	r = ok(t, db, "diff", fixture(t, "temporal/order-run1.cli.json"), fixture(t, "temporal/order-run2.ui.json"))
	has(t, r,
		"A  temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001 OrderWorkflow · Temporal · … · 1 run, 7 calls, 10 attempts",
		"B  temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001 OrderWorkflow · Temporal · ✓ · 1 run, 1 call, 1 attempt",
		"≠  r1 t2  12 SendConfirmation        #1 ⋯ #2 ✓+1  │ r1 t1  5 SendConfirmation  #1 ✓+1  2 vs 1 attempts; #1 ⋯ vs ✓",
		"<  r1 t1  5 ChargeCard               #2 ⋯ #3 ✓+1  │                                    only in A",
		"effects  order-run1.cli.json: 1 ChargeCard call took effect (inferred); order-run2.ui.json: 0",
		"effects  order-run1.cli.json: 1 SendConfirmation call took effect (inferred); order-run2.ui.json: 1 (outcome unknown: 1 vs 0)",
	)
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("diff of two files touched the database %s: %v", db, err)
	}
}

// Imported executions in the database diff from their spans and Temporal
// histories (not from a history retrylab recorded), against each other or
// a file; and the same while another retrylab hosts the database.
func TestCLIDiffImportedExecutions(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "import", fixture(t, "otlp/adk-send-twice.json"), fixture(t, "otlp/openinference-charge.jsonl"),
		fixture(t, "temporal/order-run1.cli.json"))
	once := adkSendOnce(t, t.TempDir())
	cases := [][]string{
		{"diff", "otlp-conv-sess-adk-mail-1", once},
		{"diff", "otlp-conv-sess-oi-7", "otlp-conv-sess-adk-mail-1"},
		{"diff", "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001", fixture(t, "temporal/order-run2.ui.json"), "--markdown"},
	}
	alone := make([]ran, len(cases))
	for i, args := range cases {
		alone[i] = ok(t, db, args...)
	}
	has(t, alone[0], "≠  r1 t2  adk-11111111-0000-4000-8000-000000000003 send_email   #1 ✓+1  │",
		"effects  otlp-conv-sess-adk-mail-1: 2 send_email calls took effect (inferred); adk-send-once.json: 1")
	has(t, alone[1], "A  otlp-conv-sess-oi-7 billing_agent · unknown (imported) · ✓ · 1 run, 2 calls, 3 attempts",
		"nothing in common: no call of billing_agent matches one of invoke_workflow mail_agent",
		"effects  billing_agent: 1 charge_card call took effect (inferred); invoke_workflow mail_agent: 0 (outcome unknown: 1 vs 0)",
		"effects  billing_agent: 0 send_email calls took effect (inferred); invoke_workflow mail_agent: 2")
	has(t, alone[2], "## temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001 vs order-run2.ui.json",
		"- Effects: temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001: 1 SendConfirmation call took effect (inferred); order-run2.ui.json: 1 (outcome unknown: 1 vs 0)")

	serve := background(t, db, "serve")
	serve.banner(t)
	for i, args := range cases {
		if r := ok(t, db, args...); r.stdout != alone[i].stdout {
			t.Errorf("%v while serve holds the database differs from without it\n%s\n--- without\n%s", args, r, alone[i].stdout)
		}
	}
	msg := oneLineError(t, rl(t, db, "diff", "otlp-conv-sess-oi-7", "otlp-conv-nope"))
	if want := "retrylab: diff B: no such execution: otlp-conv-nope in " + db; msg != want {
		t.Errorf("through the host: %q, want %q", msg, want)
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// Bad trace files: one line each, a non-zero exit, nothing on stdout.
func TestCLIDiffTraceFileErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	dir := filepath.Dir(db)
	semconv := fixture(t, "otlp/genai-semconv.json")
	notTrace := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTrace, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two documents as JSON Lines: a file with two executions.
	var two bytes.Buffer
	for _, f := range []string{semconv, fixture(t, "otlp/openllmetry-ticket.json")} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&two, src); err != nil {
			t.Fatal(err)
		}
		two.WriteByte('\n')
	}
	traces := filepath.Join(dir, "traces")
	if err := os.Mkdir(traces, 0o700); err != nil {
		t.Fatal(err)
	}
	twoFile := filepath.Join(dir, "two.jsonl")
	if err := os.WriteFile(twoFile, two.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "trace.json#abc", "exec_7K2Q"}, 1, "retrylab: diff A: trace.json: no such trace file"},
		{[]string{"diff", "exec_7K2Q", "missing.json"}, 1, "retrylab: diff B: missing.json: no such trace file, nor an execution in " + db},
		{[]string{"diff", fixture(t, "temporal/bad-truncated.json"), "exec_7K2Q"}, 1,
			"retrylab: diff A: read " + fixture(t, "temporal/bad-truncated.json") + ": not valid JSON (cut short?)"},
		{[]string{"diff", "exec_7K2Q", notTrace}, 1, "retrylab: diff B: read " + notTrace + ": neither OTLP/JSON"},
		{[]string{"diff", semconv + "#otlp-nope", semconv}, 1,
			"retrylab: diff A: no execution otlp-nope in " + semconv + "; it holds otlp-conv-conv-9"},
		{[]string{"diff", twoFile, semconv}, 1,
			"retrylab: diff A: " + twoFile + " holds 2 executions; name one as " + twoFile + "#ID: otlp-4bf92f3577b34da6a3ce929d0e0e4736, otlp-conv-conv-9"},
		// A directory given as a trace file is said to be one, as import says it.
		{[]string{"diff", "traces", "exec_7K2Q"}, 1, "retrylab: diff A: traces is a directory, not a trace file, nor an execution in " + db + "; name a file in it"},
		{[]string{"diff", "exec_7K2Q", traces + "/"}, 1, "retrylab: diff B: " + traces + "/ is a directory, not a trace file, nor an execution in " + db},
		{[]string{"diff", "traces#abc", "exec_7K2Q"}, 1, "retrylab: diff A: traces is a directory, not a trace file"},
		{[]string{"diff", "#abc", "exec_7K2Q"}, 2, `retrylab: diff A: "#abc": want FILE#ID`},
		{[]string{"diff", semconv, "exec_NOPE"}, 1, "retrylab: diff B: no such execution: exec_NOPE in " + db},
	} {
		if msg := fails(t, tt.code, db, tt.args...); !strings.HasPrefix(msg, tt.want) {
			t.Errorf("%v: want %q, got %q", tt.args, tt.want, msg)
		}
	}
	// A file with two executions, one named: it diffs.
	has(t, ok(t, db, "diff", twoFile+"#otlp-conv-conv-9", semconv),
		"they do not part: every call, attempt and outcome is the same")
}
