package timeline

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// naive is the article's window 1: the provider delivers at +0.011 s, the
// deadline passes at +1.0 s, the retry delivers again at +1.07 s.
func naive() *trace.Trace {
	mail := func(id string) *trace.Effect {
		return &trace.Effect{Service: "mail", ID: id, Target: "jordan@acme.dev"}
	}
	return trace.Fold("exec_7K2Q", []trace.Event{
		{Kind: trace.ExecutionStarted, Time: at(0), Scenario: "naive", Text: "none"},
		{Kind: trace.RunStarted, Time: at(0), Run: 1, PID: 4001},
		{Kind: trace.TurnStarted, Time: at(0), Run: 1, Turn: 1, Text: "Sending the June invoice"},
		{Kind: trace.CallScheduled, Time: at(0), Run: 1, Call: "step-4", Tool: "send_invoice_email"},
		{Kind: trace.AttemptStarted, Time: at(0), Run: 1, Call: "step-4", Attempt: 1},
		{Kind: trace.EffectObserved, Time: at(11), Run: 1, Call: "step-4", Attempt: 1, Effect: mail("msg_3def2b")},
		{Kind: trace.AttemptFinished, Time: at(1000), Run: 1, Call: "step-4", Attempt: 1, Outcome: trace.OutcomeTimeout, Duration: time.Second},
		{Kind: trace.RetryScheduled, Time: at(1000), Run: 1, Call: "step-4", Attempt: 1, Delay: 50 * time.Millisecond},
		{Kind: trace.AttemptStarted, Time: at(1050), Run: 1, Call: "step-4", Attempt: 2},
		{Kind: trace.EffectObserved, Time: at(1070), Run: 1, Call: "step-4", Attempt: 2, Effect: mail("msg_fee683")},
		{Kind: trace.AttemptFinished, Time: at(1072), Run: 1, Call: "step-4", Attempt: 2, Outcome: trace.OutcomeOK, Duration: 22 * time.Millisecond},
		{Kind: trace.ExecutionEnded, Time: at(1100), Run: 1, Outcome: trace.OutcomeOK},
	})
}

// crashed is window 2: the worker dies with an attempt out, 53 s pass with
// no worker, and the resumed run sends again.
func crashed() *trace.Trace {
	return trace.Fold("exec_3C5R", []trace.Event{
		{Kind: trace.ExecutionStarted, Time: at(0), Scenario: "invoice-crm", Text: "none"},
		{Kind: trace.RunStarted, Time: at(0), Run: 1, PID: 4001},
		{Kind: trace.CallScheduled, Time: at(0), Run: 1, Call: "step-5", Tool: "record_invoice"},
		{Kind: trace.AttemptStarted, Time: at(100), Run: 1, Call: "step-5", Attempt: 1},
		{Kind: trace.EffectObserved, Time: at(300), Run: 1, Call: "step-5", Attempt: 1, Effect: &trace.Effect{Service: "crm", ID: "inv_0611"}},
		{Kind: trace.RunCrashed, Time: at(500), Run: 1, ExitCode: 137, Fault: "crash-after-effect"},
		{Kind: trace.RunStarted, Time: at(53_600), Run: 2, PID: 4002},
		{Kind: trace.CallScheduled, Time: at(53_600), Run: 2, Call: "step-5", Tool: "record_invoice"},
		{Kind: trace.AttemptStarted, Time: at(53_700), Run: 2, Call: "step-5", Attempt: 2},
		{Kind: trace.EffectObserved, Time: at(53_800), Run: 2, Call: "step-5", Attempt: 2, Effect: &trace.Effect{Service: "crm", ID: "inv_0612"}},
		{Kind: trace.AttemptFinished, Time: at(53_900), Run: 2, Call: "step-5", Attempt: 2, Outcome: trace.OutcomeOK},
		{Kind: trace.ExecutionEnded, Time: at(54_000), Run: 2, Outcome: trace.OutcomeOK},
	})
}

func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestNaiveOrderInTime(t *testing.T) {
	tl := Build(naive(), Options{})
	if len(tl.Lanes) != 3 || tl.Lanes[0].Kind != LaneCall || tl.Lanes[1].Label != "mail" || tl.Lanes[2].Kind != LaneWorkers {
		t.Fatalf("lanes: %+v", tl.Lanes)
	}
	var moments []string
	for _, m := range tl.Moments() {
		moments = append(moments, Offset(m.At, time.Millisecond)+" "+m.Text)
	}
	all := strings.Join(moments, "\n")
	for _, want := range []string{
		"+0.011s mail delivered msg_3def2b (step-4 #1)",
		"+1.000s step-4 #1 ⏱ deadline passed after 1s (the provider had acted: ◆)",
		"+1.070s mail delivered msg_fee683 (step-4 #2)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("moments lack %q:\n%s", want, all)
		}
	}
	if strings.Index(all, "msg_3def2b") > strings.Index(all, "deadline") || strings.Index(all, "deadline") > strings.Index(all, "msg_fee683") {
		t.Errorf("moments out of order:\n%s", all)
	}
	golden(t, strings.Join(tl.Text(80), "\n")+"\n")
}

func TestCrashShadesTheIdleSpan(t *testing.T) {
	tl := Build(crashed(), Options{})
	rows := tl.Rows(100, tl.Fit(), -1, 0, -1)
	workers := rows[len(rows)-1]
	if !strings.Contains(workers, "☠") || !strings.Contains(workers, "░░░░") {
		t.Errorf("workers lane lacks the crash and the idle span: %q", workers)
	}
	a := tl.Item(tl.Attempts[0])
	if !a.To.Equal(at(500)) || a.Mark != trace.MarkAmbiguous {
		t.Errorf("the killed attempt ends at the crash: %+v", a)
	}
	golden(t, strings.Join(tl.Text(100), "\n")+"\n")
}

func TestRowsFitTheirWidth(t *testing.T) {
	for _, tr := range []*trace.Trace{naive(), crashed()} {
		tl := Build(tr, Options{})
		w := tl.Fit()
		for _, width := range []int{40, 80, 120, 160} {
			for _, win := range []Window{w, tl.Zoom(w, 0.1, at(1000)), tl.Scroll(tl.Zoom(w, 0.5, at(0)), 0.5)} {
				for i, row := range tl.Rows(width, win, 0, 0, -1) {
					if got := ansi.StringWidth(row); got != width {
						t.Errorf("%s at %d, row %d is %d wide: %q", tr.Execution, width, i, got, row)
					}
				}
			}
		}
	}
}

func TestZoomAndScrollStayInside(t *testing.T) {
	tl := Build(naive(), Options{})
	w := tl.Fit()
	in := tl.Zoom(w, 0.25, at(1000))
	if in.Span != w.Span/4 || in.From.After(at(1000)) || in.To().Before(at(1000)) {
		t.Errorf("zoom in around +1s: %+v", in)
	}
	if out := tl.Zoom(in, 100, at(1000)); out != w {
		t.Errorf("zoom out is never wider than the whole: %+v", out)
	}
	if back := tl.Scroll(w, -1); back != w {
		t.Errorf("scroll before the start: %+v", back)
	}
	if fine := tl.Zoom(w, 1e-9, at(0)); fine.Span != time.Millisecond {
		t.Errorf("the narrowest window is 1ms: %v", fine.Span)
	}
	second := tl.Attempts[1]
	if r := tl.Reveal(in, second); tl.Item(second).From.Before(r.From) || tl.Item(second).From.After(r.To()) {
		t.Errorf("reveal shows the attempt: %+v", r)
	}
}

func TestSelectedAttemptAndItsEffect(t *testing.T) {
	tl := Build(naive(), Options{})
	rows := strings.Join(tl.Rows(80, tl.Fit(), 1, 0, -1), "\n")
	if !strings.Contains(rows, "●#2") || !strings.Contains(rows, "•#1") || !strings.Contains(rows, "█") {
		t.Errorf("attempt #2 selected: its bar and its effect stand out:\n%s", rows)
	}
}

func TestNotKeptAndInferred(t *testing.T) {
	tr := trace.Fold("wf", []trace.Event{
		{Kind: trace.ExecutionStarted, Time: at(0), Scenario: "wf"},
		{Kind: trace.RunStarted, Time: at(0), Run: 1},
		{Kind: trace.CallScheduled, Time: at(0), Run: 1, Call: "5", Tool: "charge"},
		{Kind: trace.AttemptsNotKept, Time: at(10), Run: 1, Call: "5", Attempt: 4, Error: "timeout"},
		{Kind: trace.AttemptStarted, Time: at(4000), Run: 1, Call: "5", Attempt: 4},
		{Kind: trace.AttemptFinished, Time: at(4100), Run: 1, Call: "5", Attempt: 4, Outcome: trace.OutcomeOK},
	})
	tl := Build(tr, Options{Inferred: []AttemptRef{{"5", 4}}})
	text := strings.Join(tl.Text(80), "\n")
	for _, want := range []string{"⋯#3", "inferred charge", "5: attempts #1–#3 not kept by the source", "charge: effect inferred (5 #4)"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if len(tl.Attempts) != 2 {
		t.Errorf("the cursor steps over the stand-in and the kept attempt: %d", len(tl.Attempts))
	}
}
