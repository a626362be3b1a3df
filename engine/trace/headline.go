package trace

import "strings"

// pythonTraceback opens the traceback Python writes after (or instead of)
// an exception's message.
const pythonTraceback = "Traceback (most recent call last)"

// Headline is an error message folded to one line, as lists and one-line
// reports show it: its first non-empty line, cut where a Python traceback
// begins, and followed by " …" when anything was left out (a stack, more
// lines). A message that is only a traceback gives its last line, the
// exception itself. The whole message stays in the detail view and JSON.
func Headline(msg string) string {
	if !strings.ContainsAny(msg, "\n\r") && !strings.Contains(msg, pythonTraceback) {
		return msg
	}
	head, cut := msg, false
	if i := strings.Index(head, pythonTraceback); i >= 0 {
		if strings.TrimSpace(head[:i]) == "" {
			return lastLine(head) + " …"
		}
		head, cut = head[:i], true
	}
	lines := strings.FieldsFunc(head, func(r rune) bool { return r == '\n' || r == '\r' })
	first := ""
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			first = l
			break
		}
	}
	if first == "" {
		return strings.TrimSpace(msg)
	}
	if cut || len(strings.TrimSpace(head)) > len(first) {
		return first + " …"
	}
	return first
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return strings.TrimSpace(s)
}

// EndWords are how an execution's end (an ExecutionEnded note) reads, as
// the source gave it: its status ("completed", "failed", or a source's
// own: Temporal's "timed out", "cancelled", "terminated"), and what the
// source said beyond the status ("" when the error only repeats it, as
// Temporal's "workflow cancelled" does). The screen, show and the
// Markdown handout say an end with them.
func (n *Note) EndWords() (status, why string) {
	status = n.Text
	switch {
	case n.Mark == MarkOK:
		status = "completed"
	case status == "":
		status = "failed"
	}
	why = strings.TrimSpace(n.Error)
	if why == status || why == "workflow "+status {
		return status, ""
	}
	if rest, ok := strings.CutPrefix(why, "workflow "+status+" "); ok { // Temporal's "workflow terminated REASON"
		why = strings.TrimSpace(rest)
	}
	return status, why
}
