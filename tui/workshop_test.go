package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine"
)

// TestKeysInOneBurstAllCount: the reader hands keys typed together over as
// one message with several runes; each must act.
func TestKeysInOneBurstAllCount(t *testing.T) {
	m := open(t, article(t), 160, 40)
	press(t, m, "shift+tab")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	drive(t, m, cmd)
	if m.selID != "exec_7K2Q" {
		t.Fatalf("jj in one burst: selected %q, want the third execution exec_7K2Q", m.selID)
	}
	// A burst that opens the filter types the rest into it.
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/safe")})
	drive(t, m, cmd)
	if !m.filtering || m.filter.Value() != "safe" {
		t.Fatalf("/safe in one burst: filtering=%v value %q", m.filtering, m.filter.Value())
	}
}

// restarting is a snapshot whose Start restarts an existing execution, as
// running a scenario with a fixed execution id does, and keeps its worker
// running.
type restarting struct {
	*snapshot
	id      string
	running []string
}

func (r *restarting) Start(name string, o engine.RunOptions) (*engine.Run, error) {
	r.snapshot.log("start %s", name)
	r.running = []string{r.id}
	return &engine.Run{Execution: r.id, Number: 2}, nil
}

func (r *restarting) Running() []string { return r.running }

// TestRerunFollowsTheRunItStarted: running the scenario of an older
// execution restarts that execution; the explorer selects it (not the
// newest), and x kills its worker.
func TestRerunFollowsTheRunItStarted(t *testing.T) {
	src := &restarting{snapshot: article(t), id: "exec_7K2Q"}
	m := open(t, src, 160, 40)
	if m.selID != "exec_3C5R" {
		t.Fatalf("starts on the newest: %q", m.selID)
	}
	press(t, m, "n", "enter") // naive, first in lesson order
	if m.selID != "exec_7K2Q" || m.tr == nil || m.tr.exec.ID != "exec_7K2Q" {
		t.Fatalf("after restarting exec_7K2Q the explorer shows %q", m.selID)
	}
	if !strings.Contains(m.flash, "run 2 of exec_7K2Q") {
		t.Fatalf("flash: %q", m.flash)
	}
	press(t, m, "x")
	if calls := src.Calls(); calls[len(calls)-1] != "kill exec_7K2Q" {
		t.Fatalf("x after the restart: %v", calls)
	}
}
