package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// filterTyping is what BenchmarkFilterInTerminal types into the filter
// box: words letter by letter, each taken back letter by letter.
var filterTyping = strings.Split("c o m p ⌫ ⌫ ⌫ ⌫ k e y s ⌫ ⌫ ⌫ ⌫ g e n - n a i v e ⌫ ⌫ ⌫ ⌫ ⌫ ⌫ ⌫ ⌫ ⌫ 0 0 7 ⌫ ⌫ ⌫", " ")

// BenchmarkFilterInTerminal measures the executions filter as a user sees
// it: the real binary in a pseudo-terminal (160×48) on a generated database
// (1 000 000 executions with RETRYLAB_BENCH_FULL=1, else 2 000), read
// through a VT100 emulator. One op is one key typed into the filter box,
// from the write to the terminal until the screen shows the list's title
// with the filter and its count ("Executions /keys 425467"), the counts
// being worked out beforehand from the records by the filter's rule.
// Before the keys it waits for the explorer's first frame and for the
// host's index of records (one filter answered). Keys are typed 0-16 ms
// after the previous answer showed (a fixed sequence), so they land all
// over Bubble Tea's 16.7 ms frame, as a typist's do. cpu-ms/key is the binary's
// own CPU time over the keys, per key.
func BenchmarkFilterInTerminal(b *testing.B) {
	opts := gen.Options{Executions: 2000, AttemptsPerStep: 1, Seed: 1}
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		opts.Executions = 1_000_000
	}
	path, _, err := gen.Cached(context.Background(), gen.CacheDir(), opts)
	if err != nil {
		b.Fatal(err)
	}

	// The text in the box after each key, and what the title says then.
	texts := make([]string, len(filterTyping))
	text := ""
	for i, k := range filterTyping {
		if k == "⌫" {
			_, size := lastRune(text)
			text = text[:len(text)-size]
		} else {
			text += k
		}
		texts[i] = text
	}
	counts := countMatches(b, path, append(slices.Clone(texts), "", "q"))
	title := func(text string) string {
		if text == "" {
			return fmt.Sprintf("Executions %d", counts[""])
		}
		return fmt.Sprintf("Executions /%s %d", text, counts[text])
	}

	s := startScreen(b, bin, path, 160, 48)
	waitScreen(b, s, title(""), 2*time.Minute)
	s.press("/q") // the first filter waits for the index of records
	if counts["q"] == counts[""] {
		b.Fatal("the warm-up filter matches every execution: its answer would not show")
	}
	waitScreen(b, s, title("q"), 2*time.Minute)
	s.press("\x7f")
	waitScreen(b, s, title(""), time.Minute)

	cpu0 := processCPU(b, s.cmd.Process.Pid)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		k, want := filterTyping[i%len(filterTyping)], title(texts[i%len(texts)])
		if k == "⌫" {
			k = "\x7f"
		}
		// A typist's key lands anywhere in the renderer's 60 fps frame,
		// not just after the last one: wait 0-16 ms first (untimed).
		b.StopTimer()
		time.Sleep(time.Duration(i*7%17) * time.Millisecond)
		b.StartTimer()
		start := time.Now()
		s.press(k)
		waitScreen(b, s, want, time.Minute)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	cpu := processCPU(b, s.cmd.Process.Pid) - cpu0
	b.ReportMetric(float64(counts[""]), "executions")
	reportLatencies(b, "", lat)
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/key")
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return []rune(s[i:])[0], len(s) - i
		}
	}
	return 0, 0
}

// countMatches reads every record once and counts, for each text, the
// executions the filter's rule matches.
func countMatches(tb testing.TB, path string, texts []string) map[string]int {
	tb.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true, LockTimeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	counts := map[string]int{}
	queries := map[string]execindex.Query{}
	for _, t := range texts {
		queries[t] = execindex.Parse(t)
		counts[t] = 0
	}
	err = db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(_ string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				return true
			}
			for t, q := range queries {
				if q.Match(x) {
					counts[t]++
				}
			}
			return true
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return counts
}

// waitScreen polls the screen closely until it shows want.
func waitScreen(tb testing.TB, s *screen, want string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.text(), want) {
		if time.Now().After(deadline) {
			tb.Fatalf("the screen never showed %q; it shows:\n%s", want, s.text())
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// processCPU is a process's user and system time so far (/proc/PID/stat).
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	// Fields after the command (which may hold spaces) start after ") ".
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ is 100 on Linux
}
