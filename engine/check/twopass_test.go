package check

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// An execution with more attempts than the check keeps is checked in two
// passes; the report is the same as with every attempt kept. (Kept, the
// histories go through the workers of the pipeline; with nothing kept,
// each streams through the check alone.)
func TestTwoPassesAsOne(t *testing.T) {
	// Four attempts a step make long histories; one makes short ones, whose
	// walks a worker folds one after another in the same space (walkSpace).
	for _, opts := range []gen.Options{{Executions: 120, AttemptsPerStep: 4, Seed: 9}, {Executions: 400, AttemptsPerStep: 1, Seed: 5}} {
		path := filepath.Join(t.TempDir(), "g.db")
		db, err := store.Open(path, store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := gen.Generate(context.Background(), db, opts); err != nil {
			t.Fatal(err)
		}
		report := func(keep int) string {
			r, err := checkDB(db, Options{}, keep)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			r.Write(&b, 1000)
			r.WriteTable(&b)
			r.WriteMatrix(&b)
			return b.String()
		}
		one, two := report(1<<30), report(0)
		if one != two {
			t.Errorf("%+v: two passes:\n%s\none:\n%s", opts, two, one)
		}
	}
}

// Walks one after another in one worker's space (walkSpace) answer as
// fresh ones: nothing of a history before (its attempts, the ledger's
// effects it was held to, its steps) reaches the next.
func TestWalksInOneSpaceAsFresh(t *testing.T) {
	ok := func(id string) *hist {
		return newHist(id, "single", both).worker().schedule("send", "send_email", sendArgs).
			attempt("send", 1, "ik_1", fault.TimeoutBeforeEffect).finish("send", 1, history.OutcomeTimeout).
			attempt("send", 2, "ik_1").send("send", 2, "ik_1", 0).finish("send", 2, history.OutcomeOK).recorded("send").completed()
	}
	// An effect of attempt 2, which this execution never started (the one
	// before did).
	never := newHist("e2", "single", both).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "ik_1").send("send", 1, "ik_1", 0).finish("send", 1, history.OutcomeOK).send("send", 2, "ik_1", 0).completed()
	twice := ok("e3").send("send", 2, "ik_1", time.Hour)
	crashed := newHist("e4", "single", none).worker().schedule("send", "send_email", sendArgs).
		attempt("send", 1, "", fault.CrashAfterEffect).send("send", 1, "", 0).crash(fault.CrashAfterEffect, "killed by the injected fault")
	quiet := newHist("e5", "single", both).worker().schedule("other", "send_email", sendArgs).completed()
	hs := []*hist{ok("e1"), never, twice, crashed, quiet, ok("e6"), never}
	for _, opts := range []Options{{Resolve: planFor(false)}, {}} {
		var space walkSpace
		for i, h := range hs {
			fresh, _ := checkOne(t, opts, h)
			w := space.walk(h.x, opts, len(h.events)+1, slices.Clone(h.effects))
			for _, ev := range h.events {
				w.apply(ev)
			}
			w.done()
			got := w.finish(slices.Clone(h.effects))
			space.release(w)
			if a, b := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", fresh); a != b {
				t.Errorf("history %d (%s) in a used space:\n%s\nfresh:\n%s", i, h.x.ID, a, b)
			}
		}
	}
}
