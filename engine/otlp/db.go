package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// ImportedFormat marks an execution record as imported from OpenTelemetry.
const ImportedFormat = "otlp"

// Stats says what one Save did.
type Stats struct {
	Spans      int      // spans stored
	Repeated   int      // spans already stored, byte for byte (a re-sent batch)
	Executions []string // executions created or extended, in order of first mention
}

// spanKey is the key of a stored span: execution, NUL, trace id, span id.
func spanKey(exec, trace, span string) []byte {
	k := make([]byte, 0, len(exec)+1+len(trace)+len(span))
	k = append(k, exec...)
	k = append(k, 0)
	k = append(k, trace...)
	return append(k, span...)
}

// ExecutionID is the execution a trace belongs to: its conversation when it
// has one (gen_ai.conversation.id), else the trace itself.
func ExecutionID(trace, conversation string) string {
	if conversation != "" {
		return "otlp-conv-" + sanitize(conversation)
	}
	return "otlp-" + trace
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
		if b.Len() >= 64 {
			break
		}
	}
	return b.String()
}

// Save stores spans in one transaction: the caller's (an import commits a
// whole file in one, so a file that fails leaves nothing). A span already
// stored byte for byte is skipped, so a re-sent batch or a re-imported file
// changes nothing; a span id seen twice with other content is refused.
// source says where the spans came from (a file, a receiver).
func Save(tx *store.Tx, spans []Span, source string) (Stats, error) {
	var st Stats
	byTrace := map[string][]int{}
	var traces []string
	for i := range spans {
		t := spans[i].TraceID
		if _, ok := byTrace[t]; !ok {
			traces = append(traces, t)
		}
		byTrace[t] = append(byTrace[t], i)
	}
	seenExec := map[string]bool{}
	for _, t := range traces {
		idx := byTrace[t]
		conv := ""
		for _, i := range idx {
			if c := spans[i].Conversation(); c != "" {
				conv = c
				break
			}
		}
		prev := string(tx.Get(store.OTLPTraces, []byte(t)))
		exec := prev
		if conv != "" || exec == "" {
			exec = ExecutionID(t, conv)
		}
		if prev != "" && prev != exec {
			// The trace's conversation became known: it joins the
			// conversation's execution.
			if err := moveTrace(tx, t, prev, exec); err != nil {
				return st, err
			}
		}
		if prev != exec {
			if err := tx.Put(store.OTLPTraces, []byte(t), []byte(exec)); err != nil {
				return st, err
			}
		}
		var fresh []*Span
		for _, i := range idx {
			s := &spans[i]
			enc, err := json.Marshal(s)
			if err != nil {
				return st, fmt.Errorf("span %s: encode: %w", s.SpanID, err)
			}
			key := spanKey(exec, s.TraceID, s.SpanID)
			if old := tx.Get(store.OTLPSpans, key); old != nil {
				if bytes.Equal(old, enc) {
					st.Repeated++
					continue
				}
				return st, &SpanError{SpanID: s.SpanID, Reason: "appears twice with different content (duplicate span id)"}
			}
			if err := tx.Put(store.OTLPSpans, key, enc); err != nil {
				return st, err
			}
			st.Spans++
			fresh = append(fresh, s)
		}
		if len(fresh) == 0 && prev == exec {
			continue
		}
		if err := updateRecord(tx, exec, fresh, source); err != nil {
			return st, err
		}
		if !seenExec[exec] {
			seenExec[exec] = true
			st.Executions = append(st.Executions, exec)
		}
	}
	return st, nil
}

// moveTrace re-keys a trace's spans from one execution to another and
// removes the old execution if nothing is left in it.
func moveTrace(tx *store.Tx, trace, from, to string) error {
	prefix := spanKey(from, trace, "")
	var keys, values [][]byte
	if err := tx.Scan(store.OTLPSpans, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		keys, values = append(keys, k), append(values, v)
		return true
	}); err != nil {
		return err
	}
	moved := make([]*Span, 0, len(keys))
	for i, k := range keys {
		var s Span
		if err := json.Unmarshal(values[i], &s); err != nil {
			return fmt.Errorf("execution %s: stored span %x does not decode: %w", from, k[len(prefix):], err)
		}
		moved = append(moved, &s)
		if err := tx.Delete(store.OTLPSpans, k); err != nil {
			return err
		}
		if err := tx.Put(store.OTLPSpans, spanKey(to, trace, s.SpanID), values[i]); err != nil {
			return err
		}
	}
	rest := false
	fromAll := spanKey(from, "", "")
	if err := tx.Scan(store.OTLPSpans, fromAll, false, func(k, _ []byte) bool {
		rest = bytes.HasPrefix(k, fromAll)
		return false
	}); err != nil {
		return err
	}
	if !rest {
		if err := tx.DeleteExecution(from); err != nil {
			return err
		}
	}
	return updateRecord(tx, to, moved, "")
}

// updateRecord folds new spans into the execution's record: its time span,
// its name (the root span's), and failed when a root span failed.
func updateRecord(tx *store.Tx, exec string, fresh []*Span, source string) error {
	x := history.Execution{ID: exec, Imported: ImportedFormat, Source: source, Status: history.StatusCompleted}
	if rec := tx.Execution(exec); rec != nil {
		old, err := history.DecodeExecution(rec)
		if err != nil {
			return fmt.Errorf("execution %s: %w", exec, err)
		}
		if old.Imported == "" {
			return fmt.Errorf("execution %s exists and was not imported", exec)
		}
		x = old
		if source != "" && !strings.Contains(x.Source, source) {
			x.Source += ", " + source
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Start < fresh[j].Start })
	for _, s := range fresh {
		start, end := time.Unix(0, s.Start).UTC(), time.Unix(0, s.End).UTC()
		if x.Started.IsZero() || start.Before(x.Started) {
			x.Started = start
		}
		if end.After(x.Ended) {
			x.Ended = end
		}
		if s.ParentID == "" {
			x.Runs++ // one run per trace: its root span
			if x.Scenario == "" || strings.HasPrefix(x.Scenario, "(") {
				x.Scenario = s.Name
			}
			if s.Status == "error" {
				x.Status = history.StatusFailed
				x.Error = s.ErrorText()
			}
		}
		if x.Scenario == "" {
			x.Scenario = "(" + firstNonEmpty(s.Service, s.Scope, "spans") + ")"
		}
	}
	// An imported execution was last updated when its last span ended,
	// not when it was imported: lists show how long it took.
	x.Updated = x.Ended
	return history.Put(tx, x)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// Load returns an imported execution's spans, ordered by start time then
// span id.
func Load(tx *store.Tx, exec string) ([]Span, error) {
	prefix := spanKey(exec, "", "")
	var spans []Span
	var bad error
	err := tx.Scan(store.OTLPSpans, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		var s Span
		if err := json.Unmarshal(v, &s); err != nil {
			bad = fmt.Errorf("execution %s: stored span %x does not decode: %w", exec, k[len(prefix):], err)
			return false
		}
		spans = append(spans, s)
		return true
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	SortSpans(spans)
	return spans, nil
}

// SortSpans orders spans by start time, then end time, then span id.
func SortSpans(spans []Span) {
	sort.SliceStable(spans, func(i, j int) bool {
		a, b := &spans[i], &spans[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End // a parent before a child that starts with it
		}
		return a.SpanID < b.SpanID
	})
}
