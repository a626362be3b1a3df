package otlp

import (
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

func TestRealADKWeather(t *testing.T) {
	spans := readReal(t, "adk-S2.json")
	if len(spans) != 10 {
		t.Fatalf("got %d spans, want 10", len(spans))
	}
	evs := Events(spans)
	for _, e := range evs {
		t.Logf("%d %s %s call=%s tool=%s args=%s outcome=%s ref=%s turn=%d text=%q", e.Seq, e.Time.Format("15:04:05.000000"), e.Kind, e.Call, e.Tool, e.Args, e.Outcome, e.Ref, e.Turn, e.Text)
	}
	var tools []string
	for _, e := range evs {
		if e.Kind == trace.CallScheduled {
			tools = append(tools, e.Tool+string(e.Args))
		}
	}
	if len(tools) != 2 || tools[0] != `get_weather{"city": "Paris"}` || tools[1] != `get_time{"city": "Paris"}` {
		t.Errorf("calls %q", tools)
	}
}
