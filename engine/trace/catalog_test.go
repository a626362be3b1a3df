package trace_test

import (
	"context"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// Every scenario of the catalogue, played by its own script (verify.Run),
// folds into a trace that agrees with the history and the ledger: no
// anomaly, every attempt and every recorded effect in place, the outbox's
// messages on the attempts that caused them, and the execution's outcome
// and duplicate flag as the record says.
func TestFoldEveryFixture(t *testing.T) {
	quick := testrun.QuickTimeouts(t, fixtures.FS)
	list, err := scenario.NewCatalog(quick).All()
	if err != nil {
		t.Fatal(err)
	}
	open := verify.Scratch(engine.Config{Scenarios: quick, NoSync: true})
	for _, scn := range list {
		t.Run(scn.Name, func(t *testing.T) {
			t.Parallel()
			h, closeFn, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := closeFn(); err != nil {
					t.Error(err)
				}
			}()
			out, err := verify.Run(context.Background(), h, scn, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range out.Executions {
				x, events := recorded(t, engine.NewLocal(h), id)
				holds(t, x, events, out)
			}
		})
	}
}

func holds(t *testing.T, x history.Execution, events []history.Event, out verify.Outcome) {
	t.Helper()
	tr := trace.New(x.ID)
	delivered := audit.WatchDeliveries(tr)
	for _, ev := range events {
		history.Apply(tr, ev)
	}
	if len(tr.Anomalies) > 0 || tr.UnmatchedEffects() > 0 {
		t.Errorf("%s: anomalies %+v, %d unmatched effects", x.ID, tr.Anomalies, tr.UnmatchedEffects())
	}
	if tr.LastSeq != events[len(events)-1].Seq {
		t.Errorf("%s: LastSeq %d of %d", x.ID, tr.LastSeq, events[len(events)-1].Seq)
	}
	effects := 0
	for _, ev := range events {
		switch ev.Type {
		case history.AttemptStarted:
			if a := tr.Attempt(ev.Step, ev.Attempt); a == nil || a.Run != ev.Run || a.Seq != ev.Seq {
				t.Errorf("%s: attempt %d of %s (seq %d) folds to %+v", x.ID, ev.Attempt, ev.Step, ev.Seq, a)
			}
		case history.EffectObserved:
			effects++
		}
	}
	attached := 0
	for _, r := range tr.Runs {
		eachAttempt(r.Nodes, func(a *trace.Attempt) { attached += len(a.Effects) })
	}
	if attached != effects {
		t.Errorf("%s: %d effects recorded, %d on attempts", x.ID, effects, attached)
	}
	for _, m := range out.Messages {
		if m.Attribution.Execution != x.ID {
			continue
		}
		a := tr.Attempt(m.Attribution.Step, m.Attribution.Attempt)
		found := false
		for _, fx := range attemptEffects(a) {
			found = found || fx.ID == m.ID
		}
		if !found {
			t.Errorf("%s: message %s is not on attempt %d of %s", x.ID, m.ID, m.Attribution.Attempt, m.Attribution.Step)
		}
	}
	want := map[history.Status]trace.Mark{history.StatusCompleted: trace.MarkOK, history.StatusFailed: trace.MarkFailed,
		history.StatusEscalated: trace.MarkEscalated, history.StatusKilled: trace.MarkKilled}[x.Status]
	if tr.Outcome() != want {
		t.Errorf("%s: %s folds to %s, want %s", x.ID, x.Status, tr.Outcome(), want)
	}
	if delivered.Duplicated() != x.Duplicates {
		t.Errorf("%s: duplicates %v, the record says %v", x.ID, delivered.Duplicated(), x.Duplicates)
	}
}

func attemptEffects(a *trace.Attempt) []trace.Effect {
	if a == nil {
		return nil
	}
	return a.Effects
}

func eachAttempt(ns []trace.Node, fn func(*trace.Attempt)) {
	for _, n := range ns {
		if a, ok := n.(*trace.Attempt); ok {
			fn(a)
		}
		eachAttempt(n.Children(), fn)
	}
}
