//go:build !unix

package otlp

// newPage returns an empty page of n bytes' capacity, of the Go heap.
func newPage(n int) []byte { return make([]byte, 0, n) }

// freePage leaves the page to the collector.
func freePage([]byte) {}

// pagesOffHeap says newPage maps pages outside the Go heap.
const pagesOffHeap = false
