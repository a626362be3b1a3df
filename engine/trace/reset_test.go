package trace_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
)

// A trace Reset between histories folds each as a new trace would: the
// runs, calls and attempts of the one before leave nothing behind (check
// folds a million short histories in one trace per worker).
func TestResetFoldsAsNew(t *testing.T) {
	crashed := []trace.Event{
		{Seq: 1, Kind: trace.ExecutionStarted, Run: 1, Text: "none", Time: t0},
		{Seq: 2, Kind: trace.RunStarted, Run: 1, PID: 10, Time: t0},
		{Seq: 3, Kind: trace.CallScheduled, Run: 1, Call: "a", Tool: "t", Time: t0},
		{Seq: 4, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 1, Time: t0},
		{Seq: 5, Kind: trace.AttemptFinished, Run: 1, Call: "a", Attempt: 1, Outcome: trace.OutcomeTimeout, Time: t0},
		{Seq: 6, Kind: trace.AttemptStarted, Run: 1, Call: "a", Attempt: 2, Time: t0},
		{Seq: 7, Kind: trace.RunCrashed, Run: 1, ExitCode: 137, Time: t0.Add(time.Second)},
		{Seq: 8, Kind: trace.TurnStarted, Run: 2, Turn: 1, Time: t0.Add(5 * time.Second)},
		{Seq: 9, Kind: trace.RunStarted, Run: 2, PID: 11, Text: "keys", Time: t0.Add(5 * time.Second)},
		{Seq: 10, Kind: trace.CallScheduled, Run: 2, Call: "a", Tool: "t", Time: t0.Add(5 * time.Second)},
		{Seq: 12, Kind: trace.AttemptStarted, Run: 2, Call: "b", Attempt: 1, Time: t0.Add(6 * time.Second)},
	}
	// An attempt of a call the history before scheduled, never this one.
	orphan := []trace.Event{
		{Seq: 1, Kind: trace.ExecutionStarted, Run: 1, Text: "none", Time: t0},
		{Seq: 2, Kind: trace.RunStarted, Run: 1, PID: 12, Time: t0},
		{Seq: 3, Kind: trace.AttemptStarted, Run: 1, Call: "step-1", Attempt: 3, Time: t0},
		{Seq: 4, Kind: trace.AttemptFinished, Run: 1, Call: "step-1", Attempt: 3, Outcome: trace.OutcomeOK, Time: t0},
	}
	histories := [][]trace.Event{synth(40), orphan, crashed, synth(9), orphan, synth(3), crashed[:7], synth(17)}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			reused := trace.New("h0")
			if stream {
				reused.Stream()
			}
			for i, evs := range histories {
				id := fmt.Sprintf("h%d", i)
				if i > 0 {
					reused.Reset(id)
				}
				reusedDelivered := audit.WatchDeliveries(reused)
				fresh := trace.New(id)
				freshDelivered := audit.WatchDeliveries(fresh)
				if stream {
					fresh.Stream()
				}
				for _, e := range evs {
					if a, b := reused.Seen(e.Call, e.Attempt), fresh.Seen(e.Call, e.Attempt); a != b {
						t.Fatalf("history %d event %d: seen %v after a reset, %v fresh", i, e.Seq, a, b)
					}
					reused.Apply(e)
					fresh.Apply(e)
					if stream && e.Kind == trace.AttemptFinished {
						// As check does: a streaming reader lets go of what it read.
						for _, tr := range []*trace.Trace{reused, fresh} {
							if a := tr.Attempt(e.Call, e.Attempt); a != nil {
								tr.Forget(a)
							}
						}
					}
				}
				got, want := dump(reused), dump(fresh)
				if got != want {
					t.Fatalf("history %d after a reset:\n%s\nwant\n%s", i, got, want)
				}
				if reused.Execution != id || reused.LastSeq != fresh.LastSeq || reused.Events != fresh.Events ||
					fmt.Sprint(reused.Anomalies) != fmt.Sprint(fresh.Anomalies) || reusedDelivered.Duplicated() != freshDelivered.Duplicated() ||
					len(reused.Runs) != len(fresh.Runs) || (reused.End == nil) != (fresh.End == nil) {
					t.Fatalf("history %d after a reset: %s %d %d %v %v, want %s %d %d %v %v", i,
						reused.Execution, reused.LastSeq, reused.Events, reused.Anomalies, reusedDelivered.Duplicated(),
						fresh.Execution, fresh.LastSeq, fresh.Events, fresh.Anomalies, freshDelivered.Duplicated())
				}
				for j, r := range reused.Runs {
					f := fresh.Runs[j]
					if r.Number != f.Number || r.PID != f.PID || r.Policy != f.Policy || r.Seq != f.Seq || r.Idle != f.Idle || r.FaultCount != f.FaultCount {
						t.Fatalf("history %d run %d after a reset: %+v, want %+v", i, j, *r, *f)
					}
				}
			}
		})
	}
}

// An event's Ref names its sequence number, from the table of the first
// ones or written out.
func TestFromHistoryRef(t *testing.T) {
	for _, seq := range []uint64{0, 1, 9, 255, 256, 1 << 40} {
		e, ok := history.TraceEvent(history.Event{Seq: seq, Type: history.AttemptStarted})
		if want := fmt.Sprintf("seq %d", seq); !ok || e.Ref != want {
			t.Errorf("seq %d: Ref %q, want %q", seq, e.Ref, want)
		}
	}
}
