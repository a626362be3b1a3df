package otlp

import "slices"

// hashSet is a set of 64-bit hashes, added a write's at a time: sorted
// runs, each at least twice as long as the next, that merge as they pile
// up. It takes 8 bytes a hash, where a map took about 30: a million
// spans' hashes were 30 MB of an import's heap (BENCHMARKS.md, 8b). A
// look-up is a binary search in each run, and the runs are few: about
// the log of the hashes over a write's.
type hashSet struct {
	runs [][]uint64 // sorted, longest first
}

// add adds hs, which it sorts; the set keeps a copy.
func (s *hashSet) add(hs []uint64) {
	if len(hs) == 0 {
		return
	}
	run := slices.Clone(hs)
	slices.Sort(run)
	s.runs = append(s.runs, run)
	for n := len(s.runs); n >= 2 && 2*len(s.runs[n-1]) > len(s.runs[n-2]); n = len(s.runs) {
		s.runs[n-2] = mergeSorted(s.runs[n-2], s.runs[n-1])
		s.runs[n-1] = nil
		s.runs = s.runs[:n-1]
	}
}

// has says whether h was added.
func (s *hashSet) has(h uint64) bool {
	for _, run := range s.runs {
		if _, ok := slices.BinarySearch(run, h); ok {
			return true
		}
	}
	return false
}

// mergeSorted merges two sorted runs into a new one.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
