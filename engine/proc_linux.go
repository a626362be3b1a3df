package engine

import "syscall"

// workerProcAttr puts a worker in its own process group (so a Ctrl-C in the
// terminal reaches only the host, which decides what to do) and makes the
// kernel kill it if the host dies, so no worker outlives its host.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
