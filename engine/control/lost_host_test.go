package control_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
)

// A host that goes away under an attached command is said in words, not as
// the dial error ("connection refused") the next call meets.
func TestLostHostIsSaidInWords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h, err := control.Open(engine.Config{DBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid := c.HostPID()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Outbox()
	var lost *control.LostHostError
	want := fmt.Sprintf("the host of %s (pid %d) is gone: run the command again", path, pid)
	if !errors.As(err, &lost) || err.Error() != want {
		t.Fatalf("a call after the host closed: %v, want %q", err, want)
	}
}
