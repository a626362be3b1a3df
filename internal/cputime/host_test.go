package cputime

import (
	"runtime"
	"testing"
)

func TestStealPercent(t *testing.T) {
	a, b := HostTicks{Steal: 10, Total: 1000}, HostTicks{Steal: 60, Total: 1200}
	if got := a.StealPercent(b); got != 25 {
		t.Errorf("steal %.1f%%, want 25%%", got)
	}
	if got := b.StealPercent(a); got != 0 {
		t.Errorf("backwards: %.1f%%, want 0", got)
	}
}

func TestIdlePercent(t *testing.T) {
	a, b := HostTicks{Idle: 100, Total: 1000}, HostTicks{Idle: 150, Total: 1200}
	if got := a.IdlePercent(b); got != 25 {
		t.Errorf("idle %.1f%%, want 25%%", got)
	}
	if got := b.IdlePercent(a); got != 0 {
		t.Errorf("backwards: %.1f%%, want 0", got)
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
