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

// Short is d as the explorer and show say an attempt's duration: to the
// second from a minute, to a tenth of a second from a second, else to the
// millisecond, and "<1ms" below one (never "0s" for a call that took
// microseconds).
func Short(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return Text(d.Round(time.Second))
	case d >= time.Second:
		return Text(d.Round(100 * time.Millisecond))
	case d < time.Millisecond:
		return "<1ms"
	}
	return Text(d.Round(time.Millisecond))
}
