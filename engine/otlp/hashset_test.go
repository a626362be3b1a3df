package otlp

import (
	"math/rand/v2"
	"testing"
)

// A hashSet answers as a map of the same hashes does, added a write's at
// a time in batches of any size, and keeps its runs few.
func TestHashSetAsAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var s hashSet
	want := map[uint64]bool{}
	added := 0
	for batch := range 300 {
		n := r.IntN(700)
		if batch%50 == 0 {
			n = 5000
		}
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = r.Uint64() % 200000 // collisions between batches, and within one
			want[hs[i]] = true
		}
		s.add(hs)
		added += n
		for range 50 {
			h := r.Uint64() % 200000
			if s.has(h) != want[h] {
				t.Fatalf("batch %d: has(%d) = %v, want %v", batch, h, s.has(h), want[h])
			}
		}
	}
	for h := range want {
		if !s.has(h) {
			t.Fatalf("has(%d) = false after adding it", h)
		}
	}
	kept := 0
	for _, run := range s.runs {
		kept += len(run)
	}
	if kept != added { // a hash added twice is kept twice: nothing is lost in a merge
		t.Fatalf("%d hashes in the runs, want %d", kept, added)
	}
	if len(s.runs) > 20 {
		t.Fatalf("%d runs for %d hashes", len(s.runs), added)
	}
	for i := 1; i < len(s.runs); i++ {
		if 2*len(s.runs[i]) > len(s.runs[i-1]) {
			t.Fatalf("run %d of %d after one of %d: not half as long", i, len(s.runs[i]), len(s.runs[i-1]))
		}
	}
	var empty hashSet
	empty.add(nil)
	if empty.has(0) || len(empty.runs) != 0 {
		t.Fatal("an empty set has something")
	}
}
