package temporal

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// The span attributes that tie an attempt recorded by retrylab's worker
// interceptor (the temporal/ module's interceptor package) to the history:
// with them, attempts Temporal did not keep show with their real outcomes.
const (
	AttrWorkflowID = "temporal.workflow_id"
	AttrRunID      = "temporal.run_id"
	AttrActivityID = "temporal.activity_id"
	// AttrAttempt is the attempt number the span recorded.
	AttrAttempt = "retrylab.attempt"
	// AttrPhase is "started" on the marker the interceptor sends when an
	// attempt starts (SpanAttemptStarted), so an attempt whose worker died
	// before its span ended is still known to have run.
	AttrPhase = "retrylab.phase"
	// SpanAttemptStarted names that marker.
	SpanAttemptStarted = "retrylab.attempt.started"
	// AttrFaults lists the faults retrylab injected into an attempt
	// (fault points, comma-separated), as retrylab's own OTLP export
	// writes them: on the attempt's span, and on a marker
	// (SpanFaultInjected, AttrPhase "fault") sent as the fault is taken, so
	// a fault that kills the worker is still known.
	AttrFaults = "retrylab.faults"
	// AttrFaultSource says where a fault came from ("armed from the
	// explorer", "from the scenario's fault plan"), on the marker.
	AttrFaultSource = "retrylab.fault.source"
	// SpanFaultInjected names that marker.
	SpanFaultInjected = "retrylab.fault.injected"
)

// spanConversationPrefix starts the conversation id the interceptor gives
// a workflow run's spans, so the OTLP import keeps them as one execution
// per run, which Load finds by the run id.
const spanConversationPrefix = "temporal-run-"

// SpanConversation is the gen_ai.conversation.id of the spans recorded for
// the attempts of one workflow run.
func SpanConversation(runID string) string { return spanConversationPrefix + runID }

// Recorded is one attempt as a span recorded it.
type Recorded struct {
	Attempt    int
	Start, End time.Time
	Outcome    trace.Outcome
	Error      string
	Key        string
	SpanID     string
	Digest     string
	// Worker is where it ran, when known.
	Worker string
	// Faults are the faults retrylab injected into the attempt.
	Faults []Fault
	// Tool is the activity type, when the span or marker names it.
	Tool string
}

// Fault is one fault injected into a recorded attempt: its point, where it
// came from, and when it was taken.
type Fault struct {
	Point  string
	Source string
	Time   time.Time
}

// Ended reports whether the attempt's own span arrived; an attempt known
// only from its start marker never ended (its worker died, or the span is
// still to come).
func (r Recorded) Ended() bool { return r.Outcome != "" }

// RecordedAttempts reads the spans the interceptor sent for a run
// (imported through `retrylab import` or `retrylab serve --otlp`), by
// activity id, each activity's attempts in order: what a reader that
// follows a run's attempts as they happen (retrylab-temporal run) sees
// before the history keeps them.
func RecordedAttempts(tx *store.Tx, runID string) (map[string][]Recorded, error) {
	return recordedAttempts(tx, runID)
}

// recordedAttempts reads the spans the interceptor sent for a run (imported
// through `retrylab import` or `retrylab serve --otlp`), by activity id.
func recordedAttempts(tx *store.Tx, runID string) (map[string][]Recorded, error) {
	spans, err := otlp.Load(tx, otlp.ExecutionID("", SpanConversation(runID)))
	if err != nil || len(spans) == 0 {
		return nil, err
	}
	out := map[string][]Recorded{}
	type attemptKey struct {
		activity string
		n        int
	}
	ended := map[attemptKey]bool{}
	started := map[attemptKey]Recorded{}
	faults := map[attemptKey][]Fault{}
	addFaults := func(k attemptKey, list, source string, at int64) {
		for _, p := range strings.Split(list, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			dup := false
			for j := range faults[k] {
				if f := &faults[k][j]; f.Point == p {
					dup = true
					if source != "" { // the marker knows more than the span's list
						f.Source, f.Time = source, time.Unix(0, at).UTC()
					}
				}
			}
			if !dup {
				faults[k] = append(faults[k], Fault{Point: p, Source: source, Time: time.Unix(0, at).UTC()})
			}
		}
	}
	for i := range spans {
		s := &spans[i]
		id := s.Attrs.Get(AttrActivityID)
		n, err := strconv.Atoi(s.Attrs.Get(AttrAttempt))
		if id == "" || err != nil || n < 1 || s.Attrs.Get(AttrRunID) != runID {
			continue
		}
		if s.Attrs.Get(AttrPhase) == "fault" {
			addFaults(attemptKey{id, n}, s.Attrs.Get(AttrFaults), s.Attrs.Get(AttrFaultSource), s.Start)
			continue
		}
		if s.Attrs.Get(AttrPhase) == "started" {
			// The attempt started; its own span, if it ever ended, says more.
			if _, ok := ended[attemptKey{id, n}]; !ok {
				started[attemptKey{id, n}] = Recorded{Attempt: n, Start: time.Unix(0, s.Start).UTC(), SpanID: s.SpanID,
					Worker: s.Attrs.Get("temporal.worker"), Tool: s.Attrs.Get("gen_ai.tool.name")}
			}
			continue
		}
		ended[attemptKey{id, n}] = true
		delete(started, attemptKey{id, n})
		addFaults(attemptKey{id, n}, s.Attrs.Get(AttrFaults), "", s.Start)
		r := Recorded{Attempt: n, Start: time.Unix(0, s.Start).UTC(), End: time.Unix(0, s.End).UTC(), Outcome: trace.OutcomeOK,
			Key: s.Attrs.Get("retrylab.idempotency_key"), SpanID: s.SpanID, Digest: s.Attrs.Get("retrylab.args_digest"), Tool: s.Attrs.Get("gen_ai.tool.name")}
		if s.Status == "error" {
			r.Error = s.ErrorText()
			switch s.Attrs.Get("error.type") {
			case "timeout":
				r.Outcome = trace.OutcomeTimeout
			case "cancelled":
				r.Outcome = trace.OutcomeCancelled
			default:
				r.Outcome = trace.OutcomeError
			}
		}
		out[id] = append(out[id], r)
	}
	for k, r := range started {
		out[k.activity] = append(out[k.activity], r)
	}
	for id, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Attempt < rs[j].Attempt })
		for i := range rs {
			rs[i].Faults = faults[attemptKey{id, rs[i].Attempt}]
		}
	}
	return out, nil
}

// MergedSpans reports whether an OTLP execution holds the interceptor's
// spans of a workflow run whose history is imported: its attempts show in
// that workflow's execution, so a reader that visits every execution (the
// audit) must not count them twice.
func MergedSpans(tx *store.Tx, otlpExec string) bool {
	prefix := otlp.ExecutionID("", SpanConversation(""))
	if len(otlpExec) <= len(prefix) || otlpExec[:len(prefix)] != prefix {
		return false
	}
	return tx.Get(BucketRuns, []byte(otlpExec[len(prefix):])) != nil
}
