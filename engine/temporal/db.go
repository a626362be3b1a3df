package temporal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
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
	return "temporal-" + sanitize(chain), sanitize(run)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 80 {
			break
		}
	}
	return b.String()
}

func eventKey(exec, run string, id int64) []byte {
	k := make([]byte, 0, len(exec)+len(run)+10)
	k = append(k, exec...)
	k = append(k, 0)
	k = append(k, run...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

// Save stores one run's history in the caller's transaction (an import
// commits a whole file in one, so a file that fails leaves nothing). An
// event already stored byte for byte is skipped, so importing a file twice
// changes nothing, and a later download of a run that went on adds its new
// events; an event id stored with other content is refused. The execution
// record (marked imported, with source) is rebuilt from all its runs.
func Save(tx *store.Tx, h *historypb.History, source string) (Stats, error) {
	exec, run := Identify(h)
	st := Stats{Execution: exec, RunID: run}
	if rec := tx.Execution(exec); rec != nil {
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return st, fmt.Errorf("execution %s: %w", exec, err)
		}
		if old.Imported != ImportedFormat {
			return st, fmt.Errorf("execution %s exists and was not imported from Temporal", exec)
		}
	}
	for _, ev := range h.GetEvents() {
		// A fresh slice each time: the store keeps the value until commit.
		buf, err := marshal.Marshal(ev)
		if err != nil {
			return st, fmt.Errorf("event %d: encode: %w", ev.GetEventId(), err)
		}
		key := eventKey(exec, run, ev.GetEventId())
		if old := tx.Get(store.TemporalEvents, key); old != nil {
			if bytes.Equal(old, buf) {
				st.Repeated++
				continue
			}
			return st, fmt.Errorf("event %d of run %s was imported before with other content", ev.GetEventId(), run)
		}
		if err := tx.Put(store.TemporalEvents, key, buf); err != nil {
			return st, err
		}
		st.Events++
	}
	if st.Events == 0 {
		return st, nil
	}
	runs, err := Load(tx, exec)
	if err != nil {
		return st, err
	}
	return st, putRecord(tx, exec, runs, source)
}

// putRecord writes the execution's record from its folded runs: what ran,
// when, how many runs, and how it ended so far.
func putRecord(tx *store.Tx, exec string, runs []Run, source string) error {
	x := history.Execution{ID: exec, Imported: ImportedFormat, Source: source}
	if rec := tx.Execution(exec); rec != nil {
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return fmt.Errorf("execution %s: %w", exec, err)
		}
		x.Source = old.Source
		if source != "" && !strings.Contains(x.Source, source) {
			x.Source += ", " + source
		}
	}
	t := trace.Fold(exec, Events(runs))
	x.Scenario, x.Runs, x.Started, x.Updated = t.Scenario, len(t.Runs), t.Started, t.Last
	x.Status = history.StatusRunning
	if t.End != nil {
		x.Status, x.Ended = history.StatusCompleted, t.End.Time
		if t.End.Mark != trace.MarkOK {
			x.Status, x.Error = history.StatusFailed, t.End.Error
		}
	}
	if x.Scenario == "" {
		x.Scenario = "(Temporal workflow)"
	}
	// Not history.Put: an imported workflow that is still running is not
	// one of retrylab's unfinished executions (store.Active), which a host
	// would mark as killed when it starts.
	enc, err := history.EncodeExecution(x)
	if err != nil {
		return err
	}
	return tx.PutExecution(exec, enc)
}

// Load returns an imported execution's runs, oldest first (by their first
// event's time), each run's events in event-id order.
func Load(tx *store.Tx, exec string) ([]Run, error) {
	prefix := append([]byte(exec), 0)
	var runs []Run
	var bad error
	err := tx.Scan(store.TemporalEvents, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		rest := k[len(prefix):]
		i := bytes.IndexByte(rest, 0)
		if i < 0 || len(rest) != i+9 {
			bad = fmt.Errorf("execution %s: malformed stored event key %q", exec, k)
			return false
		}
		run := string(rest[:i])
		ev := &historypb.HistoryEvent{}
		if err := proto.Unmarshal(v, ev); err != nil {
			bad = fmt.Errorf("execution %s: stored event %d of run %s does not decode: %w", exec, binary.BigEndian.Uint64(rest[i+1:]), run, err)
			return false
		}
		if n := len(runs); n == 0 || runs[n-1].RunID != run {
			runs = append(runs, Run{RunID: run})
		}
		r := &runs[len(runs)-1]
		r.Events = append(r.Events, ev)
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
