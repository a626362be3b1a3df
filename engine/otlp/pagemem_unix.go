//go:build unix

package otlp

import "syscall"

// newPage returns an empty page of n bytes' capacity, an anonymous
// mapping of its own (a slice of the Go heap if the system refuses one).
func newPage(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// freePage unmaps a page newPage mapped; a page of the heap is left to
// the collector (Munmap does not know it).
func freePage(pg []byte) {
	_ = syscall.Munmap(pg[:cap(pg)])
}

// pagesOffHeap says newPage maps pages outside the Go heap.
const pagesOffHeap = true
