package engine

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/rtchan"

	"github.com/retrylab/retrylab/store"
)

// noJournal answers for one execution only, whichever executions' records
// sit beside its own in the journals' key order.
func TestNoJournal(t *testing.T) {
	t.Parallel()
	h, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: fstest.MapFS{},
		Executable: "/nonexistent/worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	put := func(exec, step string) {
		t.Helper()
		if err := h.db.Update(func(tx *store.Tx) error { return tx.PutJournal(exec, step, []byte(`{}`)) }); err != nil {
			t.Fatal(err)
		}
	}
	want := func(exec string, none bool) {
		t.Helper()
		got, err := h.noJournal(exec)
		if err != nil || got != none {
			t.Errorf("noJournal(%s) = %v, %v; want %v", exec, got, err, none)
		}
	}
	want("exec_b", true) // no journal at all
	put("exec_c", "step-1")
	put("exec_c", "step-2")
	put("exec_d", "step-1")
	want("exec_a", true) // before every execution with records
	want("exec_b", true)
	want("exec_c", false)
	want("exec_cc", true) // between two that have records
	want("exec_d", false)
	want("exec_e", true) // after them all
	put("exec_b", "step-1#args")
	want("exec_b", false)
}

// A journal write that carries the run's end (the run's last call, wire.
// JournalPut.Then) records the record, StepRecorded and then the end in
// one commit, and the execution's status with them.
func TestJournalPutThenEnds(t *testing.T) {
	t.Parallel()
	h, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: fstest.MapFS{},
		Executable: "/nonexistent/worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	benchWorker(t, h, "exec_then", history.Policy{Keys: true, Journal: true})
	ch := rtchan.NewClient(h.Runtime().Socket(), time.Minute)
	defer ch.Close()
	body := `{"tool":"send_invoice_email","result":{"ok":true},"events":[{"type":"TurnStarted","text":"go"}],` +
		`"then":[{"type":"ExecutionCompleted"}]}`
	a, err := ch.Call(context.Background(), rtchan.Request{Method: http.MethodPut, Path: "/v1/executions/exec_then/journal/step-1",
		Token: h.token, Run: "1", Body: []byte(body)})
	if err != nil || a.Status != http.StatusOK {
		t.Fatalf("journal put: %d %s %v", a.Status, a.Body, err)
	}
	evs, err := h.Events("exec_then", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []history.Type
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	want := []history.Type{history.ExecutionStarted, history.TurnStarted, history.StepRecorded, history.ExecutionCompleted}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	x, err := h.Execution("exec_then")
	if err != nil || x.Status != history.StatusCompleted || x.Ended.IsZero() {
		t.Errorf("execution %s ended %v (%v), want completed", x.Status, x.Ended, err)
	}
	if recs, err := h.Journal("exec_then"); err != nil || len(recs) != 1 || recs[0].Step != "step-1" {
		t.Errorf("journal %+v (%v), want step-1's record", recs, err)
	}
}
