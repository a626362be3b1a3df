package engine_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// The runtime channel's Unix socket, which the host's workers use: beside
// the database, mode 0600, answering a run's requests with the same API and
// token as TCP (the same 401 for a missing or wrong token), and gone when
// the host closes.
func TestRuntimeSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(dir, "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS)})
	if err != nil {
		t.Fatal(err)
	}
	sock := h.Runtime().Socket()
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
	ch := rtchan.NewClient(sock, time.Minute)
	defer ch.Close()
	overHTTP := func(method, path, token string) (int, string) {
		req, err := http.NewRequest(method, h.Runtime().URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	overChannel := func(method, path, token string) (int, string) {
		a, err := ch.Call(context.Background(), rtchan.Request{Method: method, Path: path, Token: token, Run: "1"})
		if err != nil {
			t.Fatal(err)
		}
		return a.Status, string(a.Body)
	}
	token := engine.RuntimeToken(h)
	for _, c := range []struct {
		method, path, token string
		status              int
	}{
		{http.MethodGet, "/v1/executions/exec_none/plan", "", http.StatusUnauthorized},
		{http.MethodGet, "/v1/executions/exec_none/plan", "wrong", http.StatusUnauthorized},
		{http.MethodPost, "/v1/executions/exec_none/events", "wrong", http.StatusUnauthorized},
		{http.MethodGet, "/v1/executions/exec_none/plan", token, http.StatusConflict}, // no worker runs it
	} {
		hs, hb := overHTTP(c.method, c.path, c.token)
		cs, cb := overChannel(c.method, c.path, c.token)
		if hs != c.status || cs != hs || cb != hb {
			t.Errorf("%s %s (token %q): HTTP %d %q, channel %d %q; want both %d, alike", c.method, c.path, c.token, hs, hb, cs, cb, c.status)
		}
	}
	// The channel serves only a run's requests: the wait for the next run
	// and the control API stay on HTTP.
	for _, path := range []string{"/v1/workers/next", "/v1/control/state"} {
		if cs, cb := overChannel(http.MethodPost, path, token); cs != http.StatusNotFound {
			t.Errorf("POST %s over the channel: %d %q, want 404", path, cs, cb)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("runtime socket left after Close: %v", err)
	}
	if _, err := ch.Call(context.Background(), rtchan.Request{Method: http.MethodGet, Path: "/v1/executions/x/plan"}); err == nil {
		t.Error("a call after the host closed: no error")
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
	if h.Runtime().Socket() != stale {
		t.Errorf("runtime socket %q over a stale one, want %q", h.Runtime().Socket(), stale)
	}

	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	h2 := openHostAt(t, filepath.Join(long, "retrylab.db"), nil)
	if h2.Runtime().Socket() != "" {
		t.Errorf("runtime socket %q, want none", h2.Runtime().Socket())
	}
	wantStatus(t, start(t, h2, "one-send"), history.StatusCompleted, 0)
	// And a worker through the socket, as every test's workers.
	wantStatus(t, start(t, h, "one-send"), history.StatusCompleted, 0)
}
