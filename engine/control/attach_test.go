package control_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/fixtures"
)

// A second process finds the running host through the file beside the
// database and drives it: its runs are recorded by the one host and show
// up in the host's own subscribers.
func TestClientAttachesToRunningHost(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h := openHostAt(t, path, nil)
	info, err := os.Stat(control.HostFile(path))
	if err != nil {
		t.Fatalf("host file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("host file mode %v, want 0600 (it holds the token)", info.Mode().Perm())
	}
	c, err := control.Dial(path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if c.MailURL() != h.MailURL() || c.DBPath() == "" {
		t.Fatalf("client sees mail %q db %q; host mail %q", c.MailURL(), c.DBPath(), h.MailURL())
	}

	hostNotices, stopHost := h.Subscribe(1024)
	defer stopHost()
	clientNotices, stopClient := c.Subscribe(1024)
	defer stopClient()

	run, err := c.Start("crash", engine.RunOptions{})
	if err != nil {
		t.Fatalf("start through the client: %v", err)
	}
	select {
	case <-run.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("remote run never ended")
	}
	if res := run.Result(); res.Status != history.StatusKilled || res.ExitCode != engine.ExitKilled {
		t.Fatalf("remote run ended %+v, want killed with 137", res)
	}
	sawCrash := func(ch <-chan notice.Notice) bool {
		deadline := time.After(5 * time.Second)
		for {
			select {
			case n := <-ch:
				if n.Event != nil && n.Event.Type == history.WorkerCrashed && n.Execution == "exec_9F1Z" {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !sawCrash(hostNotices) {
		t.Fatal("the host's own subscriber (the explorer) did not see the attached run")
	}
	if !sawCrash(clientNotices) {
		t.Fatal("the client's notice stream did not carry the crash")
	}

	// Reads and actions go through the same host.
	msgs, err := c.MessagesFor("exec_9F1Z")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("messages through the client: %v %v", msgs, err)
	}
	c.Arm(fault.TimeoutAfterEffect)
	if armed := h.Armed(); len(armed) != 1 || armed[0] != fault.TimeoutAfterEffect {
		t.Fatalf("armed on the host: %v", armed)
	}
	c.Disarm()
	resumed, err := c.Resume("")
	if err != nil {
		t.Fatalf("resume through the client: %v", err)
	}
	<-resumed.Done()
	if res := resumed.Result(); res.Status != history.StatusCompleted {
		t.Fatalf("resumed run: %+v", res)
	}
	if _, err := c.Execution("exec_NOPE"); !errors.Is(err, engine.ErrNoExecution) {
		t.Fatalf("unknown execution through the client: %v, want ErrNoExecution", err)
	}
}

func TestDialWithoutHost(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	if _, err := control.Dial(path); !errors.Is(err, control.ErrNoHost) {
		t.Fatalf("dial with no host: %v", err)
	}
	// A file left by a host that died (a pid that is not running).
	if err := os.WriteFile(control.HostFile(path), []byte(`{"pid":2147483646,"url":"http://127.0.0.1:1","token":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := control.Dial(path); !errors.Is(err, control.ErrNoHost) {
		t.Fatalf("dial with a stale host file: %v", err)
	}
}

func TestHostFileRemovedOnClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h, err := control.Open(engine.Config{DBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(control.HostFile(path)); !os.IsNotExist(err) {
		t.Fatalf("host file after close: %v", err)
	}
}

// A host waits, in CloseWhenIdle, for an attached process that holds it, and
// closes once that process lets go.
func TestCloseWhenIdleWaitsForAHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h, err := control.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS})
	if err != nil {
		t.Fatal(err)
	}
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(); err != nil {
		t.Fatalf("hold: %v", err)
	}
	told := make(chan int, 1)
	closed := make(chan error, 1)
	go func() {
		closed <- h.CloseWhenIdle(context.Background(), func(running []string, holds int) { told <- holds })
	}()
	select {
	case n := <-told:
		if n != 1 {
			t.Errorf("waiting for %d holds, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CloseWhenIdle never said what it waits for")
	}
	select {
	case err := <-closed:
		t.Fatalf("closed (%v) while a client held it", err)
	case <-time.After(100 * time.Millisecond):
	}
	// The held client still works.
	if _, err := c.Outbox(); err != nil {
		t.Fatalf("outbox through the held host: %v", err)
	}
	c.Close()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CloseWhenIdle did not close after the hold ended")
	}
	if _, err := os.Stat(control.HostFile(path)); !os.IsNotExist(err) {
		t.Errorf("host file left behind: %v", err)
	}
}
