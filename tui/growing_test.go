package tui

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
)

// orderRun is the fixture Temporal workflow order-run1 as the explorer
// gets it: its record and its events, translated.
func orderRun(t *testing.T) (history.Execution, []trace.Event) {
	t.Helper()
	data, err := os.ReadFile("../fixtures/temporal/order-run1.cli.json")
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := temporal.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	exec, run := temporal.Identify(h)
	return history.Execution{ID: exec, Imported: temporal.ImportedFormat},
		temporal.Events([]temporal.Run{{RunID: run, Events: h.Events}})
}

// A followed imported trace that only grows (GrowingImports) is extended
// with the new events, not folded again; what the pane shows is what a
// fresh fold of the longer trace shows.
func TestGrowingImportExtendsTheTrace(t *testing.T) {
	t.Parallel()
	x, evs := orderRun(t)
	exec := x.ID
	rows := func(p *tracePane) []string {
		var out []string
		for _, r := range p.rows {
			out = append(out, fmt.Sprintf("%d %v %s", r.depth, r.n.mark, r.n.text))
		}
		return out
	}
	m := New(Options{Source: record(t, []string{"naive", "run"}), Now: fixedNow})
	t.Cleanup(m.Close)
	p := m.trace
	half := len(evs) / 2
	p.Update(traceMsg{id: exec, x: x, imported: evs[:half], grows: true})
	first := p.tr
	p.Update(traceMsg{id: exec, x: x, imported: evs, grows: true})
	if p.tr != first || p.tr.t.Events != len(evs) {
		t.Fatalf("the trace was folded again, or not extended: %d of %d events", p.tr.t.Events, len(evs))
	}
	fresh := New(Options{Source: record(t, []string{"naive", "run"}), Now: fixedNow})
	t.Cleanup(fresh.Close)
	fresh.trace.Update(traceMsg{id: exec, x: x, imported: evs})
	got, want := rows(p), rows(fresh.trace)
	if len(got) != len(want) || len(got) < 10 {
		t.Fatalf("%d rows extended, %d folded whole", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("row %d: extended %q, folded whole %q", i, got[i], want[i])
		}
	}
	// Without the promise, a new read is folded whole.
	p.Update(traceMsg{id: exec, x: x, imported: evs})
	if p.tr == first {
		t.Error("a read of a trace that may change was applied as an extension")
	}
}

// Attempts a Temporal history did not keep are numbered as show and the
// audit number them: "#1" for one, "#1-2" for two (show: "attempts 1-2",
// audit: "call 5 attempts 1-2"), never "#2 ⋯ 2 earlier attempts".
func TestNotKeptAttemptsNumberedAsShowDoes(t *testing.T) {
	t.Parallel()
	x, evs := orderRun(t)
	exec := x.ID
	m := New(Options{Source: record(t, []string{"naive", "run"}), Now: fixedNow})
	t.Cleanup(m.Close)
	m.trace.Update(traceMsg{id: exec, x: x, imported: evs})
	var text string
	for _, r := range m.trace.rows {
		text += r.n.text + "\n"
	}
	for _, want := range []string{"#1 ⋯ not kept by the source", "#1-2 ⋯ not kept by the source", "#1-3 ⋯ not kept by the source"} {
		if !strings.Contains(text, want) {
			t.Errorf("the trace lacks %q\n%s", want, text)
		}
	}
	if strings.Contains(text, "earlier attempt") {
		t.Errorf("unkept attempts counted, not numbered\n%s", text)
	}
}
