//go:build unix

package otlp

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, all threads (the
// collector's too), user and system: less moved by other processes on the
// machine than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
