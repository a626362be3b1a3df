package otlp_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/internal/tracetest"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

const refusedDepth = "JSON nested deeper than 100 levels (at byte "

// TestReceiverRefusesBombs posts the million-level nesting bomb (28 MB,
// and gzipped) to a receiver on loopback: a 400 of one line, nothing
// stored, and the receiver still takes a good span after it.
func TestReceiverRefusesBombs(t *testing.T) {
	t.Parallel()
	srv, db, stored := receiver(t, 0)
	doc := tracetest.NestingBomb(1_000_000)
	gzDoc := gzipped(doc)
	for _, c := range []struct {
		name, enc string
		body      []byte
	}{{"plain", "", doc}, {"gzip", "gzip", gzDoc}} {
		code, body := post(t, srv.URL, "application/json", c.enc, c.body)
		if code != 400 || !strings.Contains(body, refusedDepth) || strings.Count(body, "\n") != 1 {
			t.Errorf("%s bomb (%d bytes): %d %q, want 400 naming the depth", c.name, len(c.body), code, body)
		}
	}
	if len(*stored) != 0 || len(folded(t, db)) != 0 {
		t.Fatalf("a refused bomb stored %v", *stored)
	}
	// Wide, not deep: a 20 MB attribute is kept, cut to its first 4 KiB.
	if code, body := post(t, srv.URL, "application/json", "", tracetest.SizeBomb(20<<20)); code != 200 || body != "{}" {
		t.Fatalf("size bomb: %d %s", code, body)
	}
	if n := len(folded(t, db)); n != 1 {
		t.Fatalf("%d executions after the size bomb, want 1", n)
	}
}

// TestReceiverRefusesTooManySpans: a request of more spans than
// jsonlimit.MaxRequestSpans is refused whole.
func TestReceiverRefusesTooManySpans(t *testing.T) {
	srv, db, _ := receiver(t, 0)
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	spans.EnsureCapacity(jsonlimit.MaxRequestSpans + 1)
	for i := range jsonlimit.MaxRequestSpans + 1 {
		s := spans.AppendEmpty()
		s.SetTraceID([16]byte{1, byte(i >> 16), byte(i >> 8), byte(i)})
		s.SetSpanID([8]byte{2, byte(i >> 16), byte(i >> 8), byte(i)})
	}
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	code, answer := post(t, srv.URL, "application/x-protobuf", "", body)
	if code != 400 || !strings.Contains(answer, "100001 spans in one request, more than 100000") {
		t.Fatalf("%d spans: %d %q", jsonlimit.MaxRequestSpans+1, code, answer)
	}
	if n := len(folded(t, db)); n != 0 {
		t.Fatalf("%d executions stored", n)
	}
}

// TestImportRefusesBombs imports the nesting bomb as a document, as a
// line of JSON Lines and gzipped: one line of error naming the file (and
// the line), and nothing stored.
func TestImportRefusesBombs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := tracetest.NestingBomb(1_000_000)
	good, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		t.Fatal(err)
	}
	gzDoc := gzipped(doc)
	files := map[string][]byte{
		"bomb.json":    doc,
		"bomb.jsonl":   append(append(bytes.Join(bytes.Fields(good), nil), '\n'), tracetest.NestingBomb(5_000)...),
		"bomb.json.gz": gzDoc,
	}
	db, err := store.Open(filepath.Join(dir, "i.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := otlp.ImportFile(db, path)
		want := path + ": " + refusedDepth
		if name == "bomb.jsonl" {
			want = path + ": line 2: " + refusedDepth
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("import %s: %v, want %q…", name, err, want)
		}
	}
	if n := len(folded(t, db)); n != 0 {
		t.Fatalf("%d executions stored from refused files", n)
	}
}
