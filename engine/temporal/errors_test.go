package temporal_test

import (
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/temporal"
)

// The codec's errors reach the user without the codec's source file, and an
// event with no type is not blamed on a newer server.
func TestDecodeErrorsSpeakToTheUser(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`{"events": "x"}`, `not a Temporal history: syntax error (line 1:12): unexpected token "x"`},
		{`{"events": [{"eventId": "1"}]}`, "event 1 has no event type"},
	}
	for _, c := range cases {
		_, _, err := temporal.Decode([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: decoded", c.doc)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, ".go:") || strings.Contains(msg, "newer Temporal server") {
			t.Errorf("%s: error %q, want %q and no source file nor newer server", c.doc, msg, c.want)
		}
	}
}
