package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// importsDB is a new database file holding an OpenTelemetry trace and the
// Temporal history of a workflow still running, closed again so a host
// can open it.
func importsDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "imports.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otlp.ImportFile(db, "../fixtures/otlp/genai-semconv.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := temporal.ImportFile(db, "../fixtures/temporal/inflight-sendemail.cli.json"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// On a database of imports only, / opened again on a kept filter shows
// it selected: what is typed replaces it ("/pos", not "/temporalpos").
func TestFilterReopenedReplacesTheKeptFilter(t *testing.T) {
	t.Parallel()
	h := openHost(t, importsDB(t))
	defer h.Close()
	v := ansi.Strip(view(t, engine.ImportsOnly(h), 160, 30, "◇ temporal-5a7e9c20", "/", "temporal", "enter", "/", "pos"))
	mustShow(t, v, "the filter typed over", "/pos", "◇ temporal-5a7e9c20")
	if strings.Contains(v, "temporalpos") {
		t.Errorf("/ appended to the kept filter:\n%s", v)
	}
	// An arrow keeps the selection to edit: the letters go after it.
	v = ansi.Strip(view(t, engine.ImportsOnly(h), 160, 30, "◇ temporal-5a7e9c20", "/", "temp", "enter", "/", "end", "oral"))
	mustShow(t, v, "the filter edited", "/temporal", "◇ temporal-5a7e9c20")
	// Backspace on the selection clears it all.
	v = ansi.Strip(view(t, engine.ImportsOnly(h), 160, 30, "◇ temporal-5a7e9c20", "/", "temporal", "enter", "/", "backspace", "enter"))
	if strings.Contains(v, "/temporal") || strings.Contains(v, "/tempora") {
		t.Errorf("backspace on the selected filter left some of it:\n%s", v)
	}
}

// A filter that matches nothing on a database of imports only: the trace
// says no execution is selected, and offers no n (nothing runs here); the
// right pane stays the inferred effects and names no simulated outbox,
// and the footer offers no o (outbox/CRM).
func TestGoldenImportsOnlyNothingMatches(t *testing.T) {
	t.Parallel()
	h := openHost(t, importsDB(t))
	defer h.Close()
	v := view(t, engine.ImportsOnly(h), 160, 30, "◇ temporal-5a7e9c20", "/", "zzz", "enter", "tab")
	plain := ansi.Strip(v)
	mustShow(t, plain, "nothing matched", "Executions /zzz 0", "none match the filter", "no execution selected", "Effects (inferred)")
	for _, bad := range []string{"n runs a scenario", "Outbox", "provider's truth", "o: CRM", "whole outbox", "o outbox"} {
		if strings.Contains(plain, bad) {
			t.Errorf("an imports-only database shows %q:\n%s", bad, plain)
		}
	}
	golden.RequireEqual(t, []byte(v))
}
