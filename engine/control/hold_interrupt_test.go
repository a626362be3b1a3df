package control_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/fixtures"
)

// A wait that its context cuts short closes the host at once and says it
// was cut short (the CLI exits 130 then); an idle host closes without error.
func TestCloseWhenIdleCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retrylab.db")
	h, err := control.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS})
	if err != nil {
		t.Fatal(err)
	}
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hold(); err != nil {
		t.Fatalf("hold: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = h.CloseWhenIdle(ctx, func([]string, int) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CloseWhenIdle cut short: %v, want context.Canceled", err)
	}
	if _, err := c.Outbox(); err == nil {
		t.Error("the host still answers after CloseWhenIdle was cut short")
	}

	h, err = control.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if err := h.CloseWhenIdle(cancelled, nil); err != nil {
		t.Errorf("CloseWhenIdle on an idle host: %v, want nil", err)
	}
}
