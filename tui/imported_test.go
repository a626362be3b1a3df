package tui

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// importedDB is a new database file holding the executions of the trace
// files (OpenTelemetry, or Temporal histories from fixtures/temporal),
// closed again so a host can open it.
func importedDB(t *testing.T, files ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "imported.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var err error
		if filepath.Base(filepath.Dir(f)) == "temporal" {
			_, err = temporal.ImportFile(db, f)
		} else {
			_, err = otlp.ImportFile(db, f)
		}
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// An execution imported from OpenTelemetry shows in the list and, once
// selected, its trace: runs, turns, tool calls and their attempts, as the
// fold makes them of the spans.
func TestImportedExecutionShowsItsTrace(t *testing.T) {
	t.Parallel()
	path := importedDB(t, "../fixtures/otlp/genai-semconv.json")
	h := openHost(t, path)
	defer h.Close()
	m, _, frame := openExplorer(t, h, 160, 48)
	defer m.Close()
	view := ansi.Strip(frame)
	for _, want := range []string{"otlp-conv-conv-9", "policy unknown (imported)", "▾ run 2", `turn 2  "invoke_agent invoicer"`,
		"send_invoice  call_a", "#1 ✖ error 503", "send_invoice  call_b", "send_sms  call_s", "#1 ⏱ cancelled",
		// No provider saw these effects: the pane infers them.
		"Effects (inferred)", "DUPLICATE send_invoice", "two attempts succeeded", "times of 2026-09-28", "✓ call_a #2  14:50:01.500", "span d000000000000004",
		"✓ call_b #1  14:51:00.600", "span e000000000000003", "5 side-effecting attempts", "1 duplicate", "0 possible", "0 absorbed"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}

// Spans that arrive at the receiver while the explorer is open show up in
// it: the receiver announces each execution it changed.
func TestReceivedSpansArriveLive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "live.db")
	h := openHost(t, path)
	defer h.Close()
	rc := &otlp.Receiver{DB: h.Store(), Source: "test", Stored: func(execs []string) {
		for _, x := range execs {
			h.Announce(x)
		}
	}}
	srv := httptest.NewServer(rc.Handler())
	defer srv.Close()
	post := func(file string) {
		t.Helper()
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+"/v1/traces", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("post %s: %d", file, resp.StatusCode)
		}
	}
	post("../fixtures/otlp/openllmetry-ticket.json")
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	post("../fixtures/otlp/genai-semconv.json")
	// Run the explorer as the runtime would until the notice has been
	// followed by the reads it calls for.
	r.runUntilView(t, "Executions 2")
	r.settle(t)
	view := ansi.Strip(m.View())
	for _, want := range []string{"Executions 2", "otlp-conv-conv-9", "otlp-4bf92f3577b34da6a3"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
}

// BenchmarkExplorerOpenImported opens the explorer on a database of
// imported traces (RETRYLAB_BENCH_IMPORTED_DB, made with `retrylab import`;
// BENCHMARKS.md says how) to its first full frame, as BenchmarkExplorerOpen
// does for native ones.
func BenchmarkExplorerOpenImported(b *testing.B) {
	path := os.Getenv("RETRYLAB_BENCH_IMPORTED_DB")
	if path == "" {
		b.Skip("set RETRYLAB_BENCH_IMPORTED_DB to a database of imported traces")
	}
	openOnce(b, path) // warm the page cache and the code paths
	var ts []time.Duration
	var peak int64
	b.ResetTimer()
	for range b.N {
		t, _, p := openOnce(b, path)
		ts = append(ts, t)
		peak = max(peak, p)
	}
	b.StopTimer()
	b.ReportMetric(ms(median(ts)), "first-frame-ms")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	}
}

// An imported run had no worker of retrylab's and its attempts no HTTP
// status: the rows say neither "worker starting" nor a status of 0.
func TestImportedRowsInventNoWorkerNorStatus(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "imported.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otlp.ImportFile(db, "../fixtures/otlp/openinference-charge.jsonl"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h := openHost(t, path)
	defer h.Close()
	m, _, frame := openExplorer(t, h, 160, 48)
	defer m.Close()
	view := ansi.Strip(frame)
	for _, want := range []string{"▾ run 1 · policy unknown (imported) · ✓ completed", `#1 ✓ ok  40ms → {"card":"tok_visa"}`, `#2 ✓ ok  600ms → {"charge":"ch_2"}`} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
	for _, bad := range []string{"worker starting", "✓ 0 →"} {
		if strings.Contains(view, bad) {
			t.Errorf("the explorer says %q of an imported trace:\n%s", bad, view)
		}
	}
}

// The list shows what is true of imported rows: ⚠ when the audit finds a
// duplicate in the execution, ◇ when it finds a possible one (the charge
// whose first attempt's outcome is unknown), and "imported · otlp" where
// a row retrylab ran shows its policy, not "none".
func TestImportedRowsShowDuplicatesAndWhereFrom(t *testing.T) {
	t.Parallel()
	path := importedDB(t, "../fixtures/otlp/adk-send-twice.json", "../fixtures/otlp/openinference-charge.jsonl")
	h := openHost(t, path)
	defer h.Close()
	// 200 columns: the list's column shows the ids and the start whole.
	m, _, frame := openExplorer(t, h, 200, 48)
	defer m.Close()
	view := ansi.Strip(frame)
	for _, want := range []string{"⚠ otlp-conv-sess-adk-mail-1", "◇ otlp-conv-sess-oi-7", "imported · otlp  2026-09-28 14:50"} {
		if !strings.Contains(view, want) {
			t.Errorf("the explorer lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "none  2026-09-28") {
		t.Errorf("an imported row says its policy is none:\n%s", view)
	}
}

// o on an imported execution stays on its inferred effects (no simulated
// outbox or CRM saw them) and says why, instead of showing the simulated
// CRM.
func TestGoldenImportedEffectsStayOnO(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/genai-semconv.json"))
	defer h.Close()
	v := view(t, h, 160, 40, "DUPLICATE send_invoice", "o")
	mustShow(t, v, "imported view after o", "Effects (inferred)", "DUPLICATE send_invoice",
		"no simulated outbox or CRM here: effects are inferred")
	if strings.Contains(v, "CRM (provider's truth)") || strings.Contains(v, "o: CRM") {
		t.Errorf("o on an imported execution offers or shows the simulated CRM:\n%s", v)
	}
	golden.RequireEqual(t, []byte(v))
}

// Executions imported before importers set the duplicate flag
// (testdata/imported-v1, written by 6066a84) show ⚠ in the list once the
// host has audited them on open, as executions imported today do; the
// charge whose outcome is unknown shows ◇ (a possible duplicate).
func TestGoldenOldImportsShowDuplicates(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "imported-v1", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "retrylab.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h := openHost(t, path)
	defer h.Close()
	m := New(Options{Source: h, Now: fixedNow})
	t.Cleanup(m.Close)
	// The flags, and the selected workflow's trace and inferred effects
	// read: the golden holds them all.
	v := viewModelOnce(t, m, 160, 30, []string{"⚠ otlp-conv-sess-adk-mail", "⚠ otlp-conv-conv-9", "⚠ temporal-3f1c2a10", "◇ otlp-conv-sess-oi-7",
		"✓ execution completed", "DUPLICATE SendConfirmation", "0 possible"})
	for _, clean := range []string{"otlp-conv-sess-oi-7", "otlp-4bf92f3577b34da6a3"} {
		if strings.Contains(v, "⚠ "+clean) || !strings.Contains(v, clean) {
			t.Errorf("%s: flagged, or not listed:\n%s", clean, v)
		}
	}
	golden.RequireEqual(t, []byte(v))
}

// The detail of an imported run says when it started, not "worker pid 0":
// no worker of retrylab's ran it. A Temporal workflow's run is the same.
func TestImportedRunDetailInventsNoWorker(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/openinference-charge.jsonl"))
	defer h.Close()
	// The trace's run row, not only the list, must be in before g moves
	// to it: a trace read after the key puts the selection at its end.
	m := New(Options{Source: h, Now: fixedNow})
	t.Cleanup(m.Close)
	v := viewModelOnce(t, m, 160, 48, []string{"otlp-conv-sess-oi-7", "run 1 · policy unknown (imported)"}, "g")
	mustShow(t, v, "an imported run's detail", "run 1 started 2026-09-28T14:50:00Z")
	if strings.Contains(v, "worker pid 0") {
		t.Errorf("an imported run's detail names worker pid 0:\n%s", v)
	}
}

// The filter finds imported executions by the audit's marks, from their
// records: ◇ (or "pos") lists the one with a possible duplicate alone, ⚠
// the one with a duplicate, ✓ the completed one with neither.
func TestFilterFindsPossibleDuplicates(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/adk-send-twice.json", "../fixtures/otlp/openinference-charge.jsonl",
		"../fixtures/otlp/openllmetry-ticket.json"))
	defer h.Close()
	ids := []string{"otlp-conv-sess-oi-7", "otlp-conv-sess-adk-mail-1", "otlp-4bf92f3577b34da6a3"}
	for filter, want := range map[string]string{"◇": ids[0], "pos": ids[0], "⚠": ids[1], "✓": ids[2]} {
		m := New(Options{Source: h, Now: fixedNow})
		t.Cleanup(m.Close)
		tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(200, 40))
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("◇ otlp-conv-sess-oi-7")) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
		for _, k := range []string{"/", filter, "enter"} {
			tm.Send(keyMsg(k))
		}
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Executions /"+filter+" 1")) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
		tm.Send(settleMsg{})
		tm.Quit()
		v := ansi.Strip(tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View())
		// A row of the list: its badge, then its id (the trace pane's
		// title names the execution it shows without one, and may still
		// show the one selected before the filter).
		listed := func(id string) bool {
			for _, badge := range []string{"⚠ ", "◇ ", "✓ "} {
				if strings.Contains(v, badge+id) {
					return true
				}
			}
			return false
		}
		for _, id := range ids {
			if listed(id) != (id == want) {
				t.Errorf("filter %q: %s listed %v, want %v:\n%s", filter, id, !(id == want), id == want, v)
			}
		}
	}
}

// The slide of an imported execution says what the audit says: no
// outbox was watched, so "the outbox says 0 messages" would contradict
// the ⚠ or ◇ beside it in the list.
func TestGoldenImportedSlideSaysTheAudit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, id, says string }{
		{"adk-send-twice.json", "otlp-conv-sess-adk-mail-1", "the audit says   a side effect happened twice  ← duplicate"},
		{"openinference-charge.jsonl", "otlp-conv-sess-oi-7", "the audit says   a side effect possibly happened twice  ← possible"},
		{"openllmetry-ticket.json", "otlp-4bf92f3577b34da6a3", "the audit says   no repeated side effects  ✓"},
	} {
		h := openHost(t, importedDB(t, "../fixtures/otlp/"+c.file))
		v := view(t, h, 80, 24, c.id, "s")
		h.Close()
		mustShow(t, v, c.file+"'s slide", c.says)
		if strings.Contains(v, "the outbox says") {
			t.Errorf("%s: the slide of an import speaks of an outbox:\n%s", c.file, v)
		}
		fits(t, v, 80, 24)
		if c.file == "adk-send-twice.json" {
			golden.RequireEqual(t, []byte(v))
		}
	}
}
