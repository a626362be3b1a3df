package cputime

import (
	"runtime"
	"testing"
)

// StealPercent and IdlePercent are their part of the ticks between two
// readings, and 0 for readings out of order.
func TestPartsOfTheTicks(t *testing.T) {
	for _, c := range []struct {
		name string
		part func(a, b HostTicks) float64
		a, b HostTicks
	}{
		{"steal", HostTicks.StealPercent, HostTicks{Steal: 10, Total: 1000}, HostTicks{Steal: 60, Total: 1200}},
		{"idle", HostTicks.IdlePercent, HostTicks{Idle: 100, Total: 1000}, HostTicks{Idle: 150, Total: 1200}},
	} {
		if got := c.part(c.a, c.b); got != 25 {
			t.Errorf("%s %.1f%%, want 25%%", c.name, got)
		}
		if got := c.part(c.b, c.a); got != 0 {
			t.Errorf("%s backwards: %.1f%%, want 0", c.name, got)
		}
	}
}

func TestHostReadsProcStat(t *testing.T) {
	h := Host()
	if runtime.GOOS != "linux" {
		if h != (HostTicks{}) {
			t.Fatalf("Host() = %+v off Linux, want zero", h)
		}
		return
	}
	if h.Total == 0 || h.Steal+h.Idle > h.Total {
		t.Fatalf("Host() = %+v: no ticks read from /proc/stat", h)
	}
}
