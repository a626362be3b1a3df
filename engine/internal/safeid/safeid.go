// Package safeid turns a foreign identifier (an OpenTelemetry conversation
// id, a Temporal run id) into a part of a retrylab execution id: only
// letters, digits, '-', '_' and '.', every other rune replaced by '_', and
// cut at a length the caller chooses.
package safeid

import "strings"

// Part returns s with every rune outside [A-Za-z0-9._-] replaced by '_',
// at most max bytes long (every rune written is one byte).
func Part(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
