package dur

import (
	"testing"
	"time"
)

func TestText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		25 * time.Hour:                      "25h",
		72 * time.Hour:                      "72h",
		90 * time.Minute:                    "1h30m",
		time.Hour + 5*time.Second:           "1h0m5s",
		2 * time.Minute:                     "2m",
		10 * time.Minute:                    "10m",
		time.Minute + 1500*time.Millisecond: "1m1.5s",
		1500 * time.Millisecond:             "1.5s",
		400 * time.Millisecond:              "400ms",
		time.Second:                         "1s",
		0:                                   "0s",
		-25 * time.Hour:                     "-25h",
	} {
		if got := Text(d); got != want {
			t.Errorf("Text(%v) = %q, want %q", d, got, want)
		}
	}
}
