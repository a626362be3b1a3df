package otlp

import (
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// record reads one execution's record.
func record(t *testing.T, db *store.DB, id string) history.Execution {
	t.Helper()
	for _, x := range executions(t, db) {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no execution %s in %+v", id, executions(t, db))
	return history.Execution{}
}

// auditSays is the audit's own grading of one stored execution, alone,
// with the default effects.
func auditSays(t *testing.T, db *store.DB, id string) bool {
	t.Helper()
	spans, err := LoadSpans(db, id)
	if err != nil {
		t.Fatal(err)
	}
	return audit.HasDuplicate(trace.Fold(id, Events(spans)))
}

// An imported execution whose audit finds a duplicate effect says so on
// its record, so the explorer's list shows ⚠ and its ⚠ and "dup" filters
// find it; one without a duplicate does not.
func TestImportRecordsDuplicates(t *testing.T) {
	db := openDB(t)
	for _, f := range []string{"adk-send-twice.json", "openinference-charge.jsonl"} {
		if _, err := ImportFile(db, filepath.Join(fixtures, f)); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]bool{"otlp-conv-sess-adk-mail-1": true, "otlp-conv-sess-oi-7": false} {
		x := record(t, db, id)
		if x.Duplicates != want || auditSays(t, db, id) != want {
			t.Errorf("%s: record says duplicates=%v, audit %v; want %v", id, x.Duplicates, auditSays(t, db, id), want)
		}
		for _, filter := range []string{"⚠", "dup"} {
			if got := execindex.Parse(filter).Match(x); got != want {
				t.Errorf("%s: filter %q matches %v, want %v", id, filter, got, want)
			}
		}
		if got := execindex.Parse("✓").Match(x); got == want {
			t.Errorf("%s: filter ✓ matches %v, want %v", id, got, !want)
		}
	}
}

// The receiver sets the flag as spans arrive: the second send of an email,
// in a later request, makes the execution a duplicate.
func TestReceiverRecordsDuplicatesAsSpansArrive(t *testing.T) {
	db := openDB(t)
	spans := readFixture(t, "adk-send-twice.json")
	SortSpans(spans)
	// Send everything but the last send_email attempt first.
	last := -1
	for i := range spans {
		if spans[i].Role() == RoleTool && spans[i].Tool() == "send_email" {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("fixture has no send_email span")
	}
	var first, second []Span
	for i := range spans {
		if i == last {
			second = append(second, spans[i])
		} else {
			first = append(first, spans[i])
		}
	}
	id := "otlp-conv-sess-adk-mail-1"
	for n, batch := range [][]Span{first, second} {
		if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, batch, "receiver"); return err }); err != nil {
			t.Fatal(err)
		}
		x := record(t, db, id)
		if want := n == 1; x.Duplicates != want || auditSays(t, db, id) != want {
			t.Errorf("after request %d: record says duplicates=%v, audit %v; want %v", n+1, x.Duplicates, auditSays(t, db, id), want)
		}
	}
}
