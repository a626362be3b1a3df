package otlp

import (
	"bytes"
	"runtime"
	"testing"
)

// TestPagesHoldWhatWasAdded: what add returns stays as it was while pages
// are added after it, large values get a page of their own, and free
// leaves the pages ready for more.
func TestPagesHoldWhatWasAdded(t *testing.T) {
	var p pages
	var held [][]byte
	var want [][]byte
	for i := range 3000 {
		v := bytes.Repeat([]byte{byte(i)}, 1+i%1500)
		if i%1000 == 999 {
			v = bytes.Repeat([]byte{byte(i)}, pageBytes+10) // larger than a page
		}
		held = append(held, p.add(v))
		want = append(want, v)
	}
	for i := range held {
		if !bytes.Equal(held[i], want[i]) {
			t.Fatalf("value %d changed", i)
		}
	}
	if len(p) < 5 { // three pages of their own, and 2.2 MB in pages of pageBytes
		t.Fatalf("%d pages for 5.2 MB", len(p))
	}
	p.free()
	if p != nil {
		t.Fatalf("free left %d pages", len(p))
	}
	if got := p.add([]byte("again")); string(got) != "again" {
		t.Fatalf("after free: %q", got)
	}
	p.free()
}

// TestPagesOutsideTheHeap: on a system with anonymous mappings, 64 MB of
// pages add nothing to the heap the collector paces itself by.
func TestPagesOutsideTheHeap(t *testing.T) {
	if !pagesOffHeap {
		t.Skip("pages are of the Go heap here")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var p pages
	v := make([]byte, 64<<10)
	for range 1024 {
		p.add(v)
	}
	runtime.ReadMemStats(&after)
	defer p.free()
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Fatalf("64 MB of pages grew the heap by %d MB", grew>>20)
	}
}
