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
// workflow's start, each of a type this version knows. A workflow that is
// still running (no close event) is fine; a history that starts late, has
// holes or goes backwards is refused, with an error that says which event.
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
	if err := validate(h, body); err != nil {
		return nil, shape, err
	}
	return h, shape, nil
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
		return fmt.Errorf("%s at byte %d", se.Error(), se.Offset)
	}
	if err == nil {
		return errors.New("malformed")
	}
	return err
}

// Validate checks a history fetched from a cluster as Decode checks a
// file: events 1, 2, 3, ... from the workflow's start, each of a known type,
// with its time and attributes.
func Validate(h *historypb.History) error { return validate(h, nil) }

func validate(h *historypb.History, body []byte) error {
	evs := h.GetEvents()
	if len(evs) == 0 {
		return errors.New("the history holds no events")
	}
	var prev int64
	for i, ev := range evs {
		id := ev.GetEventId()
		switch {
		case i == 0 && id != 1:
			return fmt.Errorf("history cut short: it starts at event %d, not 1 (a page from the middle?)", id)
		case i > 0 && id <= prev:
			return fmt.Errorf("events out of order: event %d comes after event %d", id, prev)
		case i > 0 && id != prev+1:
			for _, later := range evs[i+1:] {
				if l := later.GetEventId(); l > prev && l < id {
					return fmt.Errorf("events out of order: event %d comes before event %d", id, l)
				}
			}
			if id == prev+2 {
				return fmt.Errorf("history cut short: event %d is missing", prev+1)
			}
			return fmt.Errorf("history cut short: events %d to %d are missing", prev+1, id-1)
		}
		prev = id
		t := ev.GetEventType()
		if t == enumspb.EVENT_TYPE_UNSPECIFIED || enumspb.EventType_name[int32(t)] == "" {
			name := fmt.Sprintf("%d", int32(t))
			if body != nil {
				name = unknownTypeName(body, i)
			}
			if name == noTypeGiven {
				return fmt.Errorf("event %d has no event type", id)
			}
			return fmt.Errorf("event %d: unknown event type %s (written by a newer Temporal server than this retrylab reads)", id, name)
		}
		if i == 0 && t != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			return fmt.Errorf("event 1 is %s, not WorkflowExecutionStarted", t)
		}
		if i > 0 && t == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			return fmt.Errorf("event %d starts a second workflow run: one file holds one run's history", id)
		}
		if ev.GetAttributes() == nil {
			return fmt.Errorf("event %d (%s) has no attributes", id, t)
		}
		if ev.GetEventTime() == nil {
			return fmt.Errorf("event %d (%s) has no eventTime", id, t)
		}
	}
	return nil
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
