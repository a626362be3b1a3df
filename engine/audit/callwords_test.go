package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
)

// withIDs is build for a source whose call ids tell calls apart: each call
// is scheduled with the attribute that says so (Temporal's activity id).
func withIDs(exec string, atts ...att) *trace.Trace {
	var evs []trace.Event
	evs = append(evs, trace.Event{Kind: trace.ExecutionStarted, Time: t0}, trace.Event{Kind: trace.RunStarted, Run: 1, Time: t0})
	n := map[string]int{}
	for _, a := range atts {
		tm := t0.Add(time.Duration(a.at) * time.Second)
		if n[a.call] == 0 {
			evs = append(evs, trace.Event{Kind: trace.CallScheduled, Run: 1, Call: a.call, Tool: a.tool, Args: json.RawMessage(a.args), Time: tm,
				Attrs: map[string]string{"temporal.activity_id": a.call}})
		}
		n[a.call]++
		evs = append(evs,
			trace.Event{Kind: trace.AttemptStarted, Run: 1, Call: a.call, Attempt: n[a.call], Ref: a.call + "-" + string(rune('0'+n[a.call])), Time: tm},
			trace.Event{Kind: trace.AttemptFinished, Run: 1, Call: a.call, Attempt: n[a.call], Outcome: a.outcome, Time: tm.Add(time.Second)})
	}
	return trace.Fold(exec, evs)
}

// Where call ids tell calls apart, a finding says whether its repeats are
// attempts of one call or separate calls with the same arguments; where
// they do not (an agent framework's tool-call ids), how many attempts
// succeeded.
func TestFindingWordsForCallsAndAttempts(t *testing.T) {
	const args = `{"to":"a@x","subject":"hi"}`
	loop := make([]att, 7)
	for i := range loop {
		loop[i] = att{string(rune('1' + i)), "send_email", args, i, trace.OutcomeOK, "", false}
	}
	cases := []struct {
		name  string
		tr    *trace.Trace
		grade Grade
		why   string
	}{
		{"seven activities, one id each", withIDs("e1", loop...), Duplicate, "7 separate calls with the same arguments succeeded"},
		{"one activity whose two attempts succeeded", withIDs("e2",
			att{"5", "send_email", args, 0, trace.OutcomeOK, "", false},
			att{"5", "send_email", args, 2, trace.OutcomeOK, "", false}), Duplicate, "two attempts of one call succeeded"},
		{"a timeout, then another activity", withIDs("e3",
			att{"5", "send_email", args, 0, trace.OutcomeTimeout, "", false},
			att{"6", "send_email", args, 2, trace.OutcomeOK, "", false}), Possible, whySeparateUnk},
		{"a timeout, then the same activity's next attempt", withIDs("e4",
			att{"5", "send_email", args, 0, trace.OutcomeTimeout, "", false},
			att{"5", "send_email", args, 2, trace.OutcomeOK, "", false}), Possible, whyUnknown},
		{"tool-call ids that do not tell calls apart", build("e5", loop...), Duplicate, "7 attempts succeeded"},
		{"two of them", build("e6", loop[:2]...), Duplicate, whyTwoOK},
	}
	for _, c := range cases {
		rep := Run([]*trace.Trace{c.tr}, opts())
		if len(rep.Findings) != 1 {
			t.Errorf("%s: %d findings", c.name, len(rep.Findings))
			continue
		}
		if f := rep.Findings[0]; f.Grade != c.grade || f.Why != c.why {
			t.Errorf("%s: %s %q, want %s %q", c.name, f.Grade, f.Why, c.grade, c.why)
		}
	}
}
