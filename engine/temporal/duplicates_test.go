package temporal_test

import (
	"testing"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// An imported workflow's record says whether the audit finds a duplicate
// in it, so the explorer's list shows ⚠ and its ⚠ and "dup" filters find
// it: run 1 alone holds only a possible one (a timeout, then a success);
// run 2 sends the confirmation again, a duplicate across the runs.
func TestImportRecordsDuplicates(t *testing.T) {
	db := openDB(t)
	for n, f := range []string{run1File, run2File} {
		if _, err := temporal.ImportFile(db, f); err != nil {
			t.Fatal(err)
		}
		var x history.Execution
		var found bool
		if err := db.View(func(tx *store.Tx) error {
			var err error
			if x, err = history.DecodeExecution(tx.Execution(execID)); err != nil {
				return err
			}
			evs, err := temporal.LoadEvents(tx, execID)
			found = audit.Verdict(trace.Fold(execID, evs)) == audit.Duplicate
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want := n == 1
		if x.Duplicates != want || found != want {
			t.Errorf("after %s: record says duplicates=%v, audit %v; want %v", f, x.Duplicates, found, want)
		}
		if got := execindex.Parse("dup").Match(x); got != want {
			t.Errorf("after %s: filter dup matches %v, want %v", f, got, want)
		}
	}
}

// A SendEmail retried after start-to-close timeouts whose attempt 3 has
// started and not finished (the history cut while it runs) is a possible
// duplicate already: the worker picked the repeat up, so it may act. The
// record's flag (◇) and the audit's finding say so, the repeat "in flight".
func TestInFlightRepeatIsPossible(t *testing.T) {
	const file = "../../fixtures/temporal/inflight-sendemail.cli.json"
	const id = "temporal-5a7e9c20-1b2d-4e3f-8a90-0c1d2e3f7001"
	db := openDB(t)
	if _, err := temporal.ImportFile(db, file); err != nil {
		t.Fatal(err)
	}
	var x history.Execution
	var rep audit.Report
	if err := db.View(func(tx *store.Tx) error {
		var err error
		if x, err = history.DecodeExecution(tx.Execution(id)); err != nil {
			return err
		}
		evs, err := temporal.LoadEvents(tx, id)
		rep = audit.Run([]*trace.Trace{trace.Fold(id, evs)}, audit.Options{Effects: []string{"send_*"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !x.Possible || x.Duplicates {
		t.Errorf("record: possible=%v duplicates=%v, want possible only", x.Possible, x.Duplicates)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("findings %+v, want one", rep.Findings)
	}
	f := rep.Findings[0]
	const why = "an attempt with an unknown outcome was followed by another; the repeat is in flight"
	if f.Grade != audit.Possible || f.Tool != "SendEmail" || f.Why != why {
		t.Errorf("finding %s %s %q, want possible SendEmail %q", f.Grade, f.Tool, f.Why, why)
	}
	if n := len(f.Attempts); n != 2 || f.Attempts[1].Attempt != 3 || f.Attempts[1].Outcome != "in flight" {
		t.Errorf("evidence %+v, want the timed-out attempts and #3 in flight", f.Attempts)
	}
}
