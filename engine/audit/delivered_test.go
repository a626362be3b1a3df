package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

// An attempt whose caller saw a timeout but whose effect the trace records
// (◆: the provider delivered) acted for certain: followed by a success it is
// a duplicate, not merely possible. retrylab's own naive run, exported and
// imported, is the case.
func TestDeliveredTimeoutThenSuccessIsDuplicate(t *testing.T) {
	const args = `{"to": "a@x", "subject": "hi"}`
	evs := []trace.Event{{Kind: trace.ExecutionStarted, Time: t0}, {Kind: trace.RunStarted, Run: 1, Time: t0},
		{Kind: trace.CallScheduled, Run: 1, Call: "c1", Tool: "send_email", Args: json.RawMessage(args), Time: t0},
		{Kind: trace.AttemptStarted, Run: 1, Call: "c1", Attempt: 1, Ref: "c1-1", Time: t0},
		{Kind: trace.EffectObserved, Run: 1, Call: "c1", Attempt: 1, Effect: &trace.Effect{Service: "mail", ID: "msg_1", Target: "a@x"}, Time: t0},
		{Kind: trace.AttemptFinished, Run: 1, Call: "c1", Attempt: 1, Outcome: trace.OutcomeTimeout, Time: t0.Add(time.Second)},
		{Kind: trace.AttemptStarted, Run: 1, Call: "c1", Attempt: 2, Ref: "c1-2", Time: t0.Add(2 * time.Second)},
		{Kind: trace.AttemptFinished, Run: 1, Call: "c1", Attempt: 2, Outcome: trace.OutcomeOK, Time: t0.Add(3 * time.Second)},
	}
	rep := Run([]*trace.Trace{trace.Fold("x", evs)}, opts())
	if len(rep.Findings) != 1 || rep.Findings[0].Grade != Duplicate {
		t.Fatalf("findings %+v, want one duplicate", rep.Findings)
	}
	if got := len(rep.Findings[0].Attempts); got != 2 {
		t.Errorf("%d attempts as evidence, want 2", got)
	}
}
