package diff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/trace"
)

var t0 = time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC)

// hist writes a history in a few words, as a fold's input: each step adds
// events in order.
type hist struct {
	events []trace.Event
	run    int
}

func newHist(scenario, policy string) *hist {
	return &hist{events: []trace.Event{{Kind: trace.ExecutionStarted, Time: t0, Scenario: scenario, Text: policy}}}
}

func (h *hist) add(e trace.Event) *hist {
	e.Time = t0.Add(time.Duration(len(h.events)) * time.Millisecond)
	e.Run = h.run
	h.events = append(h.events, e)
	return h
}

func (h *hist) runStart() *hist {
	h.run++
	return h.add(trace.Event{Kind: trace.RunStarted})
}

func (h *hist) turn(n int) *hist { return h.add(trace.Event{Kind: trace.TurnStarted, Turn: n}) }

func (h *hist) call(step, tool, args string) *hist {
	return h.add(trace.Event{Kind: trace.CallScheduled, Call: step, Tool: tool, Args: json.RawMessage(args)})
}

// attempt adds attempt n of step: its outcome ("" for none: the worker
// dies), dedup, and mails delivered to.
func (h *hist) attempt(step string, n int, outcome trace.Outcome, dedup bool, mailTo ...string) *hist {
	h.add(trace.Event{Kind: trace.AttemptStarted, Call: step, Attempt: n})
	for i, to := range mailTo {
		h.add(trace.Event{Kind: trace.EffectObserved, Call: step, Attempt: n,
			Effect: &trace.Effect{Service: "mail", ID: fmt.Sprintf("msg_%s_%d_%d", step, n, i), Target: to, Summary: "invoice"}})
	}
	if outcome != "" {
		h.add(trace.Event{Kind: trace.AttemptFinished, Call: step, Attempt: n, Outcome: outcome, Deduplicated: dedup})
	}
	return h
}

func (h *hist) crash() *hist {
	return h.add(trace.Event{Kind: trace.RunCrashed, Fault: "crash-after-effect"})
}
func (h *hist) end() *hist {
	return h.add(trace.Event{Kind: trace.ExecutionEnded, Outcome: trace.OutcomeOK})
}
func (h *hist) replay(step, tool string) *hist {
	return h.add(trace.Event{Kind: trace.StepReplayed, Call: step, Tool: tool, ResultRun: 1})
}
func (h *hist) fold(id string) *trace.Trace { return trace.Fold(id, h.events) }

const (
	send = "send_invoice_email"
	args = `{"to":"jordan@acme.dev","subject":"Your June invoice"}`
	jd   = "jordan@acme.dev"
)

func naive() *trace.Trace {
	return newHist("naive", "none").runStart().turn(1).call("step-4", send, args).
		attempt("step-4", 1, trace.OutcomeTimeout, false, jd).attempt("step-4", 2, trace.OutcomeOK, false, jd).end().fold("exec_7K2Q")
}

func safe() *trace.Trace {
	return newHist("safe", "keys+journal").runStart().turn(1).call("step-4", send, args).
		attempt("step-4", 1, trace.OutcomeTimeout, false, jd).attempt("step-4", 2, trace.OutcomeOK, true).end().
		runStart().turn(1).replay("step-4", send).end().fold("exec_01H8")
}

func text(t *testing.T, r *diff.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := diff.Text(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The article's comparison: the same timeout and retry, two messages
// without a key, one with.
func TestNaiveVersusSafe(t *testing.T) {
	r := diff.Compare(naive(), safe(), "", "")
	if r.A.Label != "naive" || r.B.Label != "safe" {
		t.Fatalf("labels %q %q", r.A.Label, r.B.Label)
	}
	if want := "naive: 2 messages to jordan@acme.dev; safe: 1"; len(r.EffectLines) != 1 || r.EffectLines[0] != want {
		t.Errorf("effects %q, want %q", r.EffectLines, want)
	}
	got := text(t, r)
	want := `A  exec_7K2Q naive · none · ✓ · 1 run, 1 call, 2 attempts
B  exec_01H8 safe · keys+journal · ✓ · 2 runs, 1 call, 2 attempts, 1 ↺, 1 ⟲

   A                                                │ B
≠  r1 t1  step-4 send_invoice_email  #1 ◆+1 #2 ✓+1  │ r1 t1  step-4 send_invoice_email               #1 ◆+1 #2 ↺  #2 ✓ vs ↺; 2 vs 1 effects
=  r1     ✓ completed                               │ r1     ✓ completed
>                                                   │ r2 t1  ⟲ step-4 replayed from journal (run 1)               only in B
>                                                   │ r2     ✓ completed                                          only in B

they part at row 1, step-4 send_invoice_email: #2 ✓ vs ↺; 2 vs 1 effects
effects  naive: 2 messages to jordan@acme.dev; safe: 1

= same  ≠ differs  < only in A  > only in B  +N effects  ✓ ok  ↺ deduplicated by key  ⟲ replayed from journal  ◆ unknown to caller; delivered
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Window 2 with and without the defences: a crash after the send, then a
// resume. Alignment by step id across runs; the crash rows match.
func TestCrashVersusSafeAfterCrash(t *testing.T) {
	crash := newHist("crash", "none").runStart().turn(1).call("step-4", send, args).attempt("step-4", 1, "", false, jd).crash().
		runStart().turn(1).call("step-4", send, args).attempt("step-4", 2, trace.OutcomeOK, false, jd).end().fold("exec_9F1Z")
	safe := newHist("crash", "keys+journal").runStart().turn(1).call("step-4", send, args).attempt("step-4", 1, "", false, jd).crash().
		runStart().turn(1).call("step-4", send, args).attempt("step-4", 2, trace.OutcomeOK, true).end().fold("exec_SAFE")
	r := diff.Compare(crash, safe, "", "")
	if r.A.Label != "exec_9F1Z" || r.B.Label != "exec_SAFE" {
		t.Errorf("same scenario: labels %q %q, want the execution ids", r.A.Label, r.B.Label)
	}
	var shape []string
	for _, row := range r.Rows {
		shape = append(shape, row.Marker()+" "+string(row.Match)+" "+row.Why)
	}
	want := []string{"= step ", "= end ", "≠ step #2 ✓ vs ↺; 1 vs 0 effects", "= end "}
	if strings.Join(shape, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q", shape, want)
	}
	if r.EffectLines[0] != "exec_9F1Z: 2 messages to jordan@acme.dev; exec_SAFE: 1" {
		t.Errorf("effects %q", r.EffectLines)
	}
	if r.A.Crashes != 1 || r.B.Crashes != 1 || r.Part != 2 {
		t.Errorf("crashes %d %d, part %d", r.A.Crashes, r.B.Crashes, r.Part)
	}
}

// An agent's retry under a fresh step id is matched by tool and canonical
// arguments, whatever order the arguments were written in; what neither
// step id nor arguments match is paired by position.
func TestAlignmentPasses(t *testing.T) {
	fresh := newHist("fresh", "keys").runStart().turn(1).call("step-4", send, args).attempt("step-4", 1, trace.OutcomeTimeout, false, jd).
		turn(2).call("step-4-retry1", send, `{"subject":"Your June invoice","to":"jordan@acme.dev"}`).
		attempt("step-4-retry1", 1, trace.OutcomeOK, false, jd).
		turn(3).call("note", "crm_upsert", `{"id":"c1"}`).attempt("note", 1, trace.OutcomeOK, false).end().fold("A")
	same := newHist("same", "keys").runStart().turn(1).call("step-4", send, args).attempt("step-4", 1, trace.OutcomeTimeout, false, jd).
		turn(2).call("step-4", send, args).attempt("step-4", 2, trace.OutcomeOK, true).
		turn(3).call("crm", "crm_upsert", `{"id":"c2"}`).attempt("crm", 1, trace.OutcomeOK, false).end().fold("B")
	r := diff.Compare(fresh, same, "", "")
	var got []string
	for _, row := range r.Rows {
		got = append(got, fmt.Sprintf("%s %s %s", row.Marker(), row.Match, row.Why))
	}
	want := []string{"= step ", "≠ args #1 ✓ vs #2 ↺; 1 vs 0 effects", "≠ position other arguments", "= end "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q\nwant %q", got, want)
	}
	if r.Rows[1].A.Call != "step-4-retry1" || r.Rows[1].B.Call != "step-4" || r.Rows[1].B.Turn != 2 {
		t.Errorf("the agent's retry is not beside the same-step retry: %+v %+v", r.Rows[1].A, r.Rows[1].B)
	}
}

// Two executions of different scenarios: allowed, and the result says they
// have nothing in common.
func TestNothingInCommon(t *testing.T) {
	a := newHist("mail", "none").runStart().call("s1", send, args).attempt("s1", 1, trace.OutcomeOK, false, jd).fold("A")
	b := newHist("crm", "none").runStart().call("c1", "crm_create", `{"id":"x"}`).attempt("c1", 1, trace.OutcomeOK, false).
		add(trace.Event{Kind: trace.EffectObserved, Call: "c1", Attempt: 1, Effect: &trace.Effect{Service: "crm", ID: "x"}}).fold("B")
	r := diff.Compare(a, b, "", "")
	if r.Common != 0 || !strings.HasPrefix(r.Parting, "nothing in common: no call of mail matches one of crm") {
		t.Errorf("common %d, parting %q", r.Common, r.Parting)
	}
	want := []string{"mail: 1 message to jordan@acme.dev; crm: 0", "mail: 0 CRM rows (0 writes); crm: 1 (1)"}
	if strings.Join(r.EffectLines, "|") != strings.Join(want, "|") {
		t.Errorf("effects %q, want %q", r.EffectLines, want)
	}
	// The same execution against itself does not part.
	if r := diff.Compare(naive(), naive(), "x", "y"); r.Part != -1 || r.Parting != "they do not part: every call, attempt and outcome is the same" {
		t.Errorf("self-diff: part %d %q", r.Part, r.Parting)
	}
}

// A row paired as ≠ is a call the two have in common, and the summary
// agrees: a call of another tool (naive's send_invoice_email beside an
// imported trace's get_contact) is never paired with it, and a call of the
// same tool with other arguments is paired in order and counted in common.
func TestPairedRowsAreInCommon(t *testing.T) {
	imported := newHist("", "").runStart().turn(2).call("c1", "get_contact", `{"q":"jordan"}`).attempt("c1", 1, trace.OutcomeOK, false).
		call("c2", "send_email", `{"to":"jordan@acme.dev"}`).attempt("c2", 1, trace.OutcomeOK, false).
		call("c3", send, `{"to":"sam@acme.dev"}`).attempt("c3", 1, trace.OutcomeOK, false).end().fold("otlp-1")
	r := diff.Compare(naive(), imported, "naive", "imported")
	var got []string
	for _, row := range r.Rows {
		got = append(got, fmt.Sprintf("%s %s %s", row.Marker(), row.Match, row.Why))
	}
	want := []string{">  only in B", ">  only in B", "≠ position other arguments; 2 vs 1 attempts; #1 ◆ vs ✓; 2 vs 1 effects", "= end "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q\nwant %q", got, want)
	}
	for _, row := range r.Rows {
		if row.A != nil && row.B != nil && row.A.Kind == diff.KindCall && row.A.Tool != row.B.Tool {
			t.Errorf("%s paired with %s: %s", row.A.Name(), row.B.Name(), row.Why)
		}
	}
	if r.Common != 1 || !strings.HasPrefix(r.Parting, "they part at row 1") {
		t.Errorf("rows %q: common %d, parting %q", got, r.Common, r.Parting)
	}
	// Nothing of the same tool: nothing paired, and nothing in common.
	other := newHist("", "").runStart().call("c1", "get_contact", `{}`).attempt("c1", 1, trace.OutcomeOK, false).end().fold("otlp-2")
	r = diff.Compare(naive(), other, "naive", "other")
	for _, row := range r.Rows {
		if row.Marker() == diff.MarkerDiff && row.A.Kind == diff.KindCall {
			t.Errorf("row paired as ≠ with nothing in common: %s vs %s", row.A.Name(), row.B.Name())
		}
	}
	if r.Common != 0 || !strings.HasPrefix(r.Parting, "nothing in common: no call of naive matches one of other by step id or by tool") {
		t.Errorf("common %d, parting %q", r.Common, r.Parting)
	}
}

// An imported trace records no effects: they are inferred from the calls,
// and reads never count.
func TestInferredEffects(t *testing.T) {
	mk := func(dups bool) *trace.Trace {
		h := newHist("", "").runStart().add(trace.Event{Kind: trace.CallScheduled, Call: "r", Tool: "get_user", Text: "read"}).
			attempt("r", 1, trace.OutcomeOK, false).call("c1", "charge_card", `{"amount":5}`).attempt("c1", 1, trace.OutcomeTimeout, false)
		if dups {
			h.attempt("c1", 2, trace.OutcomeOK, false)
		} else {
			h.attempt("c1", 2, trace.OutcomeOK, true)
		}
		return h.fold(map[bool]string{true: "trace-a", false: "trace-b"}[dups])
	}
	r := diff.Compare(mk(true), mk(false), "", "")
	want := "trace-a: 1 charge_card call took effect (inferred); trace-b: 0 (outcome unknown: 1 vs 1)"
	if len(r.EffectLines) != 1 || r.EffectLines[0] != want || !r.A.Effects.Inferred {
		t.Errorf("effects %q, want %q", r.EffectLines, want)
	}
}

func TestMarkdownAndJSON(t *testing.T) {
	r := diff.Compare(naive(), safe(), "", "")
	var b bytes.Buffer
	if err := diff.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## naive vs safe", "| ≠ | r1 t1 step-4 send\\_invoice\\_email | #1 ◆+1 #2 ✓+1 |",
		"| &gt; |  |  | r2 t1 ⟲ step-4 replayed from journal (run 1) |", "- Effects: naive: 2 messages to jordan@acme.dev; safe: 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q\n%s", want, b.String())
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		A    struct{ Label string }
		Rows []struct {
			A *struct {
				Attempts []struct{ Mark string }
			}
			Differs bool
		}
		EffectLines []string `json:"effect_lines"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.A.Label != "naive" || !back.Rows[0].Differs || back.Rows[0].A.Attempts[1].Mark != "✓" || len(back.EffectLines) != 1 {
		t.Errorf("json %s", data)
	}
}

// A call with many attempts stays one line: the first two, the last two,
// and the ones between summed up by mark. Nothing recorded effects here, so
// the last attempt's (a send answered ok) is inferred: +1.
func TestManyAttemptsOneLine(t *testing.T) {
	h := newHist("x", "none").runStart().call("s", send, args)
	for n := 1; n <= 40; n++ {
		out := trace.OutcomeTimeout
		if n == 40 {
			out = trace.OutcomeOK
		}
		h.attempt("s", n, out, false)
	}
	it := diff.Items(h.fold("X"))[0]
	if got, want := it.Tries(), "#1 ⏱ #2 ⏱ …36 ⏱… #39 ⏱ #40 ✓+1"; got != want {
		t.Errorf("tries %q, want %q", got, want)
	}
}

// The agent-retry pair as recorded: a step scheduled twice on one side is
// matched in order, its first time with the other side's only step-4, and
// the retry under a fresh step id by its arguments.
func TestRepeatedStepMatchedInOrder(t *testing.T) {
	fresh := newHist("fresh", "keys+journal").runStart().turn(1).call("step-4", send, args).
		attempt("step-4", 1, trace.OutcomeTimeout, false, jd).turn(2).call("step-4-retry1", send, args).
		attempt("step-4-retry1", 1, trace.OutcomeOK, false, jd).end().fold("A")
	same := newHist("same", "keys+journal").runStart().turn(1).call("step-4", send, args).
		attempt("step-4", 1, trace.OutcomeTimeout, false, jd).turn(2).call("step-4", send, args).
		attempt("step-4", 2, trace.OutcomeOK, true).end().fold("B")
	r := diff.Compare(fresh, same, "", "")
	var got []string
	for _, row := range r.Rows {
		got = append(got, fmt.Sprintf("%s %s %s", row.Marker(), row.Match, row.Why))
	}
	want := []string{"= step ", "≠ args #1 ✓ vs #2 ↺; 1 vs 0 effects", "= end "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q\nwant %q", got, want)
	}
}

// A row names at most three attempts that differ and counts the rest.
func TestWhyIsShort(t *testing.T) {
	mk := func(out trace.Outcome, id string) *trace.Trace {
		h := newHist("x", "none").runStart().call("s", send, args)
		for n := 1; n <= 10; n++ {
			h.attempt("s", n, out, false)
		}
		return h.fold(id)
	}
	r := diff.Compare(mk(trace.OutcomeTimeout, "A"), mk(trace.OutcomeError, "B"), "", "")
	if got, want := r.Rows[0].Why, "#1 ⏱ vs ✖; #2 ⏱ vs ✖; #3 ⏱ vs ✖; 7 more attempts differ"; got != want {
		t.Errorf("why %q, want %q", got, want)
	}
}

// A key that changes between attempts is named as the difference, and what
// it cost: the new key's send took effect (inferred, as nothing recorded
// effects), the deduplicated one did not.
func TestKeyChange(t *testing.T) {
	mk := func(id, k2 string) *trace.Trace {
		h := newHist(id, "keys").runStart().call("s", send, args)
		h.add(trace.Event{Kind: trace.AttemptStarted, Call: "s", Attempt: 1, Key: "ik_1"})
		h.add(trace.Event{Kind: trace.AttemptFinished, Call: "s", Attempt: 1, Outcome: trace.OutcomeTimeout})
		h.add(trace.Event{Kind: trace.AttemptStarted, Call: "s", Attempt: 2, Key: k2})
		h.add(trace.Event{Kind: trace.AttemptFinished, Call: "s", Attempt: 2, Outcome: trace.OutcomeOK, Deduplicated: k2 == "ik_1"})
		return h.fold(id)
	}
	r := diff.Compare(mk("attempt-key", "ik_2"), mk("intent-key", "ik_1"), "", "")
	if got, want := r.Rows[0].Why, "#2 ✓ vs ↺; new key at #2 vs the same key; 1 vs 0 effects"; got != want {
		t.Errorf("why %q, want %q", got, want)
	}
}

// Events without run numbers (an importer's) still place each row in its run.
func TestRunsOfAnImportersEvents(t *testing.T) {
	tr := trace.Fold("imp", []trace.Event{
		{Kind: trace.ExecutionStarted, Time: t0, Scenario: "wf"},
		{Kind: trace.RunStarted, Time: t0},
		{Kind: trace.CallScheduled, Time: t0, Call: "5", Tool: "charge"},
		{Kind: trace.AttemptStarted, Time: t0, Call: "5", Attempt: 1},
		{Kind: trace.RunCrashed, Time: t0},
		{Kind: trace.RunStarted, Time: t0.Add(time.Second)},
		{Kind: trace.ExecutionEnded, Time: t0.Add(time.Second), Outcome: trace.OutcomeOK},
	})
	var where []string
	for _, it := range diff.Items(tr) {
		where = append(where, it.Where()+" "+it.What())
	}
	if got, want := strings.Join(where, "|"), "r1 5 charge|r1 ☠ worker killed|r2 ✓ completed"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// Inferred effects count what the audit counts: its tool-name patterns
// (CamelCase activity types too), per attempt, so a row says "N vs M
// effects"; attempts a source did not keep count only as unknown when
// their failure says they may have acted; tools the patterns do not name
// (lookup_customer, a read) never count.
func TestInferredEffectsAsTheAuditCounts(t *testing.T) {
	mk := func(id string, second trace.Outcome) *trace.Trace {
		return trace.Fold(id, []trace.Event{
			{Kind: trace.ExecutionStarted, Time: t0, Scenario: "wf"},
			{Kind: trace.RunStarted, Time: t0},
			{Kind: trace.CallScheduled, Time: t0, Call: "5", Tool: "lookup_customer"},
			{Kind: trace.AttemptStarted, Time: t0, Call: "5", Attempt: 1},
			{Kind: trace.AttemptFinished, Time: t0, Call: "5", Attempt: 1, Outcome: trace.OutcomeOK},
			{Kind: trace.CallScheduled, Time: t0, Call: "9", Tool: "SendConfirmation"},
			{Kind: trace.AttemptsNotKept, Time: t0, Call: "9", Attempt: 2, Error: "HTTPError 503"},
			{Kind: trace.AttemptStarted, Time: t0, Call: "9", Attempt: 2},
			{Kind: trace.AttemptFinished, Time: t0, Call: "9", Attempt: 2, Outcome: second},
		})
	}
	r := diff.Compare(mk("sent", trace.OutcomeOK), mk("refused", trace.OutcomeError), "sent", "refused")
	var row *diff.Row
	for i := range r.Rows {
		if r.Rows[i].A != nil && r.Rows[i].A.Tool == "SendConfirmation" {
			row = &r.Rows[i]
		}
	}
	if row == nil || row.Match != diff.MatchStep || !strings.HasSuffix(row.Why, "; 1 vs 0 effects") {
		t.Fatalf("SendConfirmation row: %+v", row)
	}
	if a := row.A.Attempts; len(a) != 2 || a[0].Effects != 0 || a[1].Effects != 1 || !a[1].Inferred {
		t.Errorf("attempts %+v: the not-kept failure took no effect, the kept success one", a)
	}
	want := []string{"sent: 1 SendConfirmation call took effect (inferred); refused: 0"}
	if strings.Join(r.EffectLines, "|") != strings.Join(want, "|") {
		t.Errorf("effects %q, want %q", r.EffectLines, want)
	}
}
