package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

var (
	none        = history.Policy{}
	keysOnly    = history.Policy{Keys: true}
	journalOnly = history.Policy{Journal: true}
	both        = history.Policy{Keys: true, Journal: true}
)

// TestExpectedMatchesDesignTable holds the model to the fault matrix of docs/FAULTS.md,
// cell by cell.
func TestExpectedMatchesDesignTable(t *testing.T) {
	// columns: no key no journal, key only, journal only, key + journal
	table := []struct {
		row     string
		point   fault.Point
		expired bool
		want    [4]int
	}{
		{"1", fault.TimeoutBeforeEffect, false, [4]int{1, 1, 1, 1}},
		{"2", fault.TimeoutAfterEffect, false, [4]int{2, 1, 2, 1}},
		{"3 then resume", fault.CrashBeforeCall, false, [4]int{1, 1, 1, 1}},
		{"4 then resume", fault.CrashAfterEffect, false, [4]int{2, 1, 2, 1}},
		{"5 then resume", fault.CrashAfterRecord, false, [4]int{2, 1, 1, 1}},
		{"key expired between attempts (2)", fault.TimeoutAfterEffect, true, [4]int{2, 2, 2, 2}},
		// Beyond the table: the other points, and no fault at all.
		{"6 server error", fault.ServerError, false, [4]int{1, 1, 1, 1}},
		{"6 slow response", fault.SlowResponse, false, [4]int{1, 1, 1, 1}},
		{"no fault", "", false, [4]int{1, 1, 1, 1}},
		{"key expired, 4 then resume", fault.CrashAfterEffect, true, [4]int{2, 2, 2, 2}},
	}
	for _, row := range table {
		for i, p := range Policies {
			if got := Expected(p, row.point, row.expired); got != row.want[i] {
				t.Errorf("fault %s, policy %s: model says %d, docs/FAULTS.md says %d", row.row, p, got, row.want[i])
			}
		}
	}
}

func twoStep() *scenario.Scenario {
	return &scenario.Scenario{
		Name:   "send-crm",
		Policy: scenario.Policy{Retry: scenario.Retry{MaxAttempts: 8, Backoff: 2}},
		Tools: map[string]scenario.Tool{
			"send":   {Service: "mail", Op: "send", Kind: scenario.KindKeyed},
			"record": {Service: "crm", Op: "upsert", Kind: scenario.KindIdempotent},
		},
		Turns: []scenario.Turn{
			{Calls: []scenario.Call{{Step: "s1", Tool: "send", Args: map[string]any{"to": "a@b", "subject": "x"}}}},
			{Calls: []scenario.Call{{Step: "s2", Tool: "record", Args: map[string]any{"id": "inv_1", "message_id": "${s1.message_id}"}}}},
		},
	}
}

// TestPredictTwoSteps plays a crash in the second step: without a journal
// the restart sends the email again, and the upsert records the second
// message id (one row version, since the step never wrote before).
func TestPredictTwoSteps(t *testing.T) {
	crash := []Injection{{Step: "s2", Attempt: 1, Point: fault.CrashBeforeCall}}
	for _, tc := range []struct {
		policy  history.Policy
		send    int
		record  int
		runs    int
		faults  []Injection
		comment string
	}{
		{none, 2, 1, 2, crash, "the restart sends again"},
		{keysOnly, 1, 1, 2, crash, "the key absorbs the resend"},
		{journalOnly, 1, 1, 2, crash, "the journal replays the send"},
		{none, 2, 2, 2, []Injection{{Step: "s2", Attempt: 1, Point: fault.CrashAfterRecord}}, "the upsert writes a new version for the new message"},
		{keysOnly, 1, 1, 2, []Injection{{Step: "s2", Attempt: 1, Point: fault.CrashAfterRecord}}, "same message id, same fields: no new version"},
	} {
		pred, err := Predict(Plan{Scenario: twoStep()}, tc.policy, tc.faults)
		if err != nil {
			t.Fatal(err)
		}
		if pred.Effects["s1"] != tc.send || pred.Effects["s2"] != tc.record || pred.Runs != tc.runs || pred.Status != history.StatusCompleted {
			t.Errorf("%s (%s): got send %d record %d runs %d %s; want %d %d %d completed", tc.comment, tc.policy,
				pred.Effects["s1"], pred.Effects["s2"], pred.Runs, pred.Status, tc.send, tc.record, tc.runs)
		}
	}
}

func TestPredictUnsafeEscalates(t *testing.T) {
	scn := singleSend()
	tool := scn.Tools["send_email"]
	tool.Kind = scenario.KindUnsafe
	scn.Tools["send_email"] = tool
	for _, p := range []fault.Point{fault.TimeoutAfterEffect, fault.CrashAfterEffect, fault.CrashBeforeCall} {
		pred, err := Predict(Plan{Scenario: scn}, both, []Injection{{Step: matrixStep, Attempt: 1, Point: p}})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if p == fault.CrashBeforeCall {
			want = 0
		}
		if pred.Status != history.StatusEscalated || pred.Effects[matrixStep] != want {
			t.Errorf("%s: %s with %d effects; want escalated with %d", p, pred.Status, pred.Effects[matrixStep], want)
		}
	}
}

func TestPredictUnmodelled(t *testing.T) {
	scn := singleSend()
	scn.Turns[0].Calls[0].AgentRetry = &scenario.AgentRetry{Max: 1}
	if _, err := Predict(Plan{Scenario: scn}, none, nil); err == nil {
		t.Fatal("agent-level retry modelled")
	}
	if _, err := Predict(Plan{Scenario: singleSend()}, none, []Injection{{matrixStep, 1, fault.ServerError}, {matrixStep, 1, fault.CrashAfterRecord}}); err == nil {
		t.Fatal("two faults on one attempt modelled")
	}
}

// --- synthetic histories ----------------------------------------------------

// hist builds a history and the ledger it left, one event at a time.
type hist struct {
	x       history.Execution
	events  []history.Event
	effects []Effect
	clock   time.Time
	run     int
	mailSeq uint64
}

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func newHist(id, scn string, p history.Policy) *hist {
	h := &hist{x: history.Execution{ID: id, Scenario: scn, Policy: p, Status: history.StatusCompleted}, clock: t0}
	h.add(history.Event{Type: history.ExecutionStarted, Scenario: scn})
	return h
}

func (h *hist) add(ev history.Event) *hist {
	h.clock = h.clock.Add(time.Millisecond)
	ev.Seq, ev.Time = uint64(len(h.events)+1), h.clock
	if ev.Run == 0 {
		ev.Run = max(h.run, 1)
	}
	h.events = append(h.events, ev)
	return h
}

func (h *hist) worker() *hist {
	h.run++
	h.x.Runs = h.run
	return h.add(history.Event{Type: history.WorkerStarted, Run: h.run})
}

func (h *hist) schedule(step, tool, args string) *hist {
	return h.add(history.Event{Type: history.ToolCallScheduled, Step: step, Tool: tool, Args: json.RawMessage(args), Text: "keyed"})
}

func (h *hist) attempt(step string, n int, key string, points ...fault.Point) *hist {
	h.add(history.Event{Type: history.AttemptStarted, Step: step, Attempt: n, Key: key,
		Request: &history.Exchange{Method: "POST", URL: "/v1/send"}})
	for _, p := range points {
		h.add(history.Event{Type: history.FaultInjected, Step: step, Attempt: n, Fault: string(p)})
	}
	return h
}

func (h *hist) finish(step string, n int, o history.Outcome) *hist {
	return h.add(history.Event{Type: history.AttemptFinished, Step: step, Attempt: n, Outcome: o})
}

// send puts a message in the outbox, attributed to step/attempt, at a world
// time offset from the start.
func (h *hist) send(step string, n int, key string, after time.Duration) *hist {
	h.mailSeq++
	h.effects = append(h.effects, Effect{Service: world.ServiceMail, Seq: h.mailSeq, Ref: fmt.Sprintf("msg_%d", h.mailSeq),
		Op: "send", Time: t0.Add(after), Attr: world.Attribution{Execution: h.x.ID, Step: step, Attempt: n, Key: key, Run: max(h.run, 1)}})
	return h
}

func (h *hist) crash(p fault.Point, why string) *hist {
	h.x.Status = history.StatusKilled
	return h.add(history.Event{Type: history.WorkerCrashed, ExitCode: 137, Fault: string(p), Error: why})
}

func (h *hist) recorded(step string) *hist {
	return h.add(history.Event{Type: history.StepRecorded, Step: step})
}
func (h *hist) replayed(step string) *hist {
	return h.add(history.Event{Type: history.StepReplayed, Step: step})
}
func (h *hist) completed() *hist {
	h.x.Status = history.StatusCompleted
	return h.add(history.Event{Type: history.ExecutionCompleted})
}

// planFor resolves "single" to the single-send scenario with step "send".
func planFor(expire bool) func(string) (Plan, bool) {
	return func(name string) (Plan, bool) {
		if name != "single" {
			return Plan{}, false
		}
		return Plan{Scenario: singleSend(), ExpireKeys: expire}, true
	}
}

func checkOne(t *testing.T, opts Options, h *hist) (ExecResult, *Report) {
	t.Helper()
	c := New(opts)
	c.AddEffects(h.effects...)
	res := c.Execution(h.x, h.events)
	return res, c.Report()
}

const sendArgs = `{"subject": "Your June invoice", "to": "jordan@acme.dev"}`

func TestClassOK(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).recorded("send").completed()
	res, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	op := res.Operations[0]
	if op.Class != OK || op.Model != ModelExact || op.Predicted != (Range{1, 1}) || op.Departure != "" || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
}

// The article's safe run: the first attempt times out after the effect, the
// retry is answered from the key store: recovered, one effect, as predicted.
func TestClassRecovered(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1", fault.TimeoutAfterEffect).send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeTimeout).
		attempt("send", 2, "ik_1").finish("send", 2, history.OutcomeOK).recorded("send").completed()
	res, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	if op := res.Operations[0]; op.Class != Recovered || op.Effects != 1 || op.Model != ModelExact || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
}

// The article's naive run: two messages, as the model predicts for no key and
// no journal: duplicated, but no violation.
func TestDuplicatedAsPredicted(t *testing.T) {
	h := newHist("e1", "single", none).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "", fault.TimeoutAfterEffect).send("send", 1, "", 0).finish("send", 1, history.OutcomeTimeout).
		attempt("send", 2, "").send("send", 2, "", time.Second).finish("send", 2, history.OutcomeOK).completed()
	res, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	if op := res.Operations[0]; op.Class != Duplicated || op.Effects != 2 || op.Departure != "" || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
}

// An unsafe policy must produce the duplicates the model predicts, not
// fewer: one message where two are due is a departure.
func TestFewerThanPredictedIsADeparture(t *testing.T) {
	h := newHist("e1", "single", none).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "", fault.TimeoutAfterEffect).send("send", 1, "", 0).finish("send", 1, history.OutcomeTimeout).
		attempt("send", 2, "").finish("send", 2, history.OutcomeOK).completed()
	_, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	if rep.OK() || rep.ByPolicy["none"].Departures != 1 {
		t.Fatalf("departure not reported: %v", rep.Violations)
	}
}

// A journal write moved after the step is reported done: the crash after
// "recording" finds no record, the resume sends again. Under the journal
// policy the model expects one message, so the checker fails the run even
// though nothing in the history looks wrong.
func TestJournalBugDepartsFromModel(t *testing.T) {
	h := newHist("e1", "single", journalOnly).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "", fault.CrashAfterRecord).send("send", 1, "", 0).finish("send", 1, history.OutcomeOK).
		crash(fault.CrashAfterRecord, "killed by the injected fault: crash after recording").
		worker().schedule("send", "send_email", sendArgs).
		attempt("send", 2, "").send("send", 2, "", time.Second).finish("send", 2, history.OutcomeOK).recorded("send").completed()
	res, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	op := res.Operations[0]
	if op.Model != ModelExact || op.Predicted != (Range{1, 1}) || op.Departure == "" || rep.OK() {
		t.Fatalf("journal bug not caught: %+v %v", op, rep.Violations)
	}
}

func TestLostUnderKeysAndJournal(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").finish("send", 1, history.OutcomeOK).recorded("send").completed()
	res, rep := checkOne(t, Options{}, h)
	if res.Operations[0].Class != Lost || !hasKind(rep, "lost") {
		t.Fatalf("%+v %v", res.Operations[0], rep.Violations)
	}
}

// The key derived with the attempt number: a new key on the retry, and the
// provider sends again. Under keys+journal that is a violation.
func TestDuplicatedUnderKeysAndJournal(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_a", fault.TimeoutAfterEffect).send("send", 1, "ik_a", 0).finish("send", 1, history.OutcomeTimeout).
		attempt("send", 2, "ik_b").send("send", 2, "ik_b", time.Second).finish("send", 2, history.OutcomeOK).recorded("send").completed()
	for _, opts := range []Options{{}, {Resolve: planFor(false)}} {
		_, rep := checkOne(t, opts, h)
		if !hasKind(rep, "duplicated") {
			t.Fatalf("duplicate not reported: %v", rep.Violations)
		}
	}
}

// With the clock moved past the retention, the key is forgotten: two
// messages under keys+journal are the model's prediction, not a violation.
func TestExpiredKeyDuplicateIsPredicted(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1", fault.TimeoutAfterEffect).send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeTimeout).
		attempt("send", 2, "ik_1").send("send", 2, "ik_1", 25*time.Hour).finish("send", 2, history.OutcomeOK).recorded("send").completed()
	res, rep := checkOne(t, Options{Resolve: planFor(true)}, h)
	op := res.Operations[0]
	if op.Class != Duplicated || !op.KeyExpired || op.Model != ModelExact || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
	// Without the plan the range model reads the expiry from the ledger.
	if res, rep := checkOne(t, Options{}, h); !rep.OK() || res.Operations[0].Predicted != (Range{2, 2}) {
		t.Fatalf("%+v %v", res.Operations[0], rep.Violations)
	}
	// Two messages an hour apart under one key are a duplicate all the same.
	h.effects[1].Time = t0.Add(time.Hour)
	if _, rep := checkOne(t, Options{}, h); !hasKind(rep, "duplicated") {
		t.Fatalf("duplicate within the retention not reported: %v", rep.Violations)
	}
}

func TestUnexpected(t *testing.T) {
	base := func() *hist {
		return newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
			attempt("send", 1, "ik_1", fault.TimeoutBeforeEffect).finish("send", 1, history.OutcomeTimeout).
			attempt("send", 2, "ik_1").send("send", 2, "ik_1", 0).finish("send", 2, history.OutcomeOK).recorded("send").completed()
	}
	cases := map[string]func(h *hist){
		"a step never scheduled":           func(h *hist) { h.send("other", 1, "", 0) },
		"an attempt that never started":    func(h *hist) { h.send("send", 7, "", 0) },
		"a request that never took effect": func(h *hist) { h.send("send", 1, "ik_1", 0) },
		"no attribution": func(h *hist) {
			h.effects = append(h.effects, Effect{Service: world.ServiceMail, Seq: 99, Ref: "msg_ext", Time: t0})
		},
		"an execution not in the database": func(h *hist) {
			h.effects = append(h.effects, Effect{Service: world.ServiceMail, Seq: 98, Ref: "msg_ghost", Time: t0,
				Attr: world.Attribution{Execution: "e_ghost", Step: "send", Attempt: 1}})
		},
	}
	for name, spoil := range cases {
		h := base()
		spoil(h)
		_, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
		if !hasKind(rep, "unexpected") {
			t.Errorf("%s: not reported: %v", name, rep.Violations)
		}
	}
	h := base()
	h.effects = append(h.effects, Effect{Service: world.ServiceMail, Seq: 99, Ref: "msg_ext", Time: t0})
	if _, rep := checkOne(t, Options{Resolve: planFor(false), ExternalOK: true}, h); !rep.OK() || rep.Unattributed != 1 {
		t.Errorf("external client's effect refused with ExternalOK: %v", rep.Violations)
	}
}

// An agent-level retry with a fresh step id is the same intent: one
// operation with two messages, not two operations with one each.
func TestAgentRetryWithFreshStepIsOneIntent(t *testing.T) {
	h := newHist("e1", "agent", keysOnly).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_a", fault.TimeoutAfterEffect).send("send", 1, "ik_a", 0).finish("send", 1, history.OutcomeTimeout).
		add(history.Event{Type: history.TurnStarted, Turn: 2}).
		schedule("send-retry1", "send_email", sendArgs).
		attempt("send-retry1", 1, "ik_b").send("send-retry1", 1, "ik_b", time.Second).finish("send-retry1", 1, history.OutcomeOK).completed()
	res, _ := checkOne(t, Options{}, h)
	if len(res.Operations) != 1 || res.Operations[0].Class != Duplicated || len(res.Operations[0].Steps) != 2 {
		t.Fatalf("%+v", res.Operations)
	}
}

// Repeating an idempotent upsert writes twice but leaves one row version:
// one effect. A create that makes two rows is two.
func TestUpsertCountsVersionsNotWrites(t *testing.T) {
	h := newHist("e1", "crm", keysOnly).worker().schedule("rec", "record", `{"id": "inv_1"}`).
		attempt("rec", 1, "", fault.TimeoutAfterEffect).finish("rec", 1, history.OutcomeTimeout).
		attempt("rec", 2, "").finish("rec", 2, history.OutcomeOK).completed()
	h.events[3].Request = &history.Exchange{Method: "PUT", URL: "/v1/records/inv_1"}
	h.events[6].Request = &history.Exchange{Method: "PUT", URL: "/v1/records/inv_1"}
	h.effects = []Effect{
		WriteEffect(world.CRMWrite{Seq: 1, RecordID: "inv_1", Op: world.OpUpsert, Version: 1, Created: true, Attribution: world.Attribution{Execution: "e1", Step: "rec", Attempt: 1}}),
		WriteEffect(world.CRMWrite{Seq: 2, RecordID: "inv_1", Op: world.OpUpsert, Version: 1, Attribution: world.Attribution{Execution: "e1", Step: "rec", Attempt: 2}}),
	}
	res, rep := checkOne(t, Options{}, h)
	if op := res.Operations[0]; op.Effects != 1 || op.Class != Recovered || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
	h.effects[1].Ref = "rec_2"
	res, _ = checkOne(t, Options{}, h)
	if op := res.Operations[0]; op.Effects != 2 || op.Class != Duplicated {
		t.Fatalf("%+v", op)
	}
}

func TestReadHasNoEffect(t *testing.T) {
	h := newHist("e1", "crm", none).worker().schedule("read", "read_invoice", `{"id": "inv_1"}`)
	h.events[len(h.events)-1].Text = "read"
	h.attempt("read", 1, "").finish("read", 1, history.OutcomeOK).completed()
	res, rep := checkOne(t, Options{}, h)
	if op := res.Operations[0]; op.Class != OK || op.Effects != 0 || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
}

// A kill from outside with the request in flight: the outcome is unknown, so
// the range allows zero or one effect for that attempt.
func TestKillFromOutsideUsesTheRange(t *testing.T) {
	h := newHist("e1", "single", none).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "").crash("", "killed (SIGKILL) from outside").
		worker().schedule("send", "send_email", sendArgs).
		attempt("send", 2, "").send("send", 2, "", time.Second).finish("send", 2, history.OutcomeOK).completed()
	res, rep := checkOne(t, Options{Resolve: planFor(false)}, h)
	op := res.Operations[0]
	if op.Model != ModelRange || op.Predicted != (Range{1, 2}) || op.Class != Recovered || !rep.OK() {
		t.Fatalf("%+v %v", op, rep.Violations)
	}
	if rep.ExternalKills != 1 {
		t.Fatalf("kills: %+v", rep)
	}
}

// With a journal, a step recorded in an earlier run must be replayed, not
// executed again.
func TestReexecutedRecordedStepBreaksAnInvariant(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).recorded("send").
		crash(fault.CrashAfterRecord, "killed by the injected fault").
		worker().schedule("send", "send_email", sendArgs).attempt("send", 2, "ik_1").finish("send", 2, history.OutcomeOK).completed()
	_, rep := checkOne(t, Options{}, h)
	if !hasKind(rep, "invariant") {
		t.Fatalf("%v", rep.Violations)
	}
}

func TestHistoryGapIsADurabilityViolation(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).recorded("send").completed()
	h.events = append(h.events[:2], h.events[3:]...)
	_, rep := checkOne(t, Options{}, h)
	if !hasKind(rep, "durability") {
		t.Fatalf("%v", rep.Violations)
	}
}

func hasKind(r *Report, kind string) bool {
	for _, v := range r.Violations {
		if v.Kind == kind {
			return true
		}
	}
	return false
}

// TestCheckDB reads a database written through the store, and prints the
// table.
func TestCheckDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "check.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	hists := []*hist{
		newHist("e_ok", "single", both).worker().schedule("send", "send_email", sendArgs).
			attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).recorded("send").completed(),
		newHist("e_naive", "single", none).worker().schedule("send", "send_email", sendArgs).
			attempt("send", 1, "", fault.TimeoutAfterEffect).send("send", 1, "", 0).finish("send", 1, history.OutcomeTimeout).
			attempt("send", 2, "").send("send", 2, "", time.Second).finish("send", 2, history.OutcomeOK).completed(),
	}
	err = db.Update(func(tx *store.Tx) error {
		for _, h := range hists {
			rec, _ := history.EncodeExecution(h.x)
			if err := tx.PutExecution(h.x.ID, rec); err != nil {
				return err
			}
			for _, ev := range h.events {
				if _, err := tx.AppendEvent(h.x.ID, func(uint64) ([]byte, error) { return history.Encode(ev) }); err != nil {
					return err
				}
			}
			for _, e := range h.effects {
				m := world.Message{ID: e.Ref, To: "jordan@acme.dev", Subject: "s", Time: e.Time, Attribution: e.Attr}
				if _, err := tx.Append(world.BucketOutbox, func(seq uint64) ([]byte, error) { m.Seq = seq; return json.Marshal(m) }); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rep, err := CheckDB(ro, Options{Resolve: planFor(false)})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Write(&out, 0)
	text := out.String()
	for _, want := range []string{"2 executions, 2 operations", "verdict: PASS", "2 timeout after effect", "2 ✓ (1)", "1 ✓ (1)"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if rep.ByPolicy["none"].Classes[Duplicated] != 1 || rep.ByPolicy["keys+journal"].Classes[OK] != 1 {
		t.Errorf("tallies: %+v %+v", rep.ByPolicy["none"], rep.ByPolicy["keys+journal"])
	}
}

// An operation counts its faults by point: 40 server errors and a timeout
// are two entries, however many attempts carried them.
func TestOperationCountsFaultsByPoint(t *testing.T) {
	h := newHist("e1", "single", both).worker().schedule("send", "send_email", sendArgs)
	const n = 40
	for i := 1; i <= n; i++ {
		h = h.attempt("send", i, "ik_1", fault.ServerError).finish("send", i, history.OutcomeError)
	}
	h = h.attempt("send", n+1, "ik_1", fault.TimeoutAfterEffect).send("send", n+1, "ik_1", 0).finish("send", n+1, history.OutcomeTimeout).
		attempt("send", n+2, "ik_1").finish("send", n+2, history.OutcomeOK).recorded("send").completed()
	res, _ := checkOne(t, Options{Resolve: planFor(false)}, h)
	op := res.Operations[0]
	want := map[fault.Point]int{fault.ServerError: n, fault.TimeoutAfterEffect: 1}
	if !reflect.DeepEqual(op.Faults, want) || op.Attempts != n+2 {
		t.Fatalf("faults %v in %d attempts, want %v in %d", op.Faults, op.Attempts, want, n+2)
	}
	if res, _ := checkOne(t, Options{Resolve: planFor(false)}, newHist("e2", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).recorded("send").completed()); res.Operations[0].Faults != nil {
		t.Fatalf("an operation without faults: %v", res.Operations[0].Faults)
	}
}
