package main

import (
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
	src, err := os.ReadFile(filepath.Join("fixtures", "crash.yaml"))
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
	has(t, r, "nothing in common: no call of naive matches one of natural-idempotency by step id or by tool and arguments",
		"≠  r1 t1  step-4 send_invoice_email", "tool send_invoice_email vs record_invoice",
		"effects  naive: 2 messages to jordan@acme.dev; natural-idempotency: 0",
		"effects  naive: 0 CRM rows (0 writes); natural-idempotency: 1 (2)")
	has(t, ok(t, db, "diff", "--help"), "Usage:\n  retrylab diff A B", "lined up")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "exec_NOPE", "exec_7K2Q"}, 1, "retrylab: diff A: no such execution: exec_NOPE in " + db},
		{[]string{"diff", "exec_7K2Q", "exec_01H8"}, 1, "retrylab: diff B: no such execution: exec_01H8 in " + db},
		{[]string{"diff", "exec_7K2Q"}, 2, "retrylab diff needs two executions, A and B (see --help)"},
		{[]string{"diff", "trace.json#abc", "exec_7K2Q"}, 1, "diff trace.json#abc: comparing an execution of a trace file (trace.json#ID) is not supported yet"},
		{[]string{"diff", "exec_7K2Q", "exec_8NI1", "--json", "--markdown"}, 2, "--json and --markdown exclude each other"},
	} {
		r := rl(t, db, tt.args...)
		msg := oneLineError(t, r)
		if r.code != tt.code || !strings.Contains(msg, tt.want) {
			t.Errorf("want exit %d and %q\n%s", tt.code, tt.want, r)
		}
		if r.stdout != "" {
			t.Errorf("an error printed on stdout\n%s", r)
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
		has(t, ok(t, db, "show", id, "--markdown"), "## What the fix changes", "key-the-intent-fixed fixes key-the-intent:", line,
			"`retrylab diff exec_2KT1 exec_2KT2` lines the two up call by call.")
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
