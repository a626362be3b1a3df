package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine"
)

// readerOnly is a source that only reads, as a Temporal cluster's is:
// engine.Reader and nothing else, whatever the value under it can do.
type readerOnly struct{ engine.Reader }

// footerLine is the last line of a frame: the status bar and its keys.
func footerLine(v string) string {
	lines := strings.Split(v, "\n")
	return lines[len(lines)-1]
}

// mustOfferNothingItCannotDo fails for each key of a run, resume, fault or
// world action that the footer shows.
func mustOfferNothingItCannotDo(t *testing.T, v string) {
	t.Helper()
	foot := footerLine(v)
	for _, k := range []string{"n run", "t timeout", "c crash", "r resume", "x kill", "esc disarm"} {
		if strings.Contains(foot, k) {
			t.Errorf("the footer offers %q, which the source cannot do:\n%s", k, foot)
		}
	}
	for _, state := range []string{"keys scen", "journal", "armed", "world clock", "+0h"} {
		if strings.Contains(foot, state) {
			t.Errorf("the footer shows %q, a state the source does not have:\n%s", state, foot)
		}
	}
}

// A read-only source (a Temporal cluster) at 80×24: the footer offers the
// keys that read, and no run, resume, fault or world key; those keys do
// nothing, the help does not list them.
func TestGoldenReadOnlyAt80x24(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	src := readerOnly{snap}
	v := viewOutbox(t, src, 80, 24, "duplicate send")
	mustShow(t, v, "read-only view", "f final-only", "? help", "q quit", "2 messages ← duplicate send")
	mustOfferNothingItCannotDo(t, v)
	golden.RequireEqual(t, []byte(v))

	m := open(t, src, 80, 24)
	press(t, m, "n", "t", "T", "c", "C", "x", "r", "K", "J", "D", "A", "R", "E")
	if calls := snap.Calls(); len(calls) > 0 {
		t.Errorf("keys reached actions on a read-only source: %v", calls)
	}
	if m.picker.open || m.modes.confirm != nil {
		t.Error("a read-only source opened the picker or asked a question")
	}
	press(t, m, "?")
	help := m.View()
	for _, desc := range []string{"run a scenario", "resume selected", "arm:", "kill the worker", "clock +25 h", "reset the world", "erase all", "delete journal", "toggle idempotency"} {
		if strings.Contains(help, desc) {
			t.Errorf("the help of a read-only source lists %q:\n%s", desc, help)
		}
	}
	mustShow(t, help, "read-only help", "final attempt only", "filter executions", "mark to compare",
		"pgup/^u", "pgdn/^d", "esc     clear the filter / close", "ctrl+c  quit at once")
}

// A database of imported traces only, as the CLI shows it
// (engine.OnlyImported, then engine.ImportsOnly) at 80×24: the imported trace
// with its inferred effects, and no key of an action that needs a run.
func TestGoldenImportsOnlyAt80x24(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/genai-semconv.json"))
	defer h.Close()
	only, err := engine.OnlyImported(h)
	if err != nil || !only {
		t.Fatalf("OnlyImported of a database of imports = %v, %v", only, err)
	}
	v := view(t, engine.ImportsOnly(h), 80, 24, "DUPLICATE send_invoice")
	mustShow(t, v, "imports-only view", "Effects (inferred)", "? help", "q quit")
	mustOfferNothingItCannotDo(t, v)
	golden.RequireEqual(t, []byte(v))
}

// A host over a database retrylab ran in keeps every key: the footer of
// the article's naive run is what it was.
func TestFullSourceOffersEveryKey(t *testing.T) {
	t.Parallel()
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "duplicate send")
	mustShow(t, footerLine(v), "footer", "n run", "c crash", "r resume", "keys scn")
}
