package engine_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/fixtures"
)

// The runtime API's Unix socket, which the host's workers use: beside the
// database, mode 0600, answering with the same API and token as TCP, and
// gone when the host closes.
func TestRuntimeSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(dir, "retrylab.db"), Scenarios: fixtures.FS})
	if err != nil {
		t.Fatal(err)
	}
	sock := h.RuntimeSocket()
	if want := filepath.Join(dir, ".retrylab.db.runtime.sock"); sock != want {
		t.Fatalf("runtime socket %q, want %q", sock, want)
	}
	info, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&os.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Errorf("runtime socket mode %v, want a socket with 0600", info.Mode())
	}
	hc := &http.Client{Transport: agent.RuntimeTransport(sock)}
	// The URL's host is TCP's; the transport dials the socket whatever it is.
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/v1/executions/exec_none/plan", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s, want 401", resp.StatusCode, body)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("runtime socket left after Close: %v", err)
	}
}

// A socket file left by a host killed with SIGKILL is replaced; a host
// whose socket path is too long for a Unix socket still serves its workers
// over TCP.
func TestRuntimeSocketStaleAndTooLong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := filepath.Join(dir, ".retrylab.db.runtime.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	h := openHostAt(t, filepath.Join(dir, "retrylab.db"), nil)
	if h.RuntimeSocket() != stale {
		t.Errorf("runtime socket %q over a stale one, want %q", h.RuntimeSocket(), stale)
	}

	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	h2 := openHostAt(t, filepath.Join(long, "retrylab.db"), nil)
	if h2.RuntimeSocket() != "" {
		t.Errorf("runtime socket %q, want none", h2.RuntimeSocket())
	}
	wantStatus(t, start(t, h2, "one-send"), history.StatusCompleted, 0)
	// And a worker through the socket, as every test's workers.
	wantStatus(t, start(t, h, "one-send"), history.StatusCompleted, 0)
}
