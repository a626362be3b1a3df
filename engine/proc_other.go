//go:build !linux

package engine

import "syscall"

// workerProcAttr puts a worker in its own process group.
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
