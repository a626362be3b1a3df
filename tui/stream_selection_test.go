package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
)

// execsNamed are n executions, newest first, named from first+n-1 down.
func execsNamed(first, n int) []history.Execution {
	xs := make([]history.Execution, n)
	for i := range xs {
		k := first + n - 1 - i
		xs[i] = history.Execution{ID: fmt.Sprintf("otlp-%05d", k), Scenario: "imported", Status: history.StatusCompleted,
			Started: fixedNow().Add(time.Duration(k) * time.Millisecond), Updated: fixedNow().Add(time.Duration(k) * time.Millisecond)}
	}
	return xs
}

// Executions streaming in by the hundred (a receiver taking 100k spans/s)
// push the one selected far below the window the list reads: the
// selection stays on it all the same, and the next key moves from it.
func TestSelectionStaysAsAStreamPushesItOutOfTheWindow(t *testing.T) {
	t.Parallel()
	src := &chanSource{snapshot: &snapshot{execs: execsNamed(0, 100)}, ch: make(chan notice.Notice, 8)}
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	r := newRunner(m)
	r.send(m.Init()())
	r.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	r.settle(t)
	r.send(keyMsg("shift+tab")) // to the list
	r.send(keyMsg("j"))
	r.settle(t)
	chosen := m.selectedExec().x.ID
	if chosen != "otlp-00098" {
		t.Fatalf("j selected %s, want the second newest", chosen)
	}
	src.mu.Lock()
	src.execs = append(execsNamed(100, 500), src.execs...)
	src.mu.Unlock()
	src.ch <- notice.Notice{Execution: "otlp-00599"}
	r.runUntil(t, "the 600 executions", func() bool { _, _, total := m.execs.Window(); return total == 600 })
	r.settle(t)
	if got := m.selectedExec(); got == nil || got.x.ID != chosen || m.selID != chosen {
		t.Fatalf("after 500 arrived the selection is on %v (selID %s), want %s", got, m.selID, chosen)
	}
	r.send(keyMsg("k"))
	r.settle(t)
	if got := m.selectedExec(); got == nil || got.x.ID != "otlp-00099" {
		t.Fatalf("k from %s selected %v, want the execution above it, otlp-00099", chosen, got)
	}
}
