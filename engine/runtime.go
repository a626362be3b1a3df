package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/wire"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

// The runtime API is how workers reach the host: they fetch their plan,
// report every event (alone, or batched with the next request that must be
// durable), ask for attempt numbers (and learn their faults), read and
// write the journal, and, when the host keeps them, ask for their next run.
// It listens on 127.0.0.1 and requires the bearer token handed to each
// worker. The host's own workers reach it through the runtime channel on a
// Unix socket instead (channelHandler).

const maxRuntimeBody = 4 << 20

// workerEvents are the event types a worker may report itself.
var workerEvents = map[history.Type]bool{
	history.TurnStarted: true, history.ToolCallScheduled: true, history.AttemptFinished: true,
	history.RetryScheduled: true, history.StepReplayed: true, history.StepCompleted: true,
	history.Escalated: true, history.ExecutionCompleted: true, history.ExecutionFailed: true,
	history.Paced: true,
}

func (h *Host) runtimeHandler() http.Handler {
	mux := http.NewServeMux()
	h.runHandlers(mux)
	mux.HandleFunc("POST /v1/workers/next", h.handleNext)
	h.runtimeMux = mux
	return h.authorized(mux)
}

// channelHandler is the runtime API as the runtime channel serves it on
// the workers' socket (engine/internal/rtchan): only the requests a worker
// makes while it plays a run. None of them waits for anything but the
// store, so none needs its context cancelled when the worker goes, which
// the channel does not do. A kept worker's wait for its next run (which
// does), the control API (engine/control, mounted with Runtime().Handle)
// and its streams stay on HTTP.
func (h *Host) channelHandler() http.Handler {
	mux := http.NewServeMux()
	h.runHandlers(mux)
	return h.authorized(mux)
}

// runHandlers are the requests of a worker playing a run.
func (h *Host) runHandlers(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/executions/{id}/plan", h.handlePlan)
	mux.HandleFunc("POST /v1/executions/{id}/events", h.handleEvent)
	mux.HandleFunc("POST /v1/executions/{id}/attempts", h.handleAttempt)
	mux.HandleFunc("GET /v1/executions/{id}/journal/{step}", h.handleJournalGet)
	mux.HandleFunc("PUT /v1/executions/{id}/journal/{step}", h.handleJournalPut)
}

// authorized lets through only requests with the runtime token.
func (h *Host) authorized(next http.Handler) http.Handler {
	want := "Bearer " + h.token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			http.Error(w, "missing or wrong runtime token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// live finds the running state for a worker's request and holds its record
// lock until release is called; it answers the request itself (409) when
// the run has ended or belongs to another worker.
func (h *Host) live(w http.ResponseWriter, r *http.Request) (st *execState, release func(), ok bool) {
	id := r.PathValue("id")
	st, err := h.state(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return nil, nil, false
	}
	st.rec.Lock()
	h.mu.Lock()
	run := st.run
	h.mu.Unlock()
	if st.ended || r.Header.Get(wire.HeaderRun) != strconv.Itoa(run) {
		st.rec.Unlock()
		http.Error(w, fmt.Sprintf("run %s of %s is not the live run (%d)", r.Header.Get(wire.HeaderRun), id, run), http.StatusConflict)
		return nil, nil, false
	}
	return st, st.rec.Unlock, true
}

// state returns the live state of an execution whose worker is running.
func (h *Host) state(id string) (*execState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.execs[id]
	if st == nil || st.worker == nil {
		return nil, fmt.Errorf("execution %s has no running worker", id)
	}
	return st, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readJSON decodes a request's JSON body into v. A body over the size or
// nesting limits, or one that is not JSON, is a *jsonlimit.BadBody.
func readJSON(r *http.Request, v any) error {
	return jsonlimit.DecodeRequest(r, maxRuntimeBody, v)
}

// readBody reads a request's body, up to maxRuntimeBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	return jsonlimit.ReadRequest(r, maxRuntimeBody)
}

func (h *Host) handlePlan(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := h.state(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	h.mu.Lock()
	plan := wire.Plan{Execution: id, Run: st.run, Scenario: st.scn, Policy: st.policy, Pace: max(st.pace, h.pace),
		MailURL: h.world.MailURL(), CRMURL: h.world.CRMURL(),
		Args: map[string]json.RawMessage{}, Attempts: map[string]int{}}
	for k, v := range st.attempts {
		plan.Attempts[k] = v
	}
	h.mu.Unlock()
	for _, turn := range st.scn.Turns {
		for _, c := range turn.Calls {
			args := c.Args
			if args == nil {
				args = map[string]any{}
			}
			canon, err := idemkey.Canonical(args)
			if err != nil {
				http.Error(w, fmt.Sprintf("step %s: %v", c.Step, err), http.StatusInternalServerError)
				return
			}
			plan.Args[c.Step] = canon
		}
	}
	unfinished, err := h.unfinishedSteps(id, plan.Policy.Journal)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	plan.Unfinished = unfinished
	if plan.Policy.Journal {
		if plan.NoJournal, err = h.noJournal(id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	writeJSON(w, http.StatusOK, plan)
}

// unfinishedSteps finds steps whose last attempt never finished, or ended
// in a timeout or a server error, and were not recorded, replayed or
// escalated afterwards (trace.Unfinished). With a journal, a
// step is finished only when its result is recorded: an ok answer that
// never reached the journal (the worker or the host died in between) leaves
// the step unfinished, so an unsafe tool escalates instead of running again.
func (h *Host) unfinishedSteps(id string, journal bool) ([]string, error) {
	t, err := h.fold(id)
	return t.Unfinished(journal), err
}

// noJournal reports whether execution id has no journal record.
func (h *Host) noJournal(id string) (bool, error) {
	none := true
	err := h.db.View(func(tx *store.Tx) error {
		// The walk starts at id's records, if it has any.
		return tx.JournalEntriesAfter(id, "", func(exec, _ string, _ []byte) bool {
			none = exec != id
			return false
		})
	})
	return none, err
}

// handleEvent records what a worker reports: one event (a JSON object) or
// a batch of them (a JSON array), in order and in one durable commit. It
// answers with the last event's sequence number once that commit is on
// disk, and records nothing if any event of the batch is refused.
func (h *Host) handleEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, release, ok := h.live(w, r)
	if !ok {
		return
	}
	defer release()
	data, err := readBody(r)
	if err != nil {
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}
	var evs []history.Event
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') && jsonlimit.Check(data) != nil:
		// JSON must nest no deeper than the limit before encoding/json
		// recurses through it.
		err = jsonlimit.Check(data)
	case len(trimmed) > 0 && trimmed[0] == '[':
		err = json.Unmarshal(data, &evs)
		if err == nil && len(evs) == 0 {
			err = errors.New("empty batch")
		}
	default:
		// One event: a JSON object, or the store's compact encoding
		// (history.Encode), which the host's own workers send.
		evs = make([]history.Event, 1)
		evs[0], err = history.Decode(data)
	}
	if err != nil {
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	run := st.run
	h.mu.Unlock()
	batch, err := workerBatch(evs, run)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := h.recordAll(id, batch)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"seq": out[len(out)-1].Seq})
}

// workerBatch checks events a worker reports (only the types a worker may
// report) and stamps them with its run, with the change each makes to the
// execution record.
func workerBatch(evs []history.Event, run int) ([]pendingEvent, error) {
	batch := make([]pendingEvent, 0, len(evs))
	for _, ev := range evs {
		if !workerEvents[ev.Type] {
			return nil, fmt.Errorf("a worker may not report %q", ev.Type)
		}
		ev.Run = run
		var update func(*history.Execution)
		switch ev.Type {
		case history.ExecutionCompleted:
			update = func(x *history.Execution) { x.Status = history.StatusCompleted }
		case history.ExecutionFailed:
			msg := ev.Error
			update = func(x *history.Execution) { x.Status = history.StatusFailed; x.Error = msg }
		case history.Escalated:
			msg := ev.Error
			update = func(x *history.Execution) { x.Status = history.StatusEscalated; x.Error = msg }
		}
		batch = append(batch, pendingEvent{ev: ev, update: update})
	}
	return batch, nil
}

// handleAttempt numbers an attempt, decides which faults it meets, and
// records AttemptStarted (and FaultInjected) before the worker may send.
func (h *Host) handleAttempt(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, release, ok := h.live(w, r)
	if !ok {
		return
	}
	defer release()
	var req wire.AttemptRequest
	if err := readJSON(r, &req); err != nil || req.Step == "" || req.Attempt < 1 {
		http.Error(w, "bad attempt request", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	run := st.run
	h.mu.Unlock()
	batch, err := workerBatch(req.Events, run)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type injection struct {
		point fault.Point
		plan  int
	}
	var inj []injection
	h.mu.Lock()
	if req.Attempt <= st.attempts[req.Step] {
		h.mu.Unlock()
		http.Error(w, fmt.Sprintf("attempt %d of %s is not new (last was %d)", req.Attempt, req.Step, st.attempts[req.Step]), http.StatusConflict)
		return
	}
	st.attempts[req.Step] = req.Attempt
	for i, f := range st.scn.Faults {
		if st.firedPlan[i] || (f.Step != "" && f.Step != req.Step) || (f.Attempt != 0 && f.Attempt != req.Attempt) {
			continue
		}
		st.firedPlan[i] = true
		inj = append(inj, injection{f.Point, i + 1})
	}
	// An armed fault takes the attempt alone: the scenario's planned
	// faults for it do not happen, and its record says which it replaced.
	var replaced []fault.Point
	if len(h.armed) > 0 {
		for _, in := range inj {
			replaced = append(replaced, in.point)
		}
		inj = []injection{{h.armed[len(h.armed)-1], 0}}
	}
	h.armed = nil
	var grant wire.AttemptGrant
	key := attemptKey{req.Step, req.Attempt}
	for _, in := range inj {
		if in.point.Crash() {
			if grant.Crash == "" {
				grant.Crash = in.point
				st.crashPoint = in.point
			}
		} else {
			st.server[key] = append(st.server[key], in.point)
		}
	}
	h.mu.Unlock()

	// What the worker reported since its last round trip, the attempt and
	// the faults it meets: one commit, on disk before the worker may send.
	started := len(batch)
	batch = append(batch, pendingEvent{ev: history.Event{Type: history.AttemptStarted, Run: run, Step: req.Step, Tool: req.Tool,
		Attempt: req.Attempt, MaxAttempts: req.MaxAttempts, Key: req.Key, Request: req.Request}})
	for _, in := range inj {
		src := "armed from the explorer"
		if in.plan > 0 {
			src = "from the scenario's fault plan"
		} else if len(replaced) > 0 {
			src = armedOverPlan(replaced)
		}
		batch = append(batch, pendingEvent{ev: history.Event{Type: history.FaultInjected, Run: run, Step: req.Step,
			Attempt: req.Attempt, Fault: string(in.point), Plan: in.plan, Text: src}})
	}
	out, err := h.recordAll(id, batch)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	grant.Seq = out[started].Seq
	writeJSON(w, http.StatusOK, grant)
}

func (h *Host) handleJournalGet(w http.ResponseWriter, r *http.Request) {
	id, step := r.PathValue("id"), r.PathValue("step")
	var data []byte
	if err := h.db.View(func(tx *store.Tx) error { data = tx.Journal(id, step); return nil }); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if data == nil {
		http.Error(w, "no journal record", http.StatusNotFound)
		return
	}
	data, err := history.JournalJSON(id, step, data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// handleJournalPut writes a step's record and its StepRecorded event in one
// durable commit, with the events reported before it and those sent to
// follow it (the run's end): the step is finished when this returns.
func (h *Host) handleJournalPut(w http.ResponseWriter, r *http.Request) {
	id, step := r.PathValue("id"), r.PathValue("step")
	st, release, ok := h.live(w, r)
	if !ok {
		return
	}
	defer release()
	var put wire.JournalPut
	if err := readJSON(r, &put); err != nil {
		http.Error(w, "bad journal record: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	run := st.run
	h.mu.Unlock()
	batch, err := workerBatch(put.Events, run)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	then, err := workerBatch(put.Then, run)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The events the worker reported since its last round trip come first,
	// in the same commit as the record (and stamped before it); those it
	// sent to follow the record (the run's end) come after it.
	evs := make([]history.Event, len(batch))
	for i, p := range batch {
		evs[i] = p.ev
		evs[i].Time = h.clock.Now()
	}
	rec := put.JournalRecord
	now := h.clock.Now()
	rec.Step, rec.Run, rec.Recorded = step, run, now
	data, err := history.EncodeJournal(id, step, rec)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ev := history.Event{Type: history.StepRecorded, Time: now, Run: run, Step: step, Tool: rec.Tool,
		Key: rec.Key, Attempt: rec.Attempt, Result: rec.Result}
	after := make([]history.Event, len(then))
	for i, p := range then {
		after[i] = p.ev
		after[i].Time = h.clock.Now()
	}
	appendAll := func(tx *store.Tx, evs []history.Event, batch []pendingEvent) error {
		for i, p := range batch {
			if err := history.Append(tx, id, &evs[i]); err != nil {
				return err
			}
			if p.update != nil {
				if err := updateExecution(tx, id, evs[i].Time, p.update); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = h.db.Update(func(tx *store.Tx) error {
		if err := appendAll(tx, evs, batch); err != nil {
			return err
		}
		if err := tx.PutJournal(id, step, data); err != nil {
			return err
		}
		if err := history.Append(tx, id, &ev); err != nil {
			return err
		}
		return appendAll(tx, after, then)
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for i := range evs {
		h.bus.publish(notice.Notice{Execution: id, Event: &evs[i]})
	}
	h.bus.publish(notice.Notice{Execution: id, Event: &ev})
	for i := range after {
		h.bus.publish(notice.Notice{Execution: id, Event: &after[i]})
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"seq": ev.Seq})
}

// armedOverPlan is the record of an armed fault that met the scenario's
// planned faults on one attempt: it took effect in their place.
func armedOverPlan(planned []fault.Point) string {
	names := make([]string, len(planned))
	for i, p := range planned {
		names[i] = string(p)
	}
	return "armed from the explorer; it took effect instead of the scenario's planned " +
		strings.Join(names, ", ") + ": one fault per attempt, and the one armed by hand wins"
}
