package audit

import (
	"testing"

	"github.com/retrylab/retrylab/engine/trace"
)

// deliveriesOf folds evs with a Deliveries watching.
func deliveriesOf(evs []trace.Event) *Deliveries {
	tr := trace.New("x")
	d := WatchDeliveries(tr)
	for _, e := range evs {
		tr.Apply(e)
	}
	return d
}

// sendTwice is a call whose two attempts each caused the effects of fx.
func sendTwice(fx1, fx2 *trace.Effect) []trace.Event {
	evs := []trace.Event{{Seq: 1, Kind: trace.ExecutionStarted, Time: t0}, {Seq: 2, Kind: trace.RunStarted, Run: 1, Time: t0},
		{Seq: 3, Kind: trace.CallScheduled, Run: 1, Call: "c1", Tool: "send_email", Time: t0},
		{Seq: 4, Kind: trace.AttemptStarted, Run: 1, Call: "c1", Attempt: 1, Time: t0},
		{Seq: 5, Kind: trace.EffectObserved, Run: 1, Call: "c1", Attempt: 1, Effect: fx1, Time: t0},
		{Seq: 6, Kind: trace.AttemptFinished, Run: 1, Call: "c1", Attempt: 1, Outcome: trace.OutcomeTimeout, Time: t0},
		{Seq: 7, Kind: trace.AttemptStarted, Run: 1, Call: "c1", Attempt: 2, Time: t0},
		{Seq: 8, Kind: trace.EffectObserved, Run: 1, Call: "c1", Attempt: 2, Effect: fx2, Time: t0},
		{Seq: 9, Kind: trace.AttemptFinished, Run: 1, Call: "c1", Attempt: 2, Outcome: trace.OutcomeOK, Time: t0},
	}
	return evs
}

func TestDeliveriesCountMailPerIntent(t *testing.T) {
	mail := func(id, to, subject string) *trace.Effect {
		return &trace.Effect{Service: "mail", ID: id, Target: to, Summary: subject}
	}
	crm := func(id string) *trace.Effect { return &trace.Effect{Service: "crm", ID: id, Target: "inv_1"} }
	for _, c := range []struct {
		name     string
		fx1, fx2 *trace.Effect
		want     bool
	}{
		{"one intent delivered twice", mail("msg_1", "a@x", "hi"), mail("msg_2", "a@x", "hi"), true},
		{"another subject", mail("msg_1", "a@x", "hi"), mail("msg_2", "a@x", "bye"), false},
		{"another recipient", mail("msg_1", "a@x", "hi"), mail("msg_2", "b@x", "hi"), false},
		{"a record written twice", crm("w1"), crm("w2"), false},
	} {
		if got := deliveriesOf(sendTwice(c.fx1, c.fx2)).Duplicated(); got != c.want {
			t.Errorf("%s: Duplicated() = %v, want %v", c.name, got, c.want)
		}
	}
}

// An effect that arrives before its attempt counts once the attempt
// starts; one whose attempt never starts does not count.
func TestDeliveriesCountOnlyStartedAttempts(t *testing.T) {
	fx := &trace.Effect{Service: "mail", ID: "msg_1", Target: "a@x", Summary: "hi"}
	evs := sendTwice(fx, fx)
	early := append([]trace.Event{}, evs[:6]...)
	early = append(early, trace.Event{Seq: 7, Kind: trace.EffectObserved, Run: 1, Call: "c1", Attempt: 2, Effect: fx, Time: t0},
		trace.Event{Seq: 8, Kind: trace.AttemptStarted, Run: 1, Call: "c1", Attempt: 2, Time: t0})
	if !deliveriesOf(early).Duplicated() {
		t.Errorf("an effect that arrived before its attempt started does not count")
	}
	if deliveriesOf(early[:7]).Duplicated() {
		t.Errorf("the effect of an attempt never seen to start counts")
	}
}
