// Package tailbuf keeps the last bytes written to a writer: the end of a
// child process's stderr, say, to quote when it fails, without holding all
// it ever wrote.
package tailbuf

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer that keeps the last Max bytes written to it. It is
// safe for concurrent use: a process writes while its host reads. The zero
// Buffer keeps nothing; make one with New.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

// New returns a Buffer that keeps the last max bytes written to it.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of p, and drops what falls out of the last max bytes.
// It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if n >= b.max {
		b.buf.Reset()
		p = p[n-b.max:]
	}
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return n, nil
}

// Reset forgets what was written.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// String returns the bytes kept, oldest first.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
