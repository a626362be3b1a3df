package audit

import "github.com/retrylab/retrylab/engine/trace"

// Deliveries is the duplicate rule of the histories retrylab records
// itself, where the simulated mail provider reports what it delivered: an
// execution sent a duplicate when one intent (the same recipient and
// subject) was delivered more than once. It is what the execution record's
// Duplicates flag says (engine counts it as it writes the events), held
// here, where duplicates are judged, instead of in the fold, which stays
// neutral as to providers and sources. Only mail counts: a CRM write
// repeated for one record is an upsert, not a second effect. Its zero
// value is ready; it observes one trace (WatchDeliveries).
type Deliveries struct {
	sent map[[2]string]int
	dup  bool
}

// WatchDeliveries has the fold of t tell a new Deliveries of its effects:
// call it before t's first event (and again after t.Reset).
func WatchDeliveries(t *trace.Trace) *Deliveries {
	d := &Deliveries{}
	t.OnEffect(d.Observe)
	return d
}

// Observe counts one effect the fold attached to an attempt.
func (d *Deliveries) Observe(e trace.Effect) {
	if e.Service != "mail" {
		return
	}
	k := [2]string{e.Target, e.Summary}
	if d.sent == nil {
		d.sent = map[[2]string]int{}
	}
	d.sent[k]++
	if d.sent[k] > 1 {
		d.dup = true
	}
}

// Duplicated reports whether the trace delivered one intent's mail more
// than once: the duplicate send the lesson is about. Effects of attempts
// never seen to start do not count.
func (d *Deliveries) Duplicated() bool { return d.dup }
