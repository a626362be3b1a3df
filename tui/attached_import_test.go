package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine"
)

// A file imported by 'retrylab import' in another terminal, through the
// host that the explorer is (engine.Client.ImportFile, as the command does
// beside it), shows up in the open explorer.
func TestAttachedImportArrivesLive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "live.db")
	h := openHost(t, path)
	defer h.Close()
	c, err := engine.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ImportFile("../fixtures/otlp/openllmetry-ticket.json", engine.ImportOTLP); err != nil {
		t.Fatal(err)
	}
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	res, err := c.ImportFile("../fixtures/otlp/genai-semconv.json", engine.ImportOTLP)
	if err != nil || strings.Join(res.Executions(), ",") != "otlp-conv-conv-9" {
		t.Fatalf("import through the explorer's host: %+v %v", res.OTLP, err)
	}
	deadline := time.After(time.Minute)
	for !strings.Contains(ansi.Strip(m.View()), "Executions 2") {
		select {
		case msg := <-r.msgs:
			r.handle(msg)
		case <-deadline:
			t.Fatalf("the imported execution never showed:\n%s", ansi.Strip(m.View()))
		}
	}
	r.settle(t)
	view := ansi.Strip(m.View())
	for _, want := range []string{"Executions 2", "otlp-conv-conv-9", "otlp-4bf92f3577b34da6a3"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}
