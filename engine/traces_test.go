package engine_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/store"
)

// failingReader gives some bytes of a file, then fails as a disk would.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// Import, audit and export through an attached client give what they give
// on a database opened alone: the same results, the same errors (a missing
// execution named in the client's words, a read error of the client's file
// met by the host's importer), and the host's subscribers hear of what an
// import created.
func TestClientTracesSameAsLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hosted.db")
	h := openHostAt(t, path, nil)
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db, err := store.Open(filepath.Join(dir, "alone.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local := engine.LocalTraces(db, all.Registry())
	defer local.Close()

	notices, stop := h.Subscribe(1024)
	defer stop()
	file := filepath.Join("..", "fixtures", "otlp", "adk-send-twice.json")
	got, err := c.ImportFile(file, "otlp")
	if err != nil {
		t.Fatalf("import through the host: %v", err)
	}
	want, err := local.ImportFile(file, "otlp")
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "otlp" || got.Summary != want.Summary || !strings.HasPrefix(got.Summary, "OTLP/JSON, ") ||
		strings.Join(got.Executions, ",") != strings.Join(want.Executions, ",") || len(got.Executions) != 1 {
		t.Fatalf("import through the host %+v, alone %+v", got, want)
	}
	exec := got.Executions[0]
	for heard := false; !heard; {
		select {
		case n := <-notices:
			heard = n.Execution == exec
		case <-time.After(10 * time.Second):
			t.Fatalf("the host's subscribers never heard of %s", exec)
		}
	}
	if x, err := h.Execution(exec); err != nil || x.Imported == "" {
		t.Fatalf("%s on the host: %+v %v", exec, x, err)
	}

	// A file whose reading fails half way: the same error, nothing left.
	doc, err := os.ReadFile(filepath.Join("..", "fixtures", "otlp", "genai-semconv.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, total, _ := h.Executions(0, 0)
	_, gotErr := c.ImportStream("standard input", &failingReader{data: doc[:len(doc)/2], err: errors.New("disk on fire")})
	_, wantErr := local.ImportStream("standard input", &failingReader{data: doc[:len(doc)/2], err: errors.New("disk on fire")})
	if gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() || !strings.Contains(gotErr.Error(), "disk on fire") {
		t.Fatalf("a failed read: through the host %v, alone %v", gotErr, wantErr)
	}
	if _, after, _ := h.Executions(0, 0); after != total {
		t.Fatalf("a failed import left executions behind: %d, then %d", total, after)
	}

	// The audit's report, rendered, is the same.
	pats, _ := audit.ParseEffects(audit.DefaultEffects)
	opts := audit.Options{Effects: pats, Window: audit.DefaultWindow}
	report := func(tr engine.Traces) audit.Report {
		t.Helper()
		l, err := tr.Audit(nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		rep, err := l.Collect()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	gotRep, wantRep := report(c), report(local)
	var gotText, wantText bytes.Buffer
	_ = gotRep.Text(&gotText)
	_ = wantRep.Text(&wantText)
	if gotText.String() != wantText.String() || gotRep.Counts.Duplicate != 1 {
		t.Fatalf("audit through the host:\n%s\nalone:\n%s", &gotText, &wantText)
	}
	if _, err := c.Audit([]string{"nope"}, opts); !errors.Is(err, engine.ErrNoExecution) || err.Error() != `no execution "nope" in `+path {
		t.Fatalf("audit of a missing execution: %v", err)
	}

	// An export of the imported execution, named, streams the same bytes.
	export := func(tr engine.Traces) string {
		t.Helper()
		e, err := tr.PlanOTLPExport([]string{exec}, engine.OTLPExportOptions{Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		spans, err := e.Write(&b)
		if err != nil || spans == 0 || e.Executions() != 1 {
			t.Fatalf("export: %d spans of %d executions, %v", spans, e.Executions(), err)
		}
		return b.String()
	}
	if g, w := export(c), export(local); g != w {
		t.Fatalf("export through the host:\n%s\nalone:\n%s", g, w)
	}
	if _, err := c.PlanOTLPExport([]string{"nope"}, engine.OTLPExportOptions{Version: "test"}); !errors.Is(err, engine.ErrNoExecution) || err.Error() != `no execution "nope" in `+path {
		t.Fatalf("export of a missing execution: %v", err)
	}
}
