package otlp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/trace"
)

// realTraces is where the shared recordings of real tools live (beside the
// repository, or where RETRYLAB_REAL_TRACES says); tests that read them
// skip when the folder is absent.
func realTraces() string {
	if d := os.Getenv("RETRYLAB_REAL_TRACES"); d != "" {
		return d
	}
	return "../../../shared/real-traces"
}

func readReal(t *testing.T, name string) []Span {
	t.Helper()
	path := filepath.Join(realTraces(), name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not here: %v", path, err)
	}
	var spans []Span
	if _, err := ReadFile(path, func(b Batch) error { spans = append(spans, b.Spans...); return nil }); err != nil {
		t.Fatal(err)
	}
	return spans
}

// truth is the part of an agentevals truth file the model must agree with.
type truth struct {
	Turns []struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Args      json.RawMessage `json:"args"`
			Result    json.RawMessage `json:"result"`
			IsError   bool            `json:"is_error"`
			ErrorType *string         `json:"error_type"`
		} `json:"tool_calls"`
	} `json:"turns"`
}

// Google ADK's recordings (OTLP/JSON with log records in the same
// document) give the turns, and in each the tool calls, their truth files
// list.
func TestRealADKAgainstTruth(t *testing.T) {
	for _, name := range []string{"adk-S2", "adk-S6a"} {
		t.Run(name, func(t *testing.T) {
			spans := readReal(t, name+".json")
			raw, err := os.ReadFile(filepath.Join(realTraces(), name+".truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			var tr truth
			if err := json.Unmarshal(raw, &tr); err != nil {
				t.Fatal(err)
			}
			folded := trace.Fold(name, Events(spans))
			if len(folded.Anomalies) > 0 {
				t.Errorf("anomalies %+v", folded.Anomalies)
			}
			// The turns as the truth counts them (an agent's invocation, its
			// tool loop included), each with its calls.
			var turns [][]*trace.Call
			for _, r := range folded.Runs {
				for _, n := range r.Nodes {
					if tn, ok := n.(*trace.Turn); ok {
						var calls []*trace.Call
						for _, c := range tn.Nodes {
							calls = append(calls, c.(*trace.Call))
						}
						turns = append(turns, calls)
					}
				}
			}
			if len(turns) != len(tr.Turns) {
				t.Fatalf("%d turns, truth has %d", len(turns), len(tr.Turns))
			}
			for ti, turn := range tr.Turns {
				calls := turns[ti]
				if len(calls) != len(turn.ToolCalls) {
					t.Errorf("turn %d: %d calls, truth has %d", ti+1, len(calls), len(turn.ToolCalls))
					continue
				}
				for i, want := range turn.ToolCalls {
					c := calls[i]
					if c.Tool != want.Name || string(c.Args) != string(canonical(want.Args)) {
						t.Errorf("turn %d call %d: %s %s, want %s %s", ti+1, i+1, c.Tool, c.Args, want.Name, canonical(want.Args))
					}
					a := c.Attempts[len(c.Attempts)-1]
					if failed := a.Outcome != trace.OutcomeOK; failed != want.IsError {
						t.Errorf("turn %d call %d: outcome %s, truth is_error %v", ti+1, i+1, a.Outcome, want.IsError)
					}
					if want.IsError && want.ErrorType != nil && a.Error == "" {
						t.Errorf("turn %d call %d: no error text, truth says %s", ti+1, i+1, *want.ErrorType)
					}
					if !want.IsError && string(canonical(a.Response.Body)) != string(canonical(want.Result)) {
						t.Errorf("turn %d call %d: result %s, want %s", ti+1, i+1, a.Response.Body, want.Result)
					}
					if (want.Result == nil || string(want.Result) == "null") && a.Response != nil && len(a.Response.Body) > 0 {
						t.Errorf("turn %d call %d: result %s, want none (the truth has null)", ti+1, i+1, a.Response.Body)
					}
				}
			}
		})
	}
}
