package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine"
)

// The executions list is by last activity: an execution run again (here
// from another terminal, the host's own API) goes to the top, and a
// selection on it follows it there, its trace still shown.
func TestAnExecutionRunAgainGoesFirst(t *testing.T) {
	t.Parallel()
	h := openHost(t, filepath.Join(t.TempDir(), "activity.db"))
	defer h.Close()
	run := func(name string, opts engine.RunOptions) string {
		t.Helper()
		r, err := h.Start(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		return r.Execution
	}
	naive := run("naive", engine.RunOptions{})
	run("safe", engine.RunOptions{})
	run("one-send", engine.RunOptions{})

	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	for _, k := range []string{"shift+tab", "j", "j"} {
		r.send(keyMsg(k))
	}
	r.settle(t)
	if m.selID != naive {
		t.Fatalf("selected %q, want %s (the oldest):\n%s", m.selID, naive, ansi.Strip(m.View()))
	}
	if again := run("naive", engine.RunOptions{Restart: true}); again != naive {
		t.Fatalf("naive ran again as %s, not %s", again, naive)
	}
	list, _, err := h.Executions(0, 0)
	if err != nil || len(list) != 3 || list[0].ID != naive {
		t.Fatalf("the host's list after naive ran again: %+v, %v; want %s first", list, err, naive)
	}
	r.runUntil(t, naive+" first in the list", func() bool {
		return len(m.execs.items) == 3 && m.execs.items[0].x.ID == naive && m.execs.items[0].x.Runs == 2
	})
	r.settle(t)
	view := ansi.Strip(m.View())
	if _, sel, _ := m.execs.Window(); m.selID != naive || sel != 0 || !strings.Contains(view, "Trace  "+naive) {
		t.Errorf("the selection did not follow %s to the top (selected %q at %d):\n%s", naive, m.selID, sel, view)
	}
}
