package chaos

import "syscall"

// hostProcAttr makes the kernel kill a host (and so its workers) if the
// runner dies, so no host outlives a chaos run.
func hostProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
