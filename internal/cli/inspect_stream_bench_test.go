package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/gen"
)

// BenchmarkStreamLongExecution runs the real binary's readers of one
// history (show, show --json, show --markdown, check, state --json, export
// --otlp -) on a
// generated database holding one execution of many attempts, and reports
// for each: first-line-ms (from the start of the process to its first
// line on stdout; for export, whose document is one line, first-byte-ms),
// total-ms, and heap-MB, the largest heap the Go runtime
// reported at the start of a collection (GODEBUG=gctrace=1): the peak of
// the heap, garbage included. By default the execution has 5 000 attempts;
// with RETRYLAB_BENCH_FULL=1, 100 000 (400 004 events, ~140 MB of file).
// RETRYLAB_BENCH_BIN runs another build instead (an older one, to compare).
func BenchmarkStreamLongExecution(b *testing.B) {
	attempts := 5_000
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		attempts = 100_000
	}
	db, _, err := gen.Cached(context.Background(), gen.CacheDir(), gen.Options{Executions: 1, AttemptsPerStep: attempts, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	// export writes one line (the OTLP/JSON document) to standard output:
	// its first byte is what shows it streams. A build older than the
	// streaming export knows no "--otlp -": it writes a file, and its
	// first line is the summary it prints once the file is written.
	exportArgs, firstOf := []string{"export", "--otlp", "-"}, "first-byte-ms"
	if other := os.Getenv("RETRYLAB_BENCH_BIN"); other != "" && !exportsToStdout(b, other) {
		exportArgs = []string{"export", "--otlp", filepath.Join(b.TempDir(), "long.json")}
		firstOf = "first-line-ms"
	}
	for _, args := range [][]string{{"show"}, {"show", "--json"}, {"show", "--markdown"}, {"check"}, {"state", "--json"}, exportArgs} {
		name := args[0]
		if len(args) > 1 && args[0] != "export" {
			name += args[1]
		}
		metric := "first-line-ms"
		if args[0] == "export" {
			metric = firstOf
		}
		b.Run(name, func(b *testing.B) {
			var first, total time.Duration
			heap := 0
			for range b.N {
				f, t, h := streamOnce(b, db, args, metric == "first-byte-ms")
				first, total, heap = first+f, total+t, max(heap, h)
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), metric)
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "total-ms")
			b.ReportMetric(float64(heap), "heap-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// exportsToStdout says whether the retrylab binary at exe knows
// "export --otlp -" (its help says so).
func exportsToStdout(b *testing.B, exe string) bool {
	out, err := exec.Command(exe, "export", "--help").CombinedOutput()
	if err != nil {
		b.Fatalf("%s export --help: %v\n%s", exe, err, out)
	}
	return bytes.Contains(out, []byte("- for standard output"))
}

// gcStart matches gctrace's "A->B->C MB": A is the heap when a
// collection started.
var gcStart = regexp.MustCompile(`(\d+)->\d+->\d+ MB`)

// streamOnce runs one reader and times its first line (or, with byte
// set, its first byte) and its end.
func streamOnce(b *testing.B, db string, args []string, firstByte bool) (first, total time.Duration, heapMB int) {
	b.Helper()
	exe := bin
	if other := os.Getenv("RETRYLAB_BENCH_BIN"); other != "" {
		exe = other
	}
	cmd := exec.Command(exe, append([]string{"--db", db}, args...)...)
	cmd.Env = append(cliEnv(), "GODEBUG=gctrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(out)
	if firstByte {
		if _, err := r.ReadByte(); err != nil {
			b.Fatalf("%v: no first byte: %v\n%s", args, err, stderr.String())
		}
	} else if _, err := r.ReadBytes('\n'); err != nil {
		b.Fatalf("%v: no first line: %v\n%s", args, err, stderr.String())
	}
	first = time.Since(start)
	if _, err := io.Copy(io.Discard, r); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	total = time.Since(start)
	for _, m := range gcStart.FindAllStringSubmatch(stderr.String(), -1) {
		if n, _ := strconv.Atoi(m[1]); n > heapMB {
			heapMB = n
		}
	}
	return first, total, heapMB
}
