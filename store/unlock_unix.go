//go:build unix

package store

import (
	"os"
	"syscall"
)

// releaseLock drops the flock bbolt took on f. Closing f alone is not
// enough when bbolt panicked after mapping the file: the mapping keeps the
// open file description, and with it the lock, alive.
func releaseLock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
