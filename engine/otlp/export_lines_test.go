package otlp

import (
	"bytes"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/tracetest"
)

// JSON Lines hold the spans of the document, in its order, a batch a
// line, each line a document pdata reads with the document's envelope.
func TestExportJSONLinesAreTheDocumentInBatches(t *testing.T) {
	evs, _, _ := tracetest.Interleaved()
	id := "exec_lines"
	write := func(lines bool) ([]byte, int) {
		t.Helper()
		var buf bytes.Buffer
		jw := NewJSONWriter(&buf, "v9")
		if lines {
			jw = NewJSONLinesWriter(&buf, "v9")
			jw.batch = 3 // several lines of a small history
		}
		if err := jw.History(id, func(fn func(history.Event) error) error {
			for _, ev := range evs {
				if err := fn(ev); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := jw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), jw.Spans()
	}
	doc, n := write(false)
	jsonl, m := write(true)
	if n != m || n <= 3 {
		t.Fatalf("%d spans in the document, %d in the lines; want the same, more than a batch", n, m)
	}
	var u ptrace.JSONUnmarshaler
	whole, err := u.UnmarshalTraces(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := whole.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	if !bytes.HasSuffix(jsonl, []byte("}\n")) {
		t.Errorf("the lines do not end with a newline: %q", jsonl[max(0, len(jsonl)-20):])
	}
	lines := bytes.Split(bytes.TrimSuffix(jsonl, []byte("\n")), []byte("\n"))
	if len(lines) != (n+2)/3 {
		t.Fatalf("%d lines of %d spans in batches of 3", len(lines), n)
	}
	k := 0
	for i, line := range lines {
		td, err := u.UnmarshalTraces(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		rs := td.ResourceSpans().At(0)
		if got, want := rs.Resource().Attributes().AsRaw(), whole.ResourceSpans().At(0).Resource().Attributes().AsRaw(); len(got) != len(want) {
			t.Errorf("line %d: resource %v, the document's %v", i+1, got, want)
		}
		spans := rs.ScopeSpans().At(0).Spans()
		if spans.Len() > 3 || (i < len(lines)-1 && spans.Len() != 3) {
			t.Errorf("line %d holds %d spans", i+1, spans.Len())
		}
		for j := 0; j < spans.Len(); j, k = j+1, k+1 {
			if spans.At(j).SpanID() != want.At(k).SpanID() {
				t.Fatalf("span %d is %s, the document's %s", k, spans.At(j).SpanID(), want.At(k).SpanID())
			}
		}
	}
	var empty bytes.Buffer
	if err := NewJSONLinesWriter(&empty, "v9").Close(); err != nil || empty.Len() != 0 {
		t.Errorf("no spans as JSON Lines wrote %q, %v; want nothing", empty.String(), err)
	}
}
