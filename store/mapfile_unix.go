//go:build unix

package store

import (
	"os"
	"syscall"
)

// mapFile maps f's bytes read-only, as they are now, and returns a
// function that unmaps them. An empty file maps to no bytes.
func mapFile(f *os.File) ([]byte, func(), error) {
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if info.Size() == 0 {
		return nil, func() {}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
