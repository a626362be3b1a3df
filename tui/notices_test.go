package tui

import (
	"slices"
	"testing"
	"time"

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

// While notices never stop (a receiver storing spans, a room taking its
// participants' runs), the window doubles up to MaxNoticeWindow, so a
// steady stream costs a few refreshes a second, not one a frame; after a
// quiet wait it is one frame again, and a negative window stays as asked.
func TestNoticeWindowGrowsWithAStream(t *testing.T) {
	t.Parallel()
	src := &chanSource{snapshot: record(t, []string{"naive", "run"}), ch: make(chan notice.Notice, 8)}
	m := New(Options{Source: src, Now: fixedNow})
	t.Cleanup(m.Close)
	var windows []time.Duration
	for range 5 {
		src.ch <- notice.Notice{Execution: "a"} // already waiting: a stream
		m.Update(m.waitNotices()())
		windows = append(windows, m.feed.cur)
	}
	want := []time.Duration{32 * time.Millisecond, 64 * time.Millisecond, MaxNoticeWindow, MaxNoticeWindow, MaxNoticeWindow}
	if !slices.Equal(windows, want) {
		t.Fatalf("windows during a stream: %v, want %v", windows, want)
	}
	m.feed.grow(false)
	if m.feed.cur != DefaultNoticeWindow {
		t.Errorf("after a quiet wait: %v, want %v", m.feed.cur, DefaultNoticeWindow)
	}
	neg := noticeFeed{window: -1, cur: -1}
	neg.grow(true)
	if neg.cur != -1 {
		t.Errorf("a negative window grew: %v", neg.cur)
	}
}
