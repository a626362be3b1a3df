package narrate

import (
	"fmt"
	"time"

	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/dur"
)

// The words of a move of the world clock and of the keys it expired, one
// table for every reader: show, the handout, the explorer's trace and
// detail.

// ClockMoved says a move of the world clock: "world clock +25h · now +50h".
func ClockMoved(by, offset time.Duration) string {
	return fmt.Sprintf("world clock +%s · now +%s", hours(by), hours(offset))
}

// KeyExpired says a key the move expired: "key ik_… expired (step-4,
// kept 24h)".
func KeyExpired(key, call string, retention time.Duration) string {
	s := "key " + key + " expired"
	switch {
	case call != "" && retention > 0:
		s += fmt.Sprintf(" (%s, kept %s)", call, hours(retention))
	case call != "":
		s += " (" + call + ")"
	}
	return s
}

// ClockNote is a ClockMoved or KeyExpired note's words, its glyph first:
// "⏰ world clock +25h · now +25h", "⏰ key ik_… expired (step-4, kept
// 24h)"; "" for any other note.
func ClockNote(n *trace.Note) string {
	switch n.Kind {
	case trace.ClockMoved:
		return trace.MarkClock.Glyph() + " " + ClockMoved(n.Duration, n.Offset)
	case trace.KeyExpired:
		return trace.MarkClock.Glyph() + " " + KeyExpired(n.Key, n.Call, n.Duration)
	}
	return ""
}

// Paced says slow motion's wait before an attempt: "slow motion: 2s
// before attempt 2".
func Paced(wait time.Duration, attempt int) string {
	return fmt.Sprintf("slow motion: %s before attempt %d", dur.Text(wait), attempt)
}

// ClockLesson is what a clock move means for a late retry, as the detail
// and show say under it.
const ClockLesson = "keys stored longer ago than their retention (by the providers' clock) are forgotten: a retry with one executes again"

// hours is a clock offset as people write it, to the minute: 25h, 1h30m.
func hours(d time.Duration) string {
	d = d.Round(time.Minute)
	if d == 0 {
		return "0h"
	}
	return dur.Text(d)
}
