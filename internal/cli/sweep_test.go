package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

// The corruption sweep (RELIABILITY.md, "Damage is never silent"): N random
// 32-byte corruptions of small databases made by chaos, gen, runs and
// imports, each read by every read command. Every corruption must either
// leave every command's output as it was, or be reported as damage by
// check and by every command whose output it changes; no command may exit
// 0 with changed output (a silent change), and no read may change the
// file's bytes. It is off by default (minutes of work):
//
//	RETRYLAB_SWEEP=500 go test ./internal/cli/ -run TestCorruptionSweep -v
//
// RETRYLAB_SWEEP_SEED picks the seed (default 1); RETRYLAB_SWEEP_KEEP names
// a directory to keep a copy of each file with a finding in.
func TestCorruptionSweep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RETRYLAB_SWEEP"))
	if n <= 0 {
		t.Skip("set RETRYLAB_SWEEP=N to run N corruptions")
	}
	seed := uint64(1)
	if s, err := strconv.ParseUint(os.Getenv("RETRYLAB_SWEEP_SEED"), 10, 64); err == nil {
		seed = s
	}
	sources := sweepSources(t)
	type outcome struct {
		harmless, reported, silent, misreported, checkMissed, wrote int
		findings                                                    []string
	}
	var (
		mu  sync.Mutex
		out outcome
	)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				src := sources[i%len(sources)]
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				off := r.IntN(len(src.data) - 32)
				b := bytes.Clone(src.data)
				for j := range 32 {
					b[off+j] = byte(r.UintN(256))
				}
				db := filepath.Join(t.TempDir(), "retrylab.db")
				if err := os.WriteFile(db, b, 0o600); err != nil {
					t.Error(err)
					return
				}
				before := sha256.Sum256(b)
				var changed []string
				var bad []string
				checkSaid := false
				for _, c := range src.commands {
					res := sweepRun(t, db, c)
					if strings.Join(c, " ") == "check" {
						checkSaid = saysDamage(res)
					}
					if res.code == src.base[strings.Join(c, " ")].code && res.stdout == src.base[strings.Join(c, " ")].stdout {
						continue
					}
					changed = append(changed, strings.Join(c, " "))
					if !saysDamage(res) {
						kind := "silent"
						if res.code != 0 {
							kind = "misreported"
						}
						bad = append(bad, fmt.Sprintf("%s: %s %q: exit %d: %s", kind, src.name, strings.Join(c, " "), res.code, oneLine(res.stderr)))
					}
				}
				after, err := os.ReadFile(db)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				where := fmt.Sprintf("corruption %d (%s, 32 bytes at %d)", i, src.name, off)
				switch {
				case sha256.Sum256(after) != before:
					out.wrote++
					out.findings = append(out.findings, where+": a read command wrote to the file")
				case len(changed) == 0:
					out.harmless++
				}
				if keep := os.Getenv("RETRYLAB_SWEEP_KEEP"); keep != "" && (len(bad) > 0 || len(changed) > 0 && !checkSaid) {
					_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("%d-%s.db", i, src.name)), b, 0o600)
				}
				for _, f := range bad {
					if strings.HasPrefix(f, "silent") {
						out.silent++
					} else {
						out.misreported++
					}
					out.findings = append(out.findings, where+": "+f)
				}
				if len(changed) > 0 && !checkSaid {
					out.checkMissed++
					out.findings = append(out.findings, fmt.Sprintf("%s: check did not report damage; changed: %s", where, strings.Join(changed, ", ")))
				}
				if len(changed) > 0 && len(bad) == 0 && checkSaid {
					out.reported++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d corruptions (seed %d) of %d databases: %d harmless (every output unchanged), %d reported as damage by check and by every command they changed; %d silent changes, %d misreported, %d missed by check, %d files written by a read",
		n, seed, len(sources), out.harmless, out.reported, out.silent, out.misreported, out.checkMissed, out.wrote)
	for i, f := range out.findings {
		if i == 40 {
			t.Errorf("... and %d more", len(out.findings)-40)
			break
		}
		t.Error(f)
	}
}

// sweepSource is a database to damage, the read commands run on it, and
// what each printed before any damage.
type sweepSource struct {
	name     string
	data     []byte
	commands [][]string
	base     map[string]ran
}

// sweepSources makes the sweep's databases: the damaged-file fixture (gen,
// runs and imports, schema v5, sealed: see sealedFixture), a chaos run's, a gen's and an import's,
// each small, so that a read takes milliseconds.
func sweepSources(t *testing.T) []sweepSource {
	t.Helper()
	dir := t.TempDir()
	otlp, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "otlp"))
	if err != nil {
		t.Fatal(err)
	}
	fixture := sealedFixture(t, dir)
	made := map[string][][]string{
		"chaos":   {{"chaos", "--runs", "6", "--seed", "3"}},
		"gen":     {{"gen", "--executions", "30", "--seed", "5"}},
		"imports": {{"import", filepath.Join(otlp, "adk-send-twice.json"), filepath.Join(otlp, "openinference-charge.jsonl"), filepath.Join(otlp, "openllmetry-ticket.json")}},
	}
	var out []sweepSource
	out = append(out, sweepSource{name: "fixture", data: fixture})
	for _, name := range []string{"chaos", "gen", "imports"} {
		db, err := filepath.Abs(filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range made[name] {
			if name == "chaos" {
				args = append(args, "--db", db)
			}
			if r := rl(t, db, args...); r.code != 0 {
				t.Fatalf("make the %s database: %s", name, r)
			}
		}
		data, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sweepSource{name: name, data: data})
	}
	for i := range out {
		s := &out[i]
		s.commands = [][]string{{"check"}, {"show"}, {"show", "--json"}, {"state", "--json"}, {"outbox", "--json"},
			{"journal", "list"}, {"audit", "--json", "--fail-on", "never"}, {"export", "--otlp", "-"}}
		db := filepath.Join(dir, s.name+"-base", "retrylab.db")
		if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db, s.data, 0o600); err != nil {
			t.Fatal(err)
		}
		s.base = map[string]ran{}
		for _, c := range s.commands {
			first, second := sweepRun(t, db, c), sweepRun(t, db, c)
			if first.stdout != second.stdout || first.code != second.code {
				t.Fatalf("%s: %q prints differently on the same file:\n%s\n%s", s.name, strings.Join(c, " "), first, second)
			}
			s.base[strings.Join(c, " ")] = first
		}
	}
	return out
}

// sealedFixture is testdata/damaged's database (gen, runs and imports,
// schema v5) as a writer's open leaves it: raised to this build's schema,
// its records sealed with their checksums. Damage to the free-form bytes
// of a file still of an older schema, read read-only, reads as data (no
// sums to check it by): the sweep damages files as this build keeps them.
func sealedFixture(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "damaged", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fixture-sealed.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return data
}

// sweepRun runs one command on db, bounded: a read that hangs on a damaged
// file is a finding, not a stuck sweep.
func sweepRun(t *testing.T, db string, args []string) ran {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--db", db}, args...)...)
	cmd.Dir = filepath.Dir(db)
	cmd.Env = cliEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// Each copy lives in a directory of its own: outputs name it as DB.
	r := ran{args: args, stdout: strings.ReplaceAll(stdout.String(), db, "DB"), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code, r.stderr = -1, "hung for a minute: "+r.stderr
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Errorf("retrylab %v: %v", args, err)
	}
	return r
}

// saysDamage reports whether a command failed saying the file is damaged.
func saysDamage(r ran) bool {
	return r.code == 1 && strings.Contains(r.stderr, "database file is corrupt")
}
