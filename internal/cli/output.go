package cli

// What every command's output shares.

import (
	"io"
	"strings"

	"github.com/retrylab/retrylab/internal/jsonstream"
)

// oneLine is the first line of s, trimmed: how an error is printed.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// printJSON writes v as every --json prints: indented by two spaces,
// a newline at the end.
func printJSON(w io.Writer, v any) error { return jsonstream.Write(w, v) }
