package cli

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/gen"
)

// ptyKeys is what a reader does, as a terminal sends it: scroll a trace up,
// move through the executions (loading each one's trace, paging the list,
// jumping to the oldest and back), and scroll again.
var ptyKeys = func() []string {
	var s []string
	rep := func(k string, n int) {
		for range n {
			s = append(s, k)
		}
	}
	const pgdown, pgup, shiftTab = "\x1b[6~", "\x1b[5~", "\x1b[Z"
	rep("k", 40) // the trace opens at its end
	rep(pgup, 3)
	rep("j", 10)
	s = append(s, "g", "G", shiftTab) // to the executions pane
	rep("j", 60)
	rep(pgdown, 10)
	s = append(s, "G")
	rep("k", 15)
	rep(pgup, 3)
	s = append(s, "g", "\t") // back to the trace
	return s
}()

// BenchmarkKeyToScreen runs the real binary's explorer in a pseudo-terminal
// on a generated database and measures what a user sees: from writing a key
// to the terminal until the first bytes of the program's answer come out of
// it. After each key it waits until the output has been quiet for 30 ms (the
// trace a move loads comes in a later frame). It reports p50, p99 and max,
// the keys that changed nothing on screen (no output within 300 ms; not in
// the percentiles), and the CPU the idle program uses over 3 s after the
// keys (utime+stime from /proc, as a percentage of one core).
//
// Sizes as the tui benchmarks: 10 000 attempts in 100 executions; with
// RETRYLAB_BENCH_FULL=1, about 1 000 000 in 10 000. RETRYLAB_BENCH_BIN runs
// another build of retrylab instead of this one (to compare frame rates).
func BenchmarkKeyToScreen(b *testing.B) {
	opts := gen.Options{Executions: 100, AttemptsPerStep: 89, Seed: 1}
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		opts.Executions = 10000
	}
	db, _, err := gen.Cached(context.Background(), gen.CacheDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	program := bin
	if other := os.Getenv("RETRYLAB_BENCH_BIN"); other != "" {
		program = other
	}
	reads := make(chan time.Time, 4096)
	s := startScreenTimed(b, reads, program, db, 160, 48)
	s.waitFor("the explorer", "Executions")
	quiet := func(d time.Duration) {
		for {
			select {
			case <-reads:
			case <-time.After(d):
				return
			}
		}
	}
	quiet(200 * time.Millisecond)

	lat, unchanged := timeKeys(b, s, reads, ptyKeys, quiet)

	before := cpuTicks(b, s.cmd.Process.Pid)
	time.Sleep(3 * time.Second)
	idle := cpuTicks(b, s.cmd.Process.Pid) - before
	s.press("q")
	<-s.done

	reportLatencies(b, "", lat)
	b.ReportMetric(float64(unchanged), "unchanged-keys")
	// Clock ticks are 1/100 s on Linux: over 3 s, one tick is 0.33%.
	b.ReportMetric(float64(idle)/3, "idle-CPU-%")
}

// cpuTicks is a process's user and system CPU time in clock ticks.
func cpuTicks(tb testing.TB, pid int) int {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) end with ")".
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}
