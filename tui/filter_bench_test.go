package tui

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/gen"
)

// filterSize is the database of the filter benchmark: 1 000 000 executions
// of one attempt per call with RETRYLAB_BENCH_FULL=1, else 2 000 (CI's
// smoke run generates that in a second or two). Seed 1, so the database is
// the same on every machine.
func filterSize() gen.Options {
	o := gen.Options{Executions: 2000, AttemptsPerStep: 1, Seed: 1}
	if benchFull() {
		o.Executions = 1_000_000
	}
	return o
}

// filterScript is what a user does with the filter: type a word letter by
// letter, take letters back, type another, keep it, page the filtered
// list, filter by a marker and a word for one, by an id's digits, and clear
// it, then page the whole list to its oldest and back. It ends where it
// began, so it repeats.
var filterScript = []string{
	"/", "c", "o", "m", "p", "l", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace",
	"k", "e", "y", "s", "+", "j", "enter", "pgdown", "pgdown", "G", "g",
	"/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace",
	"g", "e", "n", "-", "n", "a", "i", "v", "e", "enter", "pgdown",
	"/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace",
	"✖", "backspace", "d", "u", "p", "enter", "pgdown", "esc",
	"/", "0", "0", "7", "backspace", "backspace", "backspace", "esc",
	"pgdown", "pgdown", "G", "pgup", "g", // the whole list, unfiltered
}

func filterKey(s string) tea.KeyMsg {
	if s == "backspace" {
		return tea.KeyMsg{Type: tea.KeyBackspace}
	}
	return benchKey(s)
}

// BenchmarkExplorerFilter plays filterScript on the explorer over a
// generated database: one op is one key, from the KeyMsg through every
// command it starts (the host's FindExecutions for a filter that changed)
// until the next frame is drawn. Before the keys it measures the host's
// index build (index-build-ms, and the heap it keeps: index-MB), engine.Open
// (host-open-ms) and the explorer's first frame with the build running
// beside it (open-ms: tui.New to the first full frame).
// find-ms is FindExecutions alone, for each filter the script types.
func BenchmarkExplorerFilter(b *testing.B) {
	opts := filterSize()
	path, _ := cachedDB(b, opts)
	hostStart := time.Now()
	h := openHost(b, path)
	defer h.Close()
	hostOpen := time.Since(hostStart)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	h.IndexExecutions()
	m, r, _ := openExplorer(b, h, 160, 48)
	defer m.Close()
	open := time.Since(start)
	if _, _, err := h.FindExecutions("completed", 0, 1); err != nil { // waits for the build
		b.Fatal(err)
	}
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	executions := m.execs.total

	var finds []time.Duration
	for _, q := range []string{"c", "co", "com", "comp", "compl", "k", "ke", "key", "keys", "keys+", "keys+j",
		"g", "ge", "gen", "gen-", "gen-naive", "✖", "d", "du", "dup", "0", "00", "007"} {
		t := time.Now()
		if _, _, err := h.FindExecutions(q, 0, 48); err != nil {
			b.Fatal(err)
		}
		finds = append(finds, time.Since(t))
	}

	r.send(benchKey("shift+tab")) // the executions pane: page keys page the list
	r.settle(b)
	lat := make([]time.Duration, 0, b.N)
	worst := make([]time.Duration, len(filterScript))
	b.ResetTimer()
	for i := range b.N {
		t := time.Now()
		r.send(filterKey(filterScript[i%len(filterScript)]))
		r.settle(b)
		_ = m.View()
		d := time.Since(t)
		lat = append(lat, d)
		worst[i%len(filterScript)] = max(worst[i%len(filterScript)], d)
	}
	b.StopTimer()
	slow := []string{}
	for i, d := range worst {
		if d > 16*time.Millisecond {
			slow = append(slow, fmt.Sprintf("#%d %q %.1fms", i, filterScript[i], ms(d)))
		}
	}
	b.Logf("keys slower than 16 ms at worst: %v", slow)
	if m.execs.total == 0 {
		b.Fatal("the list is empty after the script")
	}
	// Reported after the timed loop: ResetTimer drops earlier metrics.
	b.ReportMetric(float64(executions), "executions")
	b.ReportMetric(ms(hostOpen), "host-open-ms")
	b.ReportMetric(ms(open), "open-ms")
	b.ReportMetric(ms(build), "index-build-ms")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "index-MB")
	b.ReportMetric(ms(percentile(finds, 0.5)), "find-p50-ms")
	b.ReportMetric(ms(percentile(finds, 1)), "find-max-ms")
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
}
