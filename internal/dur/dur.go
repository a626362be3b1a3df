// Package dur writes durations for people: as Go writes them, less the
// zero units Go pads with, so 25 hours read "25h", not "25h0m0s".
package dur

import (
	"strings"
	"time"
)

// Text is d as time.Duration.String writes it, without trailing zero
// units: 25h, 1h30m, 2m, 1m30s, 1.5s, 400ms (and 0s).
func Text(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}
