package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/retrylab/retrylab/engine"
)

// importsDB is a new database file holding an OpenTelemetry trace and the
// Temporal history of a workflow still running.
func importsDB(t *testing.T) string {
	t.Helper()
	return importedDB(t, "../fixtures/otlp/genai-semconv.json", "../fixtures/temporal/inflight-sendemail.cli.json")
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
	// esc on the list drops a kept filter, here too (no fault to disarm).
	tm := filteredToNothing(t, h)
	tm.Send(keyMsg("esc"))
	waitFor(t, tm, "Executions 2")
	tm.Quit()
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
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
	tm := filteredToNothing(t, h)
	tm.Send(keyMsg("tab"))
	tm.Send(settleMsg{})
	tm.Quit()
	v := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View()
	plain := ansi.Strip(v)
	mustShow(t, plain, "nothing matched", "Executions /zzz 0", "none match the filter", "no execution selected", "Effects (inferred)")
	for _, bad := range []string{"n runs a scenario", "Outbox", "provider's truth", "o: CRM", "whole outbox", "o outbox"} {
		if strings.Contains(plain, bad) {
			t.Errorf("an imports-only database shows %q:\n%s", bad, plain)
		}
	}
	golden.RequireEqual(t, []byte(v))
}

// waitFor waits until the program's output has shown want.
// filteredToNothing is an explorer on h, read as a database of imports
// only, at 160x30, whose filter /zzz matches nothing.
func filteredToNothing(t *testing.T, h engine.Reader) *teatest.TestModel {
	t.Helper()
	m := New(Options{Source: engine.ImportsOnly(h), Now: fixedNow})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 30))
	waitFor(t, tm, "◇ temporal-5a7e9c20")
	for _, k := range []string{"/", "zzz", "enter"} {
		tm.Send(keyMsg(k))
	}
	waitFor(t, tm, "Executions /zzz 0")
	return tm
}

func waitFor(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}
