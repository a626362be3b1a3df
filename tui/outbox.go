package tui

import (
	"fmt"
	"strings"

	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/world"
)

// outboxLine is one row of the outbox pane; msg is nil for headers and totals.
type outboxLine struct {
	text   string
	msg    *world.Message
	status int // 0 plain, 1 ok, 2 duplicate
}

// outboxLines lays out an execution's deliveries grouped by intent, with
// the duplicate flag, then the whole outbox's size.
func outboxLines(msgs []world.Message, total int) []outboxLine {
	var out []outboxLine
	if len(msgs) == 0 {
		out = append(out, outboxLine{text: "no messages from this execution"})
	}
	for _, g := range narrate.GroupByIntent(msgs) {
		out = append(out, outboxLine{text: fmt.Sprintf("%s · %q", g.Intent.To, g.Intent.Subject)})
		for i := range g.Messages {
			m := g.Messages[i]
			at := m.Attribution
			cause := fmt.Sprintf("%s #%d", at.Step, at.Attempt)
			if at.Key != "" {
				cause += " · " + at.Key
			} else {
				cause += " · no key"
			}
			out = append(out, outboxLine{text: fmt.Sprintf("  %s  %s", m.ID, cause), msg: &m})
		}
		n := len(g.Messages)
		if g.Duplicate() {
			out = append(out, outboxLine{text: fmt.Sprintf("  %d messages ← duplicate send", n), status: 2})
		} else {
			out = append(out, outboxLine{text: "  1 message ✓", status: 1})
		}
	}
	out = append(out, outboxLine{text: ""}, outboxLine{text: fmt.Sprintf("whole outbox: %d message%s", total, plural(total))})
	return out
}

// crmLines lays out the CRM's rows.
func crmLines(records []world.Record) []string {
	if len(records) == 0 {
		return []string{"no CRM records"}
	}
	var out []string
	for _, r := range records {
		var fields []string
		for _, k := range []string{"message_id", "invoice", "customer", "status"} {
			if v, ok := r.Fields[k]; ok {
				fields = append(fields, fmt.Sprintf("%s=%v", k, v))
			}
		}
		out = append(out, fmt.Sprintf("%s v%d  %s", r.ID, r.Version, strings.Join(fields, " ")))
		if at := r.Attribution; at.Execution != "" {
			out = append(out, fmt.Sprintf("  by %s %s #%d", at.Execution, at.Step, at.Attempt))
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
