package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/retrylab/retrylab/temporal/devserver"
)

// textWaiter takes "tick" signals, each a word, until one says stop.
func textWaiter(ctx workflow.Context) error {
	ch := workflow.GetSignalChannel(ctx, "tick")
	for {
		var word string
		ch.Receive(ctx, &word)
		if word == "stop" {
			return nil
		}
	}
}

// startWaiter starts the in-process Temporal server, a worker and a
// TextWaiter workflow with the given id, for the benchmarks that follow a
// live workflow; the benchmark's cleanup stops them all. It returns the
// client, a context that ends with the benchmark, and the server's address.
func startWaiter(b *testing.B, id string) (client.Client, context.Context, string) {
	b.Helper()
	s, err := devserver.Start(devserver.Options{Address: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop() })
	c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	w := worker.New(c, "bench", worker.Options{})
	w.RegisterWorkflowWithOptions(textWaiter, workflow.RegisterOptions{Name: "TextWaiter"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "bench"}, "TextWaiter"); err != nil {
		b.Fatal(err)
	}
	return c, ctx, s.Address()
}

// ptyScreen is the command running in a pseudo-terminal, read through a
// VT100 emulator, so a benchmark sees what a person would. After each read
// of the program's output it looks for the text it waits for, and reports
// the time of the read that put it on screen.
type ptyScreen struct {
	f    *os.File
	cmd  *exec.Cmd
	done chan error

	mu    sync.Mutex
	term  vt10x.Terminal
	want  string
	shown chan time.Time
}

func startPtyScreen(b *testing.B, cols, rows int, args ...string) *ptyScreen {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), envAsMain+"=1", "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		b.Fatalf("start in a pty: %v", err)
	}
	s := &ptyScreen{f: f, cmd: cmd, done: make(chan error, 1), term: vt10x.New(vt10x.WithSize(cols, rows)), shown: make(chan time.Time, 1)}
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				at := time.Now()
				out := buf[:n]
				// Answer what programs ask a terminal at start, as a real
				// one does (the emulator does not).
				if bytes.Contains(out, []byte("\x1b]11;?")) {
					_, _ = f.Write([]byte("\x1b]11;rgb:1c1c/1c1c/1c1c\x1b\\"))
				}
				if bytes.Contains(out, []byte("\x1b[6n")) {
					_, _ = f.Write([]byte("\x1b[1;1R"))
				}
				s.mu.Lock()
				_, _ = s.term.Write(out)
				if s.want != "" && strings.Contains(s.term.String(), s.want) {
					s.want = ""
					s.shown <- at
				}
				s.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return s
}

// await arms the screen to report when text shows.
func (s *ptyScreen) await(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(s.term.String(), text) {
		s.shown <- time.Now()
		return
	}
	s.want = text
}

func (s *ptyScreen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.term.String()
}

func (s *ptyScreen) waitShown(b *testing.B, what string, d time.Duration) time.Time {
	b.Helper()
	select {
	case at := <-s.shown:
		return at
	case err := <-s.done:
		b.Fatalf("%s: the explorer ended: %v\n%s", what, err, s.text())
	case <-time.After(d):
		b.Fatalf("%s: never on screen; it shows:\n%s", what, s.text())
	}
	return time.Time{}
}

// BenchmarkSignalToScreen measures what following a live workflow adds, as
// a user sees it: the real command's explorer on a cluster
// ('retrylab-temporal explore', this test binary run as the command) in a
// pseudo-terminal of 160×48, following a running workflow; each round
// sends a signal carrying a new word and takes the time from just before
// SignalWorkflow (the event is committed before the call returns, so this
// bounds the commit from above) until the read of the explorer's output
// that put "signal tick received" with that word on the screen. p50, p99
// and max over the rounds. RETRYLAB_BENCH_SIGNALS=N sends N signals before
// the explorer opens, for a long history (events-before says how long).
func BenchmarkSignalToScreen(b *testing.B) {
	c, ctx, address := startWaiter(b, "screen-waiter")

	// A long history first, with RETRYLAB_BENCH_SIGNALS=N: N signals
	// before the explorer opens.
	if n, _ := strconv.Atoi(os.Getenv("RETRYLAB_BENCH_SIGNALS")); n > 0 {
		for i := range n {
			if err := c.SignalWorkflow(ctx, "screen-waiter", "", "tick", fmt.Sprintf("fill%06d", i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	desc, err := c.DescribeWorkflowExecution(ctx, "screen-waiter", "")
	if err != nil {
		b.Fatal(err)
	}
	events := desc.GetWorkflowExecutionInfo().GetHistoryLength()

	screen := startPtyScreen(b, 160, 48, "explore", "--address", address)
	screen.await("TextWaiter screen-wait")
	screen.waitShown(b, "the workflow in the list", 30*time.Second)
	// The workflow is selected (the only one), its history read and
	// followed.
	if err := c.SignalWorkflow(ctx, "screen-waiter", "", "tick", "warm-up"); err != nil {
		b.Fatal(err)
	}
	screen.await(`"warm-up"`)
	screen.waitShown(b, "the first signal", 30*time.Second)
	time.Sleep(200 * time.Millisecond)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		word := fmt.Sprintf("w%06d", i)
		screen.await(`"` + word + `"`)
		t0 := time.Now()
		if err := c.SignalWorkflow(ctx, "screen-waiter", "", "tick", word); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, screen.waitShown(b, "signal "+word, 30*time.Second).Sub(t0))
	}
	b.StopTimer()
	_, _ = screen.f.Write([]byte("q"))
	if err := c.SignalWorkflow(ctx, "screen-waiter", "", "tick", "stop"); err != nil {
		b.Fatal(err)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(events), "events-before")
}
