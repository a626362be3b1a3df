//go:build !linux

package chaos

import "syscall"

func hostProcAttr() *syscall.SysProcAttr { return nil }
