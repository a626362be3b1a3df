package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

// An execution imported from OpenTelemetry shows in the list and, once
// selected, its trace: runs, turns, tool calls and their attempts, as the
// fold makes them of the spans.
func TestImportedExecutionShowsItsTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "imported.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otlp.ImportFile(db, "../fixtures/otlp/genai-semconv.json"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h := openHost(t, path)
	defer h.Close()
	m, _, frame := openExplorer(t, h, 160, 48)
	defer m.Close()
	view := ansi.Strip(frame)
	for _, want := range []string{"otlp-conv-conv-9", "policy unknown (imported)", "▾ run 2", `turn 2  "chat gpt-4o"`,
		"send_invoice  call_a", "#1 ✖ error 503", "send_invoice  call_b", "send_sms  call_s", "#1 ⏱ timeout"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}
