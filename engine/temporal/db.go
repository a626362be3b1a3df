package temporal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/safeid"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// The collections engine/temporal owns; the store creates each on its
// first write.
const (
	// BucketEvents holds the events of executions imported from Temporal
	// workflow histories (execution id, 0, run id, 0, 8-byte chunk number ->
	// up to 256 events as protobuf).
	BucketEvents store.Bucket = "temporal_events"
	// BucketRuns maps an imported workflow run id to its execution.
	BucketRuns store.Bucket = "temporal_runs"
)

// ImportedFormat marks an execution record as imported from Temporal.
const ImportedFormat = "temporal"

// Stats says what one Save did.
type Stats struct {
	Events    int    // events stored
	Repeated  int    // events already stored, byte for byte
	Execution string // the execution the run belongs to
	RunID     string
}

// marshal is deterministic, so the same event decoded from either shape
// (or from the same file twice) is stored as the same bytes.
var marshal = proto.MarshalOptions{Deterministic: true}

// Identify names the execution and the run a history belongs to. A chain
// of runs (continue-as-new, workflow retries, cron) is one execution, named
// after its first run; a run is named by its original run id. Histories
// from servers that give neither are named after their start event.
func Identify(h *historypb.History) (exec, run string) {
	first := h.GetEvents()[0]
	a := first.GetWorkflowExecutionStartedEventAttributes()
	run = a.GetOriginalExecutionRunId()
	if run == "" {
		b, _ := marshal.Marshal(first)
		sum := sha256.Sum256(b)
		run = "start-" + hex.EncodeToString(sum[:8])
	}
	chain := a.GetFirstExecutionRunId()
	if chain == "" {
		chain = run
	}
	return ExecutionName(chain), safeid.Part(run, 80)
}

// ExecutionName is the execution retrylab stores a chain of runs under,
// named after its first run id.
func ExecutionName(firstRunID string) string { return "temporal-" + safeid.Part(firstRunID, 80) }

// chunkEvents is how many events one stored value holds: event ids
// k*chunkEvents+1 .. (k+1)*chunkEvents of a run are chunk k. A chunk is the
// deterministic protobuf of a History holding those events, which is the
// concatenation of one record per event; so a chunk stored while the
// workflow ran is a byte prefix of the same chunk downloaded later.
const chunkEvents = 256

func chunkKey(exec, run string, chunk int) []byte {
	k := make([]byte, 0, len(exec)+len(run)+10)
	k = append(k, exec...)
	k = append(k, 0)
	k = append(k, run...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(chunk))
}

// Save stores one run's history in the caller's transaction (an import
// commits a whole file in one, so a file that fails leaves nothing). An
// event already stored byte for byte is skipped, so importing a file twice
// changes nothing, and a later download of a run that went on adds its new
// events; an event id stored with other content is refused. The execution
// record (marked imported, with source) is rebuilt from all its runs.
func Save(tx *store.Tx, h *historypb.History, source string) (Stats, error) {
	return SaveFrom(tx, h, source, 0)
}

// SaveFrom is Save for a caller that knows the first known events of h are
// stored already (following a live workflow: what earlier batches saved):
// the chunks that hold only those are neither encoded nor compared again,
// so a batch costs what it brings, not the whole history.
func SaveFrom(tx *store.Tx, h *historypb.History, source string, known int) (Stats, error) {
	exec, run := Identify(h)
	st := Stats{Execution: exec, RunID: run}
	rec := tx.Execution(exec)
	// alone: the execution is this run only (new, or this run imported
	// before and no other).
	alone := rec == nil
	if rec != nil {
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return st, fmt.Errorf("execution %s: %w", exec, err)
		}
		if old.Imported != ImportedFormat {
			return st, fmt.Errorf("execution %s exists and was not imported from Temporal", exec)
		}
		alone = old.Runs == 1 && string(tx.Get(BucketRuns, []byte(run))) == exec
	}
	evs := h.GetEvents()
	first := 0
	if known > 0 && known <= len(evs) {
		first = known / chunkEvents
		st.Repeated += first * chunkEvents
	} else {
		known = 0
	}
	for k := first; k*chunkEvents < len(evs); k++ {
		part := evs[k*chunkEvents : min((k+1)*chunkEvents, len(evs))]
		buf, err := marshal.Marshal(&historypb.History{Events: part})
		if err != nil {
			return st, fmt.Errorf("events %d-%d: encode: %w", part[0].GetEventId(), part[len(part)-1].GetEventId(), err)
		}
		key := chunkKey(exec, run, k)
		old := tx.Get(BucketEvents, key)
		switch {
		case old == nil:
		case bytes.HasPrefix(old, buf): // all stored before (a shorter or the same download)
			st.Repeated += len(part)
			continue
		case bytes.HasPrefix(buf, old): // the run went on since
			had := &historypb.History{}
			if err := proto.Unmarshal(old, had); err != nil {
				return st, fmt.Errorf("run %s: stored events do not decode: %w", run, err)
			}
			st.Repeated += len(had.GetEvents())
			st.Events -= len(had.GetEvents())
		default:
			return st, conflict(old, part, run)
		}
		if err := tx.Put(BucketEvents, key, buf); err != nil {
			return st, err
		}
		st.Events += len(part)
	}
	if st.Events == 0 {
		return st, nil
	}
	if err := tx.Put(BucketRuns, []byte(run), []byte(exec)); err != nil {
		return st, err
	}
	// An execution that is this run alone takes its record from the events
	// in hand: new events were stored, so they reach further than what was
	// stored before (both are the start of one history). Otherwise the
	// stored runs make it.
	runs := []Run{{RunID: run, Events: h.GetEvents()}}
	if !alone {
		var err error
		if runs, err = Load(tx, exec); err != nil {
			return st, err
		}
	}
	// What an earlier batch stored was audited with it: only the events
	// new since then can change the audit (known > 0: a live follower's
	// batch).
	var fresh []*historypb.HistoryEvent
	if known > 0 {
		fresh = evs[known:]
	}
	return st, putRecord(tx, exec, runs, source, fresh)
}

// putRecord writes the execution's record from its folded runs: what ran,
// when, how many runs, and how it ended so far. fresh, when not nil, are
// the only events not stored (and audited) when the record was last
// written.
func putRecord(tx *store.Tx, exec string, runs []Run, source string, fresh []*historypb.HistoryEvent) error {
	x := history.Execution{ID: exec, Imported: ImportedFormat, Source: source}
	var before *history.Execution
	if rec := tx.Execution(exec); rec != nil {
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return fmt.Errorf("execution %s: %w", exec, err)
		}
		before = &old
		x.Source = old.Source
		if source != "" && !strings.Contains(x.Source, source) {
			x.Source += ", " + source
		}
	}
	if len(runs) == 1 {
		summarise(&x, runs[0].Events)
	} else {
		t := trace.Fold(exec, Events(runs))
		x.Scenario, x.Runs, x.Started, x.Updated = t.Scenario, len(t.Runs), t.Started, t.Last
		last := runs[len(runs)-1].Events
		closeStatus(&x, last[len(last)-1])
	}
	if x.Scenario == "" {
		x.Scenario = "(Temporal workflow)"
	}
	switch {
	case before != nil && before.Duplicates:
		// A history only grows: a duplicate found stays one.
		x.Duplicates = true
	case before != nil && fresh != nil && !auditMayChange(fresh):
		// A live batch of workflow tasks, signals, timers: no attempt
		// started or ended, nothing the audit reads; the earlier batches'
		// verdict stands without folding the execution again.
		x.Duplicates, x.Possible = before.Duplicates, before.Possible
	default:
		g, err := graded(tx, exec, runs)
		if err != nil {
			return err
		}
		x.Duplicates, x.Possible = g.Flags()
	}
	// Not history.Put: an imported workflow that is still running is not
	// one of retrylab's unfinished executions (store.Active), which a host
	// would mark as killed when it starts.
	enc, err := history.EncodeExecution(x)
	if err != nil {
		return err
	}
	if x.Status.Finished() {
		// A closed workflow's history is not appended to again: its last
		// chunk is stored compressed, as history.Put does.
		if err := tx.SealHistory(exec); err != nil {
			return err
		}
	}
	return tx.PutExecution(exec, enc)
}

// Verdict is audit.Verdict of an imported workflow's stored history,
// audited alone with the default effects: the record's Duplicates and
// Possible flags, for a record imported before the importer set them.
func Verdict(tx *store.Tx, exec string) (audit.Grade, error) {
	evs, err := LoadEvents(tx, exec)
	if err != nil {
		return "", err
	}
	return audit.Verdict(trace.Fold(exec, evs)), nil
}

// auditMayChange says whether events appended to a history can change
// its audit: any but workflow tasks, signals, timers and the workflow's
// own properties (search attributes, memo), which add no attempt, no
// outcome and no call.
func auditMayChange(evs []*historypb.HistoryEvent) bool {
	for _, ev := range evs {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
			enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
			enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
			enumspb.EVENT_TYPE_TIMER_STARTED, enumspb.EVENT_TYPE_TIMER_FIRED, enumspb.EVENT_TYPE_TIMER_CANCELED,
			enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
			enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		default:
			return true
		}
	}
	return false
}

// graded is the audit's verdict (with the default effects) on the
// execution alone, so the explorer's list marks it ⚠ or ◇. It folds the
// execution only when one of its activities is side-effecting.
func graded(tx *store.Tx, exec string, runs []Run) (audit.Grade, error) {
	effects := false
	for _, r := range runs {
		for _, ev := range r.Events {
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && audit.EffectByDefault(a.GetActivityType().GetName()) {
				effects = true
				break
			}
		}
	}
	if !effects {
		return "", nil
	}
	return Verdict(tx, exec)
}

// conflict names the first event of part that differs from the one stored.
func conflict(old []byte, part []*historypb.HistoryEvent, run string) error {
	had := &historypb.History{}
	if err := proto.Unmarshal(old, had); err != nil {
		return fmt.Errorf("run %s: stored events do not decode: %w", run, err)
	}
	for i, ev := range part {
		if i >= len(had.GetEvents()) {
			break
		}
		a, _ := marshal.Marshal(had.GetEvents()[i])
		b, _ := marshal.Marshal(ev)
		if !bytes.Equal(a, b) {
			return fmt.Errorf("event %d of run %s was imported before with other content", ev.GetEventId(), run)
		}
	}
	return fmt.Errorf("events %d-%d of run %s were imported before with other content", part[0].GetEventId(), part[len(part)-1].GetEventId(), run)
}

// summarise fills the record of a one-run execution from its events
// without folding them (a 50 000-event import would fold them only for
// this): what ran, when, and how its close event ends it, read by the same
// closeOf the translation uses, so the record and the fold agree (a test
// checks both on every fixture).
func summarise(x *history.Execution, evs []*historypb.HistoryEvent) {
	x.Scenario = evs[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
	x.Runs, x.Started, x.Status = 1, evs[0].GetEventTime().AsTime(), history.StatusRunning
	for _, ev := range evs {
		if t := ev.GetEventTime().AsTime(); t.After(x.Updated) {
			x.Updated = t
		}
	}
	closeStatus(x, evs[len(evs)-1])
}

// closeStatus sets the record's status from the last event of its latest
// run: running unless it closes the workflow, else how it closed, in
// Temporal's words (completed, failed, cancelled, terminated, timed-out);
// continued-as-new when the run it continues in is not imported. A run
// that failed or timed out and is retried, or a cron run, goes on in its
// next run: running, as before that run is imported.
func closeStatus(x *history.Execution, last *historypb.HistoryEvent) {
	x.Status = history.StatusRunning
	at := last.GetEventTime().AsTime()
	if last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		x.Status, x.Ended = history.StatusContinuedAsNew, at
		return
	}
	c, ok := closeOf(last)
	if !ok || c.next != "" {
		return
	}
	x.Ended = at
	switch last.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		x.Status = history.StatusCompleted
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		x.Status = history.StatusCancelled
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		x.Status = history.StatusTerminated
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		x.Status = history.StatusTimedOut
	default:
		x.Status = history.StatusFailed
	}
	if x.Status != history.StatusCompleted {
		x.Error = c.err
	}
}

// Load returns an imported execution's runs, oldest first (by their first
// event's time), each run's events in event-id order.
func Load(tx *store.Tx, exec string) ([]Run, error) {
	prefix := append([]byte(exec), 0)
	var runs []Run
	var bad error
	err := tx.Scan(BucketEvents, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		rest := k[len(prefix):]
		i := bytes.IndexByte(rest, 0)
		if i < 0 || len(rest) != i+9 {
			bad = fmt.Errorf("execution %s: malformed stored key %q", exec, k)
			return false
		}
		run := string(rest[:i])
		part := &historypb.History{}
		if err := proto.Unmarshal(v, part); err != nil {
			bad = fmt.Errorf("execution %s: stored events of run %s (chunk %d) do not decode: %w", exec, run, binary.BigEndian.Uint64(rest[i+1:]), err)
			return false
		}
		if n := len(runs); n == 0 || runs[n-1].RunID != run {
			runs = append(runs, Run{RunID: run})
		}
		r := &runs[len(runs)-1]
		r.Events = append(r.Events, part.GetEvents()...)
		return true
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	sort.SliceStable(runs, func(i, j int) bool {
		return runs[i].Events[0].GetEventTime().AsTime().Before(runs[j].Events[0].GetEventTime().AsTime())
	})
	return runs, nil
}

// LoadEvents is an imported execution's runs translated into the fold's
// input events, with the attempts retrylab's worker interceptor recorded
// for them (imported as OTLP spans) in place of those Temporal did not keep.
func LoadEvents(tx *store.Tx, exec string) ([]trace.Event, error) {
	runs, err := Load(tx, exec)
	if err != nil {
		return nil, err
	}
	total := 0
	for i := range runs {
		if runs[i].Recorded, err = recordedAttempts(tx, runs[i].RunID); err != nil {
			return nil, err
		}
		total += len(runs[i].Events)
	}
	evs := Events(runs)
	if len(evs) > 0 {
		// How many history events the trace came from, for readers that
		// get only the translated events (show through an attached host).
		if evs[0].Attrs == nil {
			evs[0].Attrs = map[string]string{}
		}
		evs[0].Attrs["events"] = strconv.Itoa(total)
	}
	return evs, nil
}
