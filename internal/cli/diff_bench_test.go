package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/fixtures"
)

// BenchmarkDiffCommand times `retrylab diff A B` as a user runs it (the
// binary: open the database, read and fold both histories, line them up,
// print) on two generated executions. With RETRYLAB_BENCH_FULL=1 they have
// at least 50 000 events each (BENCHMARKS.md, 7); without it, a tenth, so
// CI's smoke run stays quick. The database is generated once into
// gen.CacheDir() and reused.
func BenchmarkDiffCommand(b *testing.B) {
	opts, least := gen.Options{Executions: 2, AttemptsPerStep: 1300, Seed: 7}, 5000
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		opts.AttemptsPerStep, least = 13000, 50000
	}
	path, _, err := gen.Cached(context.Background(), gen.CacheDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	// Work on a copy: the command opens the database as its host.
	db := filepath.Join(b.TempDir(), "big.db")
	if out, err := exec.Command("cp", path, db).CombinedOutput(); err != nil {
		b.Fatalf("copy %s: %v %s", path, err, out)
	}
	h, err := engine.Open(engine.Config{DBPath: db, Scenarios: fixtures.FS, Imports: all.Registry()})
	if err != nil {
		b.Fatal(err)
	}
	list, _, err := h.Executions(0, 2)
	if err != nil || len(list) != 2 {
		b.Fatalf("executions: %v (%d)", err, len(list))
	}
	events := 0
	for _, x := range list {
		evs, err := h.Events(x.ID, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) < least {
			b.Fatalf("%s has %d events, want at least %d", x.ID, len(evs), least)
		}
		events += len(evs)
	}
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "--db", db, "diff", list[0].ID, list[1].ID)
		cmd.Env = cliEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("diff: %v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	// The command's own CPU time says what it costs when the machine is
	// busy with other work (wall time then includes waiting for a core).
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(events)/2, "events/execution")
}
