//go:build linux

package cputime

import (
	"bytes"
	"os"
	"strconv"
)

// Host reads the machine's CPU ticks from /proc/stat's first line (user
// nice system idle iowait irq softirq steal ...); zero if it cannot.
func Host() HostTicks {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostTicks{}
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return HostTicks{}
	}
	var t HostTicks
	// guest and guest_nice (fields 9 and 10) are already in user and nice.
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return HostTicks{}
		}
		t.Total += n
		switch i {
		case 3, 4: // idle, iowait
			t.Idle += n
		case 7:
			t.Steal = n
		}
	}
	return t
}
