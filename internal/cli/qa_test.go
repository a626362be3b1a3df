package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// 'export --otlp retrylab.db' (the database named where --db was meant)
// must not replace the database with the export, with or without a host
// holding it: it is refused in one line, and the database still opens with
// its executions. Another retrylab database is refused the same way.
func TestCLIExportRefusesADatabase(t *testing.T) {
	t.Parallel()
	for _, hosted := range []bool{false, true} {
		db := newDB(t)
		ok(t, db, "run", "naive")
		other := filepath.Join(filepath.Dir(db), "other.db")
		ok(t, other, "reset")
		if hosted {
			serve := background(t, db, "serve")
			serve.banner(t)
			defer func() {
				if s := serve.stop(t); s.code != 0 {
					t.Errorf("serve\n%s", s)
				}
				has(t, ok(t, db, "show"), "exec_7K2Q")
			}()
		}
		for _, dest := range []string{"retrylab.db", db, "other.db"} {
			msg := fails(t, 1, db, "export", "--otlp", dest)
			if !strings.Contains(msg, dest+" is a retrylab database") {
				t.Errorf("hosted %v: export --otlp %s: %q", hosted, dest, msg)
			}
		}
		has(t, ok(t, db, "show"), "exec_7K2Q")
		ok(t, other, "outbox")
	}
}

// import of a file that is not there, or not readable, names the file
// first, as every other import error does, and imports nothing.
func TestCLIImportMissingFile(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	missing := filepath.Join(t.TempDir(), "nowhere.json")
	if msg, want := fails(t, 1, db, "import", missing), "retrylab: import "+missing+": no such file or directory"; msg != want {
		t.Errorf("import MISSING said %q, want %q", msg, want)
	}
	if os.Geteuid() != 0 { // root reads a file of mode 0
		locked := filepath.Join(t.TempDir(), "locked.json")
		if err := os.WriteFile(locked, []byte(`{"resourceSpans": []}`), 0); err != nil {
			t.Fatal(err)
		}
		if msg, want := fails(t, 1, db, "import", locked), "retrylab: import "+locked+": permission denied"; msg != want {
			t.Errorf("import UNREADABLE said %q, want %q", msg, want)
		}
	}
	// Nothing was stored: no empty database was left behind either.
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the failed imports left a database file: %v", err)
	}
}

// import of a directory says it is one, not "empty file: no spans", with or
// without a host, and imports nothing.
func TestCLIImportDirectory(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "otlp"))
	if err != nil {
		t.Fatal(err)
	}
	want := "retrylab: import " + dir + " is a directory; name the files in it: retrylab import " + filepath.Join(dir, "*")
	for _, hosted := range []bool{false, true} {
		db := newDB(t)
		ok(t, db, "reset")
		if hosted {
			serve := background(t, db, "serve")
			serve.banner(t)
			defer func() {
				_ = serve.cmd.Process.Signal(os.Interrupt)
				serve.wait(t)
			}()
		}
		if msg := fails(t, 1, db, "import", dir); msg != want {
			t.Errorf("hosted %v: import DIR said %q, want %q", hosted, msg, want)
		}
	}
}

// A missing execution is named once, in the same words, whether the
// command works on the file alone or through a host ("no such execution:
// no such execution: nope" through one, before).
func TestCLIMissingExecutionThroughAHost(t *testing.T) {
	t.Parallel()
	alone, hosted := newDB(t), newDB(t)
	ok(t, alone, "run", "naive")
	ok(t, hosted, "run", "naive")
	cmds := [][]string{{"show", "nope"}, {"show", "--json", "nope"}, {"journal", "list", "nope"}, {"resume", "nope"}, {"journal", "delete", "nope", "step-4"}}
	want := make([]string, len(cmds))
	for i, args := range cmds {
		want[i] = fails(t, 1, alone, args...)
		if want[i] != "retrylab: no such execution: nope" {
			t.Errorf("%v alone: %q", args, want[i])
		}
	}
	serve := background(t, hosted, "serve")
	serve.banner(t)
	for i, args := range cmds {
		if got := fails(t, 1, hosted, args...); got != want[i] {
			t.Errorf("%v through a host: %q, alone %q", args, got, want[i])
		}
	}
	serve.stop(t)
}

// A bad --otlp address is a usage error (exit 2), said alone: serve printed
// the world's addresses first, then refused with exit 1.
func TestCLIServeBadOTLPAddress(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for addr, want := range map[string]string{
		"0.0.0.0:4318": "retrylab: --otlp 0.0.0.0:4318 is off loopback: give --token (or $RETRYLAB_OTLP_TOKEN) so that only agents with it can send, or listen on 127.0.0.1",
		"nope":         "retrylab: --otlp nope: address nope: missing port in address (want host:port, e.g. 127.0.0.1:4318)",
	} {
		if msg := fails(t, 2, db, "serve", "--otlp", addr); msg != want {
			t.Errorf("serve --otlp %s: %q, want %q", addr, msg, want)
		}
	}
}

// serve --otlp announces its receiver with the world's addresses, before
// "press Ctrl-C to stop", and the spans posted to it are imported.
func TestCLIServeOTLPReceives(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := background(t, db, "serve", "--otlp", "127.0.0.1:0")
	serve.banner(t)
	out := serve.stdout.String()
	m := regexp.MustCompile(`(?m)^  OTLP      POST (http://127\.0\.0\.1:\d+/v1/traces) .*\npress Ctrl-C to stop$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("serve --otlp's banner:\n%s", out)
	}
	doc, err := os.Open(filepath.Join(repoRoot, "fixtures", "otlp", "adk-send-twice.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	resp, err := http.Post(m[1], "application/json", doc)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", m[1], resp.Status)
	}
	has(t, ok(t, db, "show", "otlp-conv-sess-adk-mail-1"), "send_email")
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// A trace or history saved with a byte order mark (an editor, Windows
// PowerShell 5's '>', which writes UTF-16) is refused in words that say
// so, not as "it does not start with '{'" of a file that seems to.
func TestCLIImportByteOrderMark(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	for _, f := range []string{"otlp/genai-semconv.json", "temporal/order-run1.cli.json"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", f))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(path, append([]byte("\xef\xbb\xbf"), data...), 0o600); err != nil {
			t.Fatal(err)
		}
		want := "retrylab: import " + path + ": it starts with a UTF-8 byte order mark, which retrylab does not read: save it as UTF-8 without one"
		if msg := fails(t, 1, db, "import", path); !strings.HasPrefix(msg, want) {
			t.Errorf("import of %s with a byte order mark: %q", f, msg)
		}
	}
}

// A retrylab database given where a trace file goes (import, a side of
// diff) is named as one, with what to do instead, not refused as a file
// that is "neither OTLP/JSON nor OTLP protobuf".
func TestCLIDatabaseIsNotATraceFile(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	other := filepath.Join(filepath.Dir(db), "other.db")
	ok(t, other, "reset")
	for args, want := range map[string]string{
		"import other.db":           "retrylab: import other.db is a retrylab database, not a trace file: open it with --db other.db",
		"diff exec_7K2Q other.db":   "retrylab: diff B: other.db is a retrylab database, not a trace file: export its execution",
		"diff other.db#x exec_7K2Q": "retrylab: diff A: other.db is a retrylab database, not a trace file: export its execution",
	} {
		if msg := fails(t, 1, db, strings.Fields(args)...); !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q...", args, msg, want)
		}
	}
}

// chaos's bad flags are usage errors (exit 2), said alone: it printed its
// header, made a temporary directory for a database it never wrote (left
// behind) and exited 1.
func TestCLIChaosBadFlags(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	db := filepath.Join(t.TempDir(), "retrylab.db")
	for _, args := range [][]string{{"--runs", "0"}, {"--policy", "bogus"}, {"--concurrency", "0"}} {
		r := rl(t, db, append([]string{"chaos"}, args...)...)
		r.args = append([]string{"chaos"}, args...)
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "retrylab: chaos: ") {
			t.Errorf("want exit 2 and one line\n%s", r)
		}
	}
	// Without --db, which rl always gives: the temporary directory.
	cmd := exec.Command(bin, "chaos", "--runs", "0")
	cmd.Dir, cmd.Env = tmp, cliEnv()
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--runs must be at least 1") {
		t.Errorf("chaos --runs 0 without --db: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("chaos with a bad flag left %d entries in TMPDIR", len(left))
	}
}

// The control API as an exercise's script calls it (README): lists are
// [] when empty, never null (Python's 'for x in r.json()["list"]' fails on
// None), the events of an execution that does not exist are a 422 error
// naming it, not an empty answer, and a body refused unread is a 400.
func TestCLIControlAPIAnswersForScripts(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve := background(t, db, "serve")
	serve.banner(t)
	m := regexp.MustCompile(`control   POST (http://127\.0\.0\.1:\d+)/v1/control/advance`).FindStringSubmatch(serve.stdout.String())
	if m == nil {
		t.Fatalf("no control address in serve's banner:\n%s", serve.stdout)
	}
	var info struct {
		Token string `json:"token"`
	}
	data, err := os.ReadFile(db + ".host")
	if err != nil || json.Unmarshal(data, &info) != nil || info.Token == "" {
		t.Fatalf("host file: %v %s", err, data)
	}
	call := func(name, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, m[1]+"/v1/control/"+name, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+info.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(out))
	}
	if code, out := call("executions", `{"skip": 0, "limit": 10}`); code != 200 || out != `{"list":[],"total":0}` {
		t.Errorf("executions of an empty database: %d %s", code, out)
	}
	if code, out := call("events", `{"id": "nope"}`); code != 422 || !strings.Contains(out, "no such execution: nope") {
		t.Errorf("events of no execution: %d %s", code, out)
	}
	// A body that does not decode is refused before the call: 400, as
	// docs/cli.md says, naming what is wrong; a call without the token
	// is a 401.
	if code, out := call("advance", `{"duration": "banana"}`); code != 400 || !strings.Contains(out, `duration \"banana\"`) {
		t.Errorf("advance banana: %d %s", code, out)
	}
	if resp, err := http.Post(m[1]+"/v1/control/executions", "application/json", strings.NewReader(`{}`)); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 401 {
		t.Errorf("a call without the token: %d, want 401", resp.StatusCode)
	}
	// A nesting bomb is a 400 of one line, to the control calls and to
	// the traces endpoints alike, and the host goes on.
	for _, name := range []string{"executions", "audit", "export_otlp"} {
		bomb := `{"ids":` + strings.Repeat("[", 1_000_000)
		if code, out := call(name, bomb); code != 400 || !strings.Contains(out, "JSON nested deeper than 100 levels") || strings.Contains(out, "\n") {
			t.Errorf("%s with a nesting bomb: %d %s", name, code, out)
		}
	}
	if code, out := call("executions", `{}`); code != 200 {
		t.Errorf("executions after the bombs: %d %s", code, out)
	}
	serve.stop(t)
}

// 'retrylab reset' (or the explorer's E) while a file is imported through
// the host is refused: it wiped the spans stored so far, and the import,
// going on, committed executions without them ("spans 0") while saying
// every span was imported. After the import, reset works.
func TestCLIResetWaitsForAnAttachedImport(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "reset")
	serve := background(t, db, "serve")
	serve.banner(t)
	imp := startPipedImport(t, db)
	// Until the host has the import in hand, reset may still go first.
	var msg string
	until(t, "reset refused during the import", func() bool {
		r := rl(t, db, "reset")
		msg = r.stderr
		return r.code == 1
	})
	if !strings.Contains(msg, "cannot reset while a file is being imported") {
		t.Errorf("reset during an import: %q", msg)
	}
	if _, err := io.WriteString(imp.in, imp.rest); err != nil {
		t.Fatal(err)
	}
	imp.in.Close()
	if err := imp.cmd.Wait(); err != nil || !strings.Contains(imp.stdout.String(), "6 spans imported") {
		t.Fatalf("import: %v\n%s%s", err, imp.stdout.String(), imp.stderr.String())
	}
	has(t, ok(t, db, "show", "otlp-conv-sess-oi-7"), "spans 6")
	has(t, ok(t, db, "reset"), "reset ")
	serve.stop(t)
}

// 'retrylab reset' while an export streams from the host (to a pager, a
// slow pipe) is refused: the export went on reading histories the reset
// had wiped and ended short of the executions it announced, unsaid.
func TestCLIResetWaitsForAnAttachedExport(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 0, db, "gen", "--executions", "500", "--seed", "1")
	want := rl(t, db, "export", "--otlp", "-")
	serve := background(t, db, "serve")
	serve.banner(t)
	exp := exec.Command(bin, "--db", db, "export", "--otlp", "-")
	exp.Dir, exp.Env = filepath.Dir(db), cliEnv()
	stdout, err := exp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	exp.Stderr = &stderr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(stdout, first); err != nil {
		t.Fatal(err)
	}
	var msg string
	until(t, "reset refused during the export", func() bool {
		r := rl(t, db, "reset")
		msg = r.stderr
		return r.code == 1
	})
	if !strings.Contains(msg, "cannot reset while an export is being written") {
		t.Errorf("reset during an export: %q", msg)
	}
	rest, err := io.ReadAll(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Wait(); err != nil || stderr.String() != want.stderr || string(first)+string(rest) != want.stdout {
		t.Errorf("the export beside a refused reset: %v, %q (alone %q), %d bytes (alone %d)", err, stderr.String(), want.stderr, len(rest)+1, len(want.stdout))
	}
	has(t, ok(t, db, "reset"), "reset ")
	serve.stop(t)
}

// An unknown scenario is a usage error with --engine temporal too, said
// as without it, not "needs the retrylab-temporal command on PATH" (exit
// 1) when that is missing.
func TestCLIUnknownScenarioOnTemporal(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	want := fails(t, 2, db, "run", "nope")
	if got := fails(t, 2, db, "run", "nope", "--engine", "temporal"); got != want {
		t.Errorf("run nope --engine temporal: %q, want %q", got, want)
	}
}

// An import whose host goes away half way (the explorer quit with Ctrl-C,
// or killed) fails in one line that says so, not in a Post, two socket
// addresses and "use of closed network connection"; and it ends then, even
// reading a pipe that has nothing more to give yet (it waited for the next
// byte before).
func TestCLIImportWhoseHostGoes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "reset")
	serve := background(t, db, "serve")
	serve.banner(t)
	imp := startPipedImport(t, db)
	defer imp.in.Close()
	until(t, "the host importing", func() bool { return rl(t, db, "reset").code == 1 })
	if err := serve.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	serve.wait(t)
	waited := make(chan error, 1)
	go func() { waited <- imp.cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(time.Minute): // a hang, not a slow machine
		_ = imp.cmd.Process.Kill()
		<-waited
		t.Fatalf("import - still waited for its input a minute after its host was killed\n%s%s", imp.stdout.String(), imp.stderr.String())
	}
	r := ran{args: []string{"import", "-"}, stdout: imp.stdout.String(), stderr: imp.stderr.String(), code: imp.cmd.ProcessState.ExitCode()}
	msg := oneLineError(t, r)
	if err == nil || r.code != 1 || !strings.Contains(msg, "retrylab: import standard input: the retrylab that holds ") ||
		!strings.Contains(msg, "closed before it answered (quit, or killed)") || strings.Contains(msg, "Post ") {
		t.Errorf("import whose host was killed:\n%s", r)
	}
}

// pipedImport is a 'retrylab import -' under way: the first of
// openinference-charge.jsonl's two lines is written to it, rest is not.
type pipedImport struct {
	cmd            *exec.Cmd
	in             io.WriteCloser
	rest           string
	stdout, stderr strings.Builder
}

// startPipedImport starts 'retrylab import -' on db and writes it the
// fixture's first line, so that the import is unfinished until the caller
// writes rest and closes in.
func startPipedImport(t *testing.T, db string) *pipedImport {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "otlp", "openinference-charge.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(doc), "\n")
	imp := &pipedImport{cmd: exec.Command(bin, "--db", db, "import", "-"), rest: rest}
	imp.cmd.Dir, imp.cmd.Env = filepath.Dir(db), cliEnv()
	if imp.in, err = imp.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	imp.cmd.Stdout, imp.cmd.Stderr = &imp.stdout, &imp.stderr
	if err := imp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(imp.in, first+"\n"); err != nil {
		t.Fatal(err)
	}
	return imp
}

// An unknown scenario, by name or by path, is said before any database is
// opened: a mistyped name in a fresh directory leaves no retrylab.db.
func TestCLIUnknownScenarioMakesNoDatabase(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"run", "nope"}, {"run", "./missing.yaml"}, {"--run", "nope"}} {
		db := newDB(t)
		if msg := fails(t, 2, db, args...); !strings.Contains(msg, "nope") && !strings.Contains(msg, "missing.yaml") {
			t.Errorf("%v: %q", args, msg)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("%v made %s (%v)", args, db, err)
		}
	}
}
