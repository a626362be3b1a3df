package tui

import (
	"testing"

	"github.com/retrylab/retrylab/engine/notice"
)

// chanSource is a snapshot whose notices the test sends.
type chanSource struct {
	*snapshot
	ch chan notice.Notice
}

func (c *chanSource) Subscribe(int) (<-chan notice.Notice, func()) { return c.ch, func() {} }

// With a negative notice window (a source whose notices come batched, as a
// Temporal cluster's follower sends them) the explorer takes the notices
// waiting, all of them in one refresh, and reports a closed source.
func TestNoticeWindowNegativeTakesWhatWaits(t *testing.T) {
	t.Parallel()
	src := &chanSource{snapshot: record(t, []string{"naive", "run"}), ch: make(chan notice.Notice, 8)}
	m := New(Options{Source: src, Now: fixedNow, NoticeWindow: -1})
	t.Cleanup(m.Close)
	src.ch <- notice.Notice{Execution: "a"}
	src.ch <- notice.Notice{Execution: "b"}
	msg, ok := m.waitNotices()().(noticesMsg)
	if !ok || len(msg.batch) != 2 || msg.closed || msg.batch[0].Execution != "a" || msg.batch[1].Execution != "b" {
		t.Fatalf("waiting notices: %+v", msg)
	}
	src.ch <- notice.Notice{Execution: "c"}
	close(src.ch)
	if msg := m.waitNotices()().(noticesMsg); len(msg.batch) != 1 || !msg.closed {
		t.Fatalf("last notice and close: %+v", msg)
	}
	if m.feed.window >= 0 || New(Options{Source: src.snapshot, Now: fixedNow}).feed.window != DefaultNoticeWindow {
		t.Errorf("windows: %v", m.feed.window)
	}
}
