package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/control"
)

// A file imported by 'retrylab import' in another terminal, through the
// host that the explorer is (control.Client.ImportFile, as the command does
// beside it), shows up in the open explorer.
func TestAttachedImportArrivesLive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "live.db")
	h := openHost(t, path)
	defer h.Close()
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ImportFile("../fixtures/otlp/openllmetry-ticket.json", "otlp"); err != nil {
		t.Fatal(err)
	}
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	res, err := c.ImportFile("../fixtures/otlp/genai-semconv.json", "otlp")
	if err != nil || strings.Join(res.Executions, ",") != "otlp-conv-conv-9" {
		t.Fatalf("import through the explorer's host: %+v %v", res, err)
	}
	r.runUntilView(t, "Executions 2")
	r.settle(t)
	view := ansi.Strip(m.View())
	for _, want := range []string{"Executions 2", "otlp-conv-conv-9", "otlp-4bf92f3577b34da6a3"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}

// Executions imported in another terminal while one down the list is
// selected are listed above it (newest first): the selection stays on the
// execution chosen, its trace still shown, instead of passing to whichever
// execution now stands at its place in the list. On the first row it
// follows the newest.
func TestSelectionStaysAsExecutionsArrive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "live.db")
	h := openHost(t, path)
	defer h.Close()
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, f := range []string{"openllmetry-ticket.json", "openinference-charge.jsonl"} {
		if _, err := c.ImportFile("../fixtures/otlp/"+f, "otlp"); err != nil {
			t.Fatal(err)
		}
	}
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	// The second of the list: the first imported.
	for _, k := range []string{"shift+tab", "j"} {
		r.send(keyMsg(k))
	}
	r.settle(t)
	const chosen = "otlp-4bf92f3577b34da6a3ce929d0e0e4736"
	if m.selID != chosen {
		t.Fatalf("selected %q, want %s:\n%s", m.selID, chosen, ansi.Strip(m.View()))
	}
	for _, f := range []string{"genai-semconv.json", "adk-send-twice.json"} {
		if _, err := c.ImportFile("../fixtures/otlp/"+f, "otlp"); err != nil {
			t.Fatal(err)
		}
	}
	r.runUntilView(t, "Executions 4")
	r.settle(t)
	view := ansi.Strip(m.View())
	if m.selID != chosen || !strings.Contains(view, "›✓ otlp-4bf92f3577b34da6a3") || !strings.Contains(view, "Trace  "+chosen) {
		t.Errorf("the selection left %s as executions arrived (now %q):\n%s", chosen, m.selID, view)
	}

	// On the first row, the selection follows the newest, as a run started
	// in another terminal is watched.
	r.send(keyMsg("g"))
	r.settle(t)
	if _, err := c.ImportFile("../fixtures/temporal/order-run1.cli.json", "temporal"); err != nil {
		t.Fatal(err)
	}
	const newest = "temporal-3f1c2a10-7d4e-4b8a-9c61-0e5f2b7a1001"
	r.runUntil(t, "the selection on the first row following the newest", func() bool { return m.selID == newest })
}

// An explorer attached to another retrylab (serve, or the explorer that
// holds the database) whose process goes away keeps its screen, and its
// footer says, until it quits, that what shows is no longer live.
func TestAttachedExplorerSaysItsHostIsGone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "live.db")
	h := openHost(t, path)
	c, err := control.Dial(path)
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ImportFile("../fixtures/otlp/openllmetry-ticket.json", "otlp"); err != nil {
		h.Close()
		t.Fatal(err)
	}
	m, r, _ := openExplorer(t, c, 160, 48)
	defer m.Close()
	h.Close()
	r.runUntilView(t, "not live")
	r.send(flashExpiredMsg{seq: m.status.seq}) // the message does not fade
	view := ansi.Strip(m.View())
	for _, want := range []string{"not live: the retrylab that held", "quit or was killed", "otlp-4bf92f3577b34da6a3"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}
