package cli

import (
	"fmt"
	"strings"
	"time"
)

// inOrder prints a history's times relative to its start in the order the
// history is listed (the source's sequence), never going backwards: a
// line stamped before the line above it (a Temporal signal stamped before
// the workflow task that saw it, a call scheduled before the attempts of
// the call above) shows the time of the line above, and its own stamp
// after the line, "(stamped +0.023s)".
type inOrder struct {
	start, shown time.Time
}

// at is the time column for a line stamped tm, and what to add at the
// line's end: nothing when tm is in order, else the stamp.
func (c *inOrder) at(tm time.Time) (column, stamp string) {
	if c.shown.IsZero() || !tm.Before(c.shown) {
		c.shown = tm
		return c.rel(tm), ""
	}
	return c.rel(c.shown), fmt.Sprintf("  (stamped %s)", strings.TrimSpace(c.rel(tm)))
}

// rel is tm as seconds after the start, "+0.029s" in a column of 9.
func (c *inOrder) rel(tm time.Time) string {
	return fmt.Sprintf("%+8.3fs", tm.Sub(c.start).Seconds())
}
