package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/retrylab/retrylab/engine/trace"
)

// An imported attempt's Detail says what its span recorded and what the
// audit infers of it: no HTTP status 0, no provider that "delivered
// nothing", no placeholders, and the date of a trace not started today.
// The golden is call_a's second attempt, one of the audit's DUPLICATE.
func TestGoldenImportedAttemptDetailAt80x24(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/genai-semconv.json"))
	defer h.Close()
	// From the last row up: send_sms's attempt, its call, call_b's
	// attempt, its call, turn 2, run 2, create_refund's attempt, its call,
	// call_a's #2.
	// tab tab: the Detail tab of the narrow layout.
	keys := append(strings.Split(strings.Repeat("up ", 9), " ")[:9], "tab", "tab")
	v := view(t, h, 80, 24, "DUPLICATE send_invoice", keys...)
	mustShow(t, v, "imported attempt's detail", "#2 send_invoice", "span d000000000000004", "started 2026-09-28 14:50:01.500", "[ Detail ]", " Effects ",
		"→ ok in 400ms", `result {"sent":true}`, "effects inferred by the audit", "DUPLICATE send_invoice")
	for _, wrong := range []string{"→ 0 ok", "provider delivered", "ok → result", "→ ?", "( tool)", "result —", "args —"} {
		if strings.Contains(v, wrong) {
			t.Errorf("the imported attempt's detail says %q:\n%s", wrong, v)
		}
	}
	golden.RequireEqual(t, []byte(v))
}

// Orphan and cancelled spans read in the explorer as `retrylab show`
// prints them, and the Effects rows of the selected attempt are marked •.
func TestImportedRowsShowOrphansCancellationsAndLinks(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/otlp/genai-semconv.json"))
	defer h.Close()
	last := view(t, h, 160, 40, "DUPLICATE send_invoice")
	mustShow(t, last, "imported trace", "#1 ⏱ cancelled  2.9s", "(orphan)", `#2 ✓ ok  400ms → {"sent":true}`,
		"#1 ✓ ok  100ms → result not recorded")
	// call_b's #1 (three rows up) is evidence of the DUPLICATE: its Effects rows are marked.
	v := view(t, h, 160, 40, "DUPLICATE send_invoice", "up", "up", "up")
	mustShow(t, v, "linked effects", "•  ✓ call_b #1  14:51:00.600", "•    span e000000000000003")
	if strings.Contains(v, "•  ✓ call_a #2") {
		t.Errorf("an attempt not selected is marked:\n%s", v)
	}
}

// Detail shows arguments and results as recorded: key order kept, no
// HTML escapes ("\u003c") where the source wrote "<".
func TestCompactKeepsWhatWasRecorded(t *testing.T) {
	for in, want := range map[string]string{
		`{"to": "a<b>", "subject": "x & y"}`: `{"to":"a<b>","subject":"x & y"}`,
		"[100, 10]":                          "[100,10]",
		"not json {":                         "not json {",
	} {
		if got := compact([]byte(in)); got != want {
			t.Errorf("compact(%s) = %s, want %s", in, got, want)
		}
	}
}

// A Temporal activity's attempt shows the arguments the activity was
// scheduled with: Temporal records them once, for every attempt, and the
// audit quotes them; "args not recorded" would contradict it.
func TestTemporalAttemptDetailShowsTheActivitysInput(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/temporal/order-run1.cli.json"))
	defer h.Close()
	m, _, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	tv := m.trace.tr
	var call *trace.Call
	var walk func(n trace.Node)
	walk = func(n trace.Node) {
		if c, ok := n.(*trace.Call); ok && c.Tool == "SendConfirmation" {
			call = c
		}
		for _, k := range n.Children() {
			walk(k)
		}
	}
	for _, r := range tv.t.Runs {
		walk(r)
	}
	if call == nil || len(call.Args) == 0 || len(call.Attempts) == 0 {
		t.Fatalf("no SendConfirmation call with arguments and attempts in %s", tv.t.Execution)
	}
	a := call.Attempts[len(call.Attempts)-1]
	lines := strings.Join(tv.importedAttemptDetail(a, fixedNow()), "\n")
	if want := "args " + compact(call.Args); !strings.Contains(lines, want) {
		t.Errorf("attempt #%d's detail lacks %q:\n%s", a.N, want, lines)
	}
}
