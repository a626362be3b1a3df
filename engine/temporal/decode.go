// Package temporal imports Temporal workflow histories into retrylab: it
// decodes the history JSON users download (the temporal CLI's and the Web
// UI's shapes) with go.temporal.io/api's own JSON codec, keeps the events
// in a bucket of its own, and translates them into the fold's input events
// (engine/trace): a workflow is an execution (a continue-as-new chain is
// one execution, each run a run), a workflow task is a turn, an activity is
// a tool call, and each ActivityTaskStarted is the one attempt Temporal
// kept: attempts before it are shown as not kept, with the last failure.
//
// This package depends on the api module only (protobuf messages and their
// JSON codec), never on the Temporal SDK or server.
package temporal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// Shape is the layout of a history JSON file.
type Shape string

// The shapes Decode reads.
const (
	// ShapeCLI is `temporal workflow show --output json`, and the SDKs'
	// history files: {"events": [...]}, EVENT_TYPE_* enum names.
	ShapeCLI Shape = "Temporal history JSON"
	// ShapeUI is the Web UI's (and the HTTP API's) download: the
	// GetWorkflowExecutionHistory response, {"history": {"events": [...]}},
	// short enum names.
	ShapeUI Shape = "Temporal history JSON (Web UI)"
)

// ErrNotHistory is returned by Decode for a JSON document that is not a
// Temporal history.
var ErrNotHistory = errors.New("not a Temporal workflow history (no top-level \"events\" or \"history\")")

// sniffWindow is how much of a file Sniff needs.
const sniffWindow = 64 << 10

// Sniff reports whether the start of a file looks like a Temporal history
// in one of the shapes Decode reads: a JSON object whose first key is
// "events" or "history", or, when another key comes first, one that
// mentions "eventType" and not OTLP's "resourceSpans" early on.
func Sniff(prefix []byte) bool {
	if len(prefix) > sniffWindow {
		prefix = prefix[:sniffWindow]
	}
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok {
	case "events", "history":
		return true
	}
	return bytes.Contains(prefix, []byte(`"eventType"`)) && !bytes.Contains(prefix, []byte(`"resourceSpans"`))
}

// unmarshal is the api's codec: protojson with both enum spellings
// (EVENT_TYPE_ACTIVITY_TASK_STARTED and ActivityTaskStarted) and Temporal's
// payload shorthand. Unknown fields are ignored, as a reader of a newer
// server's history must; an unknown event type is refused by validate.
var unmarshal = temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}

// Decode reads a whole history file in either shape and checks that it is
// one run's complete history so far: events numbered 1, 2, 3, ... from the
// workflow's start, each of a type this version knows, none after the
// workflow closed. A workflow that is still running (no close event) is
// fine; so is a download in newest-first order (the Web UI's, when its
// event list is sorted so), which is read oldest first; and so is an event
// of a type this version does not know when the server marks it
// workerMayIgnore (it is kept, and shown as skipped). A history that starts
// late, has holes or goes backwards is refused, with an error that says
// which event and on which line of the file it starts.
func Decode(data []byte) (*historypb.History, Shape, error) {
	// The codec and encoding/json recurse through nested values (a
	// payload's JSON shorthand nests as deep as its author likes).
	if err := jsonlimit.Check(data); err != nil {
		return nil, "", err
	}
	shape, body, err := split(data)
	if err != nil {
		return nil, shape, err
	}
	h := &historypb.History{}
	if err := unmarshal.Unmarshal(body, h); err != nil {
		if !json.Valid(data) {
			return nil, shape, fmt.Errorf("not valid JSON (cut short?): %w", jsonError(data))
		}
		return nil, shape, fmt.Errorf("not a Temporal history: %s", codecMessage(err))
	}
	evs := h.GetEvents()
	reversed := newestFirst(evs)
	if reversed {
		slices.Reverse(evs)
	}
	// written is where the i-th event (oldest first) is in the file.
	written := func(i int) int {
		if reversed {
			return len(evs) - 1 - i
		}
		return i
	}
	names := func(i int) string { return unknownTypeName(body, written(i)) }
	if i, err := validate(h, names); err != nil {
		if i >= 0 {
			if line := eventLine(data, written(i)); line > 0 {
				err = fmt.Errorf("line %d: %w", line, err)
			}
		}
		return nil, shape, err
	}
	return h, shape, nil
}

// newestFirst says whether a history's events are listed newest first, as
// the Web UI downloads them when its list is sorted so: the first event's
// id is above the last's.
func newestFirst(evs []*historypb.HistoryEvent) bool {
	return len(evs) > 1 && evs[0].GetEventId() > evs[len(evs)-1].GetEventId()
}

// split finds the history in the document: the whole document for the CLI
// shape, the value of "history" for the Web UI's.
func split(data []byte) (Shape, []byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err != nil {
			return "", nil, fmt.Errorf("not JSON: %w", err)
		}
		return "", nil, fmt.Errorf("not a JSON object: %w", ErrNotHistory)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, fmt.Errorf("not valid JSON (cut short?): %w", err)
		}
		switch tok {
		case "events":
			return ShapeCLI, data, nil
		case "history":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return ShapeUI, nil, fmt.Errorf("not valid JSON (cut short?): %w", err)
			}
			if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				return ShapeUI, nil, errors.New("the download holds no history (\"history\": null)")
			}
			return ShapeUI, raw, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", nil, fmt.Errorf("not valid JSON (cut short?): %w", err)
		}
	}
	return "", nil, ErrNotHistory
}

// jsonError is encoding/json's account of what is wrong with data, which
// says where; used only once the api's codec has refused it.
func jsonError(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := min(int(se.Offset), len(data))
		return fmt.Errorf("%s at line %d (byte %d)", se.Error(), 1+bytes.Count(data[:off], []byte{'\n'}), se.Offset)
	}
	if err == nil {
		return errors.New("malformed")
	}
	return err
}

// Validate checks a history fetched from a cluster as Decode checks a
// file: events 1, 2, 3, ... from the workflow's start, each of a known type
// (or one the server marks workerMayIgnore), with its time and attributes,
// none after the workflow closed.
func Validate(h *historypb.History) error {
	_, err := validate(h, nil)
	return err
}

// validate checks h's events, oldest first; names, when not nil, gives the
// i-th event's type as written (the codec drops names it does not know).
// On error it returns the index of the event the error is about, or -1.
func validate(h *historypb.History, names func(i int) string) (int, error) {
	evs := h.GetEvents()
	if len(evs) == 0 {
		return -1, errors.New("the history holds no events")
	}
	var prev int64
	var closed *historypb.HistoryEvent
	for i, ev := range evs {
		id := ev.GetEventId()
		switch {
		case i == 0 && id != 1:
			return i, fmt.Errorf("history cut short: it starts at event %d, not 1 (a page from the middle?)", id)
		case i > 0 && id <= prev:
			return i, fmt.Errorf("events out of order: event %d comes after event %d", id, prev)
		case i > 0 && id != prev+1:
			for _, later := range evs[i+1:] {
				if l := later.GetEventId(); l > prev && l < id {
					return i, fmt.Errorf("events out of order: event %d comes before event %d", id, l)
				}
			}
			if id == prev+2 {
				return i, fmt.Errorf("history cut short: event %d is missing", prev+1)
			}
			return i, fmt.Errorf("history cut short: events %d to %d are missing", prev+1, id-1)
		}
		prev = id
		if closed != nil {
			return i, fmt.Errorf("event %d comes after the workflow closed (event %d, %s): one run's history ends with its close", id, closed.GetEventId(), closed.GetEventType())
		}
		t := ev.GetEventType()
		if Unknown(t) {
			name := fmt.Sprintf("%d", int32(t))
			if names != nil {
				name = names(i)
			}
			if name == noTypeGiven {
				return i, fmt.Errorf("event %d has no event type", id)
			}
			if ev.GetWorkerMayIgnore() {
				// A newer server's event that it says a reader may
				// skip: kept, and shown as skipped.
				continue
			}
			return i, fmt.Errorf("event %d: unknown event type %s (written by a newer Temporal server than this retrylab reads; not marked workerMayIgnore)", id, name)
		}
		if i == 0 && t != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			return i, fmt.Errorf("event 1 is %s, not WorkflowExecutionStarted", t)
		}
		if i > 0 && t == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			return i, fmt.Errorf("event %d starts a second workflow run: one file holds one run's history", id)
		}
		if ev.GetAttributes() == nil {
			return i, fmt.Errorf("event %d (%s) has no attributes", id, t)
		}
		if ev.GetEventTime() == nil {
			return i, fmt.Errorf("event %d (%s) has no eventTime", id, t)
		}
		if closes(t) {
			closed = ev
		}
	}
	return -1, nil
}

// Unknown says whether an event type is one this version does not know
// (a newer server's, or none given).
func Unknown(t enumspb.EventType) bool {
	return t == enumspb.EVENT_TYPE_UNSPECIFIED || enumspb.EventType_name[int32(t)] == ""
}

// closes says whether an event of type t closes its run: nothing may come
// after it in the run's history.
func closes(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// eventLine is the line of the file data on which its i-th event (as
// written) starts, 0 when it cannot be found. It is read only for an
// error, so it walks the document again rather than keep every event's
// offset while decoding.
func eventLine(data []byte, i int) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if !enterEvents(dec, 0) {
		return 0
	}
	for n := 0; dec.More(); n++ {
		if n == i {
			off := int(dec.InputOffset())
			for off < len(data) && (data[off] == ',' || data[off] == ' ' || data[off] == '\t' || data[off] == '\r' || data[off] == '\n') {
				off++
			}
			return 1 + bytes.Count(data[:off], []byte{'\n'})
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return 0
}

// enterEvents moves dec into the events array of a history document (the
// CLI's {"events": [...]} or the Web UI's {"history": {"events": [...]}}),
// just after its '['; depth counts the "history" wrappers entered.
func enterEvents(dec *json.Decoder, depth int) bool {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch {
		case tok == "events":
			tok, err := dec.Token()
			return err == nil && tok == json.Delim('[')
		case tok == "history" && depth == 0:
			return enterEvents(dec, 1)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// unknownTypeName reads the i-th event's eventType as written, for the
// error that refuses it (the codec drops names it does not know).
// noTypeGiven is unknownTypeName's answer for an event without eventType.
const noTypeGiven = "(none given)"

// codecMessage is the JSON codec's error as a user should read it: without
// its package prefix and the codec source line some of its errors end with
// ("(in .../json_unmarshal.go:540)").
func codecMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "temporalproto: ")
	if i := strings.LastIndex(msg, " (in "); i >= 0 && strings.HasSuffix(msg, ")") && strings.Contains(msg[i:], ".go:") {
		msg = msg[:i]
	}
	return msg
}

func unknownTypeName(body []byte, i int) string {
	var doc struct {
		Events []struct {
			EventType json.RawMessage `json:"eventType"`
		} `json:"events"`
	}
	if json.Unmarshal(body, &doc) != nil || i >= len(doc.Events) || len(doc.Events[i].EventType) == 0 {
		return noTypeGiven
	}
	return string(doc.Events[i].EventType)
}
