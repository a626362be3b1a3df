package tui

import (
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
)

// The list asks the audit of the imported executions it reads, once per
// state of their record, never of retrylab's own or of a duplicate (the
// record says it), and drops an answer for a record that changed since.
func TestListGradesImportedOnce(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 14, 9, 2, 0, 0, time.UTC)
	imp := history.Execution{ID: "otlp-a", Imported: "otlp", Updated: at}
	e := newExecsPane(newContext(false), newFilterBox(newContext(false)), fixedNow, nil, nil)
	e.Update(execsMsg{items: []execItem{
		{x: imp},
		{x: history.Execution{ID: "otlp-dup", Imported: "otlp", Duplicates: true}, duplicates: true},
		{x: history.Execution{ID: "exec_1", Updated: at}},
	}, total: 3})
	todo := e.toGrade()
	if len(todo) != 1 || todo[0].ID != "otlp-a" {
		t.Fatalf("asks the audit of %v, want otlp-a alone", todo)
	}
	if again := e.toGrade(); len(again) != 0 {
		t.Fatalf("asks again while the answer is pending: %v", again)
	}
	if e.possible(imp) {
		t.Fatal("marked before the answer")
	}
	e.Graded(map[string]grading{"otlp-a": {at: at, possible: true}})
	if !e.possible(imp) {
		t.Fatal("not marked after the answer")
	}
	if _, mk := statusBadge(execItem{x: imp, possible: true}); mk != markTimeout {
		t.Errorf("a possible duplicate's badge is marker %v", mk)
	}
	if b, _ := statusBadge(execItem{x: imp, possible: true, duplicates: true}); b != "⚠" {
		t.Errorf("a duplicate's badge is %q, want ⚠ (it outranks ◇)", b)
	}

	// Spans arrive: the record moved on; the mark waits for a new audit
	// and an answer about the old record is dropped.
	moved := imp
	moved.Updated = at.Add(time.Minute)
	e.Update(execsMsg{items: []execItem{{x: moved}}, total: 1})
	if e.possible(moved) {
		t.Error("a changed record keeps the old audit's mark")
	}
	if todo := e.toGrade(); len(todo) != 1 {
		t.Fatalf("a changed record is not audited again: %v", todo)
	}
	e.Graded(map[string]grading{"otlp-a": {at: at, possible: true}})
	if e.possible(moved) {
		t.Error("an answer about the old record marks the new one")
	}
	e.Graded(map[string]grading{"otlp-a": {at: moved.Updated}})
	if e.possible(moved) {
		t.Error("marked though the new audit finds nothing possible")
	}
}
