//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, all threads (the garbage
// collector's too), user and system; 0 if the system does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
