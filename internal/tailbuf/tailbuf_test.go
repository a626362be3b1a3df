package tailbuf

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

var _ io.Writer = (*Buffer)(nil)

func TestKeepsTheLastBytes(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"nothing written", 4, nil, ""},
		{"under the bound", 8, []string{"ab", "cd"}, "abcd"},
		{"exactly the bound", 4, []string{"ab", "cd"}, "abcd"},
		{"over, across writes", 4, []string{"abc", "def"}, "cdef"},
		{"one write longer than the bound", 3, []string{"x", "abcdefg"}, "efg"},
		{"a short write after a long one", 5, []string{"abcdefgh", "ij"}, "fghij"},
		{"zero bound", 0, []string{"abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.max)
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReset(t *testing.T) {
	b := New(4)
	fmt.Fprint(b, "first run")
	b.Reset()
	if got := b.String(); got != "" {
		t.Fatalf("after Reset: %q, want empty", got)
	}
	fmt.Fprint(b, "next")
	if got := b.String(); got != "next" {
		t.Fatalf("after Reset and a write: %q, want %q", got, "next")
	}
}

// TestConcurrentWrites checks that writers and a reader may share a Buffer:
// whatever order the lines land in, the buffer holds exactly max bytes of
// whole lines' bytes.
func TestConcurrentWrites(t *testing.T) {
	const line = "0123456789\n"
	b := New(5 * len(line))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte(line))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got, want := b.String(), strings.Repeat(line, 5); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
