package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/store"
)

// rlIn is rl with standard input (none, /dev/null, when stdin is nil).
func rlIn(t *testing.T, db string, stdin []byte, args ...string) ran {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	cmd.Dir = filepath.Dir(db)
	cmd.Env = cliEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := ran{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("retrylab %v: %v", args, err)
	}
	return r
}

// brokenJSONL is a JSON Lines file whose first two lines are good traces
// (of executions otlp-aaaa… and otlp-bbbb…) and whose third is cut short.
func brokenJSONL(t *testing.T, dir string) (path string, execs []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "otlp", "openllmetry-ticket.json"))
	if err != nil {
		t.Fatal(err)
	}
	var line bytes.Buffer
	if err := json.Compact(&line, doc); err != nil {
		t.Fatal(err)
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	var file strings.Builder
	for _, id := range []string{strings.Repeat("a", 32), strings.Repeat("b", 32)} {
		file.WriteString(strings.ReplaceAll(line.String(), trace, id) + "\n")
		execs = append(execs, "otlp-"+id)
	}
	file.WriteString(`{"resourceSpans": [{"scopeSpans": [` + "\n")
	path = filepath.Join(dir, "broken.jsonl")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, execs
}

// import, audit and export work while another retrylab (the explorer, here
// serve) holds the database, through it, and print, write and exit exactly
// as they do on the same data without it. An import that fails half way
// leaves nothing behind; what an import creates is visible through the
// host, and its subscribers (a running explorer) hear of it.
func TestCLITracesCommandsAttach(t *testing.T) {
	t.Parallel()
	alone, hosted := newDB(t), newDB(t)
	must(t, 0, alone, "run", "naive")
	data, err := os.ReadFile(alone)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosted, data, 0o600); err != nil {
		t.Fatal(err)
	}
	abs := func(parts ...string) string {
		p, err := filepath.Abs(filepath.Join(parts...))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	otlpDir, temporalDir := abs(repoRoot, "fixtures", "otlp"), abs(repoRoot, "fixtures", "temporal")
	broken, brokenExecs := brokenJSONL(t, t.TempDir())
	brokenBytes, _ := os.ReadFile(broken)
	uiHistory, err := os.ReadFile(filepath.Join(temporalDir, "order-run2.ui.json"))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		args  []string
		stdin []byte
		files []string // files the command writes, beside the database
	}
	steps := []step{
		{args: []string{"import", filepath.Join(otlpDir, "adk-send-twice.json"), filepath.Join(otlpDir, "genai-semconv.json"), filepath.Join(otlpDir, "openinference-charge.jsonl")}},
		{args: []string{"import", filepath.Join(temporalDir, "order-run1.cli.json"), filepath.Join(temporalDir, "bad-cut-short.json")}},
		{args: []string{"import", "-"}, stdin: uiHistory},
		{args: []string{"import", broken}},
		{args: []string{"import", "-"}, stdin: brokenBytes},
		{args: []string{"import", filepath.Join(otlpDir, "no-such-file.json")}},
		{args: []string{"import", filepath.Join(otlpDir, "adk-send-twice.json")}}, // again: already there
		{args: []string{"audit"}},
		{args: []string{"audit", "--json"}},
		{args: []string{"audit", "--markdown"}},
		{args: []string{"audit", "--effects", "send_*", "--window", "1m"}},
		{args: []string{"audit", "otlp-conv-sess-adk-mail-1", "--json"}},
		{args: []string{"audit", "nope"}},
		{args: []string{"export", "--otlp", "all.json"}, files: []string{"all.json"}},
		{args: []string{"export", "--otlp", "-"}},
		{args: []string{"export", "--otlp", "-", "exec_7K2Q"}},
		{args: []string{"export", "--otlp", "imported.json", "otlp-conv-sess-adk-mail-1"}, files: []string{"imported.json"}},
		{args: []string{"export", "--otlp", "none.json", "nope"}, files: []string{"none.json"}},
		{args: []string{"show", "otlp-conv-sess-adk-mail-1"}},
		{args: []string{"show", "--json", "otlp-conv-sess-adk-mail-1"}},
		{args: []string{"show", "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"}},
		{args: []string{"show", "--json", "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"}},
	}
	written := func(db string, s step) string {
		var b strings.Builder
		for _, f := range s.files {
			data, err := os.ReadFile(filepath.Join(filepath.Dir(db), f))
			b.WriteString(f + ": ")
			if err != nil {
				b.WriteString("none\n")
				continue
			}
			b.Write(data)
		}
		return b.String()
	}
	want := make([]ran, len(steps))
	wantFiles := make([]string, len(steps))
	for i, s := range steps {
		want[i] = rlIn(t, alone, s.stdin, s.args...)
		wantFiles[i] = written(alone, s)
	}
	// What the steps should do, so that equal is not equally wrong.
	for i, code := range []int{0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0} {
		if want[i].code != code {
			t.Errorf("without a host: want exit %d\n%s", code, want[i])
		}
	}
	has(t, want[0], "adk-send-twice.json: OTLP/JSON, 9 spans imported -> otlp-conv-sess-adk-mail-1")
	has(t, want[2], "standard input: Temporal history JSON (Web UI), 11 events")
	has(t, want[6], "0 spans imported, 9 already there")
	has(t, want[7], "audit of ", "duplicate")
	if !strings.Contains(want[3].stderr, "broken.jsonl: line 3") || !strings.Contains(want[4].stderr, "standard input: line 3") {
		t.Errorf("the broken file's errors do not name its line\n%s\n%s", want[3], want[4])
	}
	if !strings.Contains(want[12].stderr, `no execution "nope" in `+alone) || wantFiles[17] != "none.json: none\n" {
		t.Errorf("a missing execution\n%s\n%s", want[12], want[17])
	}

	serve := background(t, hosted, "serve")
	serve.banner(t)
	c, err := control.Dial(hosted)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	notices, stop := c.Subscribe(1 << 12)
	defer stop()
	for i, s := range steps {
		got := rlIn(t, hosted, s.stdin, s.args...)
		got.stderr = strings.ReplaceAll(got.stderr, hosted, alone)
		if got.stdout != want[i].stdout || got.stderr != want[i].stderr || got.code != want[i].code {
			t.Errorf("while serve holds the database:\n%s\n--- without it:\n%s", got, want[i])
		}
		if files := written(hosted, s); files != wantFiles[i] {
			t.Errorf("%v while serve holds the database wrote\n%s\n--- without it\n%s", s.args, files, wantFiles[i])
		}
	}

	// Through the host: the imported executions, not the broken file's.
	for _, x := range []string{"otlp-conv-sess-adk-mail-1", "otlp-conv-conv-9", "otlp-conv-sess-oi-7", "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"} {
		if rec, err := c.Execution(x); err != nil || rec.Imported == "" {
			t.Errorf("%s through the host: %+v %v", x, rec, err)
		}
	}
	for _, x := range brokenExecs {
		if _, err := c.Execution(x); !errors.Is(err, engine.ErrNoExecution) {
			t.Errorf("%s, of the file that failed at line 3, is there through the host (%v)", x, err)
		}
	}
	// The host told its subscribers of each execution imported.
	heard := map[string]bool{}
	for wait := time.After(10 * time.Second); !heard["otlp-conv-sess-oi-7"] || !heard["temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"]; {
		select {
		case n := <-notices:
			heard[n.Execution] = true
		case <-wait:
			t.Fatalf("the host's subscribers heard of %v only", heard)
		}
	}

	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// A program that holds the database without hosting it (a 'retrylab gen',
// say): import, audit and export have nothing to attach to and refuse in
// one line that names the file, as before.
func TestCLITracesCommandsLockedWithoutHost(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	holder, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	fixture, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "otlp", "adk-send-twice.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"import", fixture}, {"audit"}, {"export", "--otlp", "out.json"}} {
		msg := fails(t, 1, db, args...)
		if !strings.Contains(msg, db) || !strings.Contains(msg, "locked") || !strings.Contains(msg, "no retrylab announces itself") {
			t.Errorf("%v on a database held without a host: %q", args, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(db), "out.json")); !os.IsNotExist(err) {
		t.Errorf("the refused export wrote out.json (%v)", err)
	}
}

// An export short enough to go in one write (a database with nothing of
// retrylab's own to export) still ends as it does without a host: the
// host's count of spans must reach the command however short the answer.
func TestCLIShortExportAttached(t *testing.T) {
	t.Parallel()
	alone, hosted := newDB(t), newDB(t)
	for _, db := range []string{alone, hosted} {
		must(t, 0, db, "reset")
	}
	want := rlIn(t, alone, nil, "export", "--otlp", "-")
	if want.code != 0 || !strings.Contains(want.stderr, "wrote 0 executions, 0 spans") {
		t.Fatalf("without a host:\n%s", want)
	}
	serve := background(t, hosted, "serve")
	serve.banner(t)
	got := rlIn(t, hosted, nil, "export", "--otlp", "-")
	if got.stdout != want.stdout || got.stderr != want.stderr || got.code != want.code {
		t.Errorf("while serve holds the database:\n%s\n--- without it:\n%s", got, want)
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}
