package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func fixturePaths(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("fixtures/otlp/*.json*")
	if err != nil || len(paths) != 4 {
		t.Fatalf("fixtures %v %v", paths, err)
	}
	for i, p := range paths {
		abs, _ := filepath.Abs(p)
		paths[i] = abs
	}
	return paths
}

func TestCLIImportAndAudit(t *testing.T) {
	db := newDB(t)
	r := ok(t, db, append([]string{"import"}, fixturePaths(t)...)...)
	has(t, r, "adk-send-twice.json: OTLP/JSON, 9 spans imported -> otlp-conv-sess-adk-mail-1",
		"openinference-charge.jsonl: OTLP/JSON Lines, 6 spans imported -> otlp-conv-sess-oi-7")
	r = ok(t, db, append([]string{"import"}, fixturePaths(t)[0])...)
	has(t, r, "0 spans imported, 9 already there")

	r = must(t, 1, db, "audit")
	has(t, r, "audit of 4 executions: 11 side-effecting attempts",
		"DUPLICATE send_email {\"subject\": \"Invoice 42\", \"to\": \"ana@example.com\"}",
		"ref a000000000000006", "ref a000000000000009",
		"POSSIBLE  charge_card", "ABSORBED  create_ticket", "key tk-77",
		"2 duplicate, 1 possible, 1 absorbed")
	if msg := oneLineError(t, r); msg != "retrylab: audit: 2 duplicate effect(s) found" {
		t.Errorf("stderr %q", msg)
	}

	r = must(t, 1, db, "audit", "--json")
	var rep struct {
		Findings []struct {
			Grade    string `json:"grade"`
			Tool     string `json:"tool"`
			Attempts []struct {
				Ref string `json:"ref"`
			} `json:"attempts"`
		} `json:"findings"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(rep.Findings) != 4 || rep.Findings[0].Grade != "duplicate" || rep.Counts["possible"] != 1 {
		t.Errorf("%+v", rep)
	}

	r = must(t, 1, db, "audit", "--markdown")
	has(t, r, "# Effect audit", "## 1. duplicate: `send_email`", "| ✓ ok |")

	// Narrow the effects: only the charge, graded possible, which does not fail a CI gate.
	r = ok(t, db, "audit", "--effects", "charge_*")
	has(t, r, "POSSIBLE  charge_card", "0 duplicate, 1 possible, 0 absorbed")
	hasNot(t, r, "send_email")
	r = ok(t, db, "audit", "otlp-4bf92f3577b34da6a3ce929d0e0e4736")
	has(t, r, "audit of 1 executions", "0 duplicate, 0 possible, 1 absorbed")

	oneLineError(t, must(t, 2, db, "audit", "--effects", "[bad"))
	oneLineError(t, must(t, 2, db, "audit", "--json", "--markdown"))
	oneLineError(t, must(t, 1, db, "audit", "nope"))
	// Imported executions are not held to the simulated providers' ledger.
	r = ok(t, db, "check")
	has(t, r, "0 executions")
}

func TestCLIImportBadFiles(t *testing.T) {
	db := newDB(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"a000000000000001","name":"x","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000"}]}]}]}`
	cases := []struct{ file, want string }{
		{write("broken.json", `{"resourceSpans": [`), "broken.json: not OTLP/JSON"},
		{write("badid.json", strings.Replace(good, "a000000000000001", "a0001", 1)), "badid.json: not OTLP/JSON"},
		{write("lines.jsonl", good+"\n"+strings.Replace(good, `"1790607001000000000"`, `"1790606000000000000"`, 1)+"\n"), "lines.jsonl: line 2: span a000000000000001: ends 16m40s before it starts"},
		{write("logs.json", `{"resourceLogs":[]}`), "logs.json: no spans"},
		{write("empty.pb", ""), "empty.pb: empty file"},
		{filepath.Join(dir, "missing.json"), "missing.json: no such file"},
	}
	for _, c := range cases {
		r := must(t, 1, db, "import", c.file)
		if msg := oneLineError(t, r); !strings.Contains(msg, c.want) {
			t.Errorf("%s: stderr %q, want %q", c.file, msg, c.want)
		}
	}
	// Nothing of the failed files is in the database; a good file after a bad one still loads.
	r := must(t, 1, db, "import", cases[0].file, write("good.json", good))
	has(t, r, "good.json: OTLP/JSON, 1 spans imported -> otlp-5b8efff798038103d269b633813fc60c")
	ok(t, db, "check")
}

// The fixtures load with pdata's own unmarshaler: they are OTLP, not a
// dialect of ours.
func TestFixturesAreOTLP(t *testing.T) {
	for _, p := range fixturePaths(t) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if !strings.HasSuffix(p, ".jsonl") {
				line = string(raw)
			}
			if _, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line)); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			if !strings.HasSuffix(p, ".jsonl") {
				break
			}
		}
	}
}
