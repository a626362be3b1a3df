package control

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/notice"
)

// An import whose client went away after sending the whole file (killed
// before the answer) is committed, and the host says so to whoever
// watches: a notice the explorer shows and serve prints.
func TestOrphanedImportIsSaid(t *testing.T) {
	t.Parallel()
	s, body, notices := framedImport(t)

	// The client's connection closed: the request's context is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/control/import?name=genai.json", body)
	s.serveImport(httptest.NewRecorder(), req)

	xs, _, err := s.Executions(0, 0)
	if err != nil || len(xs) == 0 {
		t.Fatalf("the import was not committed: %d executions, %v", len(xs), err)
	}
	want := "the import of genai.json was committed (1 execution) after the retrylab that sent it went away: its command said nothing"
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-notices:
			if n.Host == "" {
				continue
			}
			if n.Host != want || strings.Contains(n.Host, "\n") {
				t.Fatalf("host notice %q, want %q", n.Host, want)
			}
			return
		case <-deadline:
			t.Fatal("no host notice of the orphaned import")
		}
	}
}

// A client that stays for the answer is told by it, and the host says
// nothing more.
func TestAnsweredImportIsNotSaid(t *testing.T) {
	t.Parallel()
	s, body, notices := framedImport(t)
	rec := httptest.NewRecorder()
	s.serveImport(rec, httptest.NewRequest("POST", "/v1/control/import?name=genai.json", body))
	if rec.Code != 200 {
		t.Fatalf("import: %d %s", rec.Code, rec.Body)
	}
	for {
		select {
		case n := <-notices:
			if n.Host != "" {
				t.Fatalf("host notice %q for an import whose client had its answer", n.Host)
			}
		default:
			return
		}
	}
}

// framedImport is a host serving the control API, a fixture's import
// request body as the client frames it, and the host's notices from now on.
func framedImport(t *testing.T) (*Server, *bytes.Buffer, <-chan notice.Notice) {
	t.Helper()
	s, err := Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: fstest.MapFS{}, Imports: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	doc, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if err := writeFrames(&body, bytes.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	notices, stop := s.Subscribe(64)
	t.Cleanup(stop)
	return s, &body, notices
}
