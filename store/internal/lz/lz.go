// Package lz is a small LZ77 compressor with a preset dictionary, for short
// values that resemble each other (the store's chunks of history events).
//
// A chunk of a few kilobytes has too little text of its own to compress
// well; most of what it repeats (field tables, type names, tools, request
// bodies) is in every other chunk too, so a frozen sample of typical chunks
// is given to both sides as the text "before" every value, and matches may
// reach back into it. There is no entropy coding: decoding is a loop of
// copies, fast enough that reading compressed histories costs about what
// copying them did.
//
// The compressed form is a sequence of tokens. A token is a byte t, then:
//
//	t>>5 = l      l literal bytes follow (l = 7: a uvarint k first, and
//	              7+k literal bytes)
//	t&31 = 0      no match: only literals (the last token of a value)
//	t&31 = m < 16 a match of m-1+MinMatch bytes (m = 15: a uvarint k
//	              follows, and the match is 14+MinMatch+k bytes), then
//	              its distance as a uvarint d
//	t&31 = m ≥ 16 a match of m-16+RepMin bytes (m = 31: a uvarint k adds
//	              to 15+RepMin) at the distance of the last match with one
//	              (the value's first such refers to none: damaged)
//
// A match copies from d bytes before the end of what was decoded so far,
// counting the dictionary as lying just before the value; it may overlap
// what it writes (a run). Decode refuses tokens that reach before the
// dictionary or past the stated length.
package lz

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

const (
	// MinMatch is the shortest match at a new distance.
	MinMatch = 4
	// RepMin is the shortest match at the last distance.
	RepMin = 2
	// chain bounds the earlier positions with the same hash tried for a
	// match: more find longer matches (fewer tokens) at more cost. On
	// histories, 4 gives 28% of the plain size where 1 gave 33% and 24
	// gives 27%.
	chain = 4
	// goodMatch is a match long enough not to look one byte on for a
	// longer one.
	goodMatch = 24

	dictBits = 14 // the dictionary's hash table
	srcBits  = 12 // a value's own hash table
)

// ErrCorrupt means the bytes are not a compressed value of this dictionary.
var ErrCorrupt = errors.New("lz: damaged compressed value")

// Dict is a preset dictionary and its hash chains, built once and only
// read after: safe for concurrent use.
type Dict struct {
	text  []byte
	table [1 << dictBits]int32 // 1 + the last position with that hash
	prev  []int32              // 1 + the position before with the same hash
}

// NewDict prepares a dictionary. text is kept, not copied: do not change it.
func NewDict(text []byte) *Dict {
	d := &Dict{text: text, prev: make([]int32, len(text))}
	for i := 0; i+MinMatch <= len(text); i++ {
		h := hash(text[i:], dictBits)
		d.prev[i] = d.table[h]
		d.table[h] = int32(i + 1)
	}
	return d
}

func hash(b []byte, bits uint) uint32 {
	return binary.LittleEndian.Uint32(b) * 2654435761 >> (32 - bits)
}

// common is the length of the common prefix of a and b, compared eight
// bytes at a time.
func common(a, b []byte) int {
	n := 0
	for n+8 <= len(a) && n+8 <= len(b) {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// encoder holds one value's hash chains.
type encoder struct {
	d     *Dict
	src   []byte
	table [1 << srcBits]int32
	prev  []int32
}

func (e *encoder) insert(j int) {
	h := hash(e.src[j:], srcBits)
	e.prev[j] = e.table[h]
	e.table[h] = int32(j + 1)
}

// find returns the longest match for src[i:] (0 if none of MinMatch),
// trying the value's earlier positions, then the dictionary's.
func (e *encoder) find(i int) (best, dist int) {
	src := e.src
	// A candidate must share the first MinMatch bytes (not only their
	// hash) and beat best at its last byte before it is measured.
	head := binary.LittleEndian.Uint32(src[i:])
	better := func(text []byte, p int) bool {
		return p+MinMatch <= len(text) && binary.LittleEndian.Uint32(text[p:]) == head &&
			(best == 0 || p+best < len(text) && i+best < len(src) && text[p+best] == src[i+best])
	}
	for p, k := int(e.table[hash(src[i:], srcBits)])-1, 0; p >= 0 && k < chain; p, k = int(e.prev[p])-1, k+1 {
		if better(src, p) {
			if n := common(src[p:], src[i:]); n > best {
				best, dist = n, i-p
			}
		}
	}
	d := e.d
	for p, k := int(d.table[hash(src[i:], dictBits)])-1, 0; p >= 0 && k < chain; p, k = int(d.prev[p])-1, k+1 {
		if better(d.text, p) {
			if n := common(d.text[p:], src[i:]); n > best {
				best, dist = n, i+len(d.text)-p
			}
		}
	}
	if best < MinMatch {
		return 0, 0
	}
	return best, dist
}

// repeat is the length of the match at distance dist from src[i:], which
// may start in the dictionary and run on into the value.
func (e *encoder) repeat(i, dist int) int {
	p := i - dist
	if dist <= 0 || p < -len(e.d.text) {
		return 0
	}
	if p >= 0 {
		return common(e.src[p:], e.src[i:])
	}
	n := common(e.d.text[len(e.d.text)+p:], e.src[i:])
	if n == -p {
		n += common(e.src, e.src[i+n:])
	}
	return n
}

// Encode appends the compressed form of src to dst. Values longer than
// 1<<31 bytes are not supported.
func (d *Dict) Encode(dst, src []byte) []byte {
	e := &encoder{d: d, src: src, prev: make([]int32, len(src))}
	lit, last := 0, 0
	for i := 0; i+MinMatch <= len(src); {
		best, dist := e.find(i)
		rep := 0
		if last > 0 {
			rep = e.repeat(i, last)
		}
		// A repeat costs no distance (one to three bytes less).
		useRep := rep >= RepMin && rep+2 >= best
		e.insert(i)
		if !useRep && (best == 0 || best < goodMatch && i+1+MinMatch <= len(src) && lazyBetter(e, i+1, best)) {
			i++
			continue
		}
		if useRep {
			dst = token(dst, src[lit:i], 16, rep-RepMin)
			best = rep
		} else {
			dst = token(dst, src[lit:i], 1, best-MinMatch)
			dst = binary.AppendUvarint(dst, uint64(dist))
			last = dist
		}
		for j := i + 1; j < i+best && j+MinMatch <= len(src); j++ {
			e.insert(j)
		}
		i += best
		lit = i
	}
	if lit < len(src) || len(src) == 0 {
		dst = token(dst, src[lit:], 0, 0)
	}
	return dst
}

// lazyBetter reports whether the match one byte on is longer by more than
// the literal it costs.
func lazyBetter(e *encoder, i, best int) bool {
	next, _ := e.find(i)
	return next > best+1
}

// token appends a token: the literals, then a match of kind base (1 new
// distance, 16 repeat, 0 none) and extra (its length past the minimum).
func token(dst, literals []byte, base, extra int) []byte {
	// The lengths the token holds: m = base+extra up to escape, which says
	// a uvarint of the rest follows (15 for a new distance, 31 a repeat).
	escape := 15 - base
	if base == 16 {
		escape = 15
	}
	t := byte(min(len(literals), 7)) << 5
	if base != 0 {
		t |= byte(base + min(extra, escape))
	}
	dst = append(dst, t)
	if len(literals) >= 7 {
		dst = binary.AppendUvarint(dst, uint64(len(literals)-7))
	}
	dst = append(dst, literals...)
	if base != 0 && extra >= escape {
		dst = binary.AppendUvarint(dst, uint64(extra-escape))
	}
	return dst
}

// Decode appends to dst the n bytes that src, a value Encode compressed
// with the same dictionary, stands for.
func (d *Dict) Decode(dst, src []byte, n int) ([]byte, error) {
	if n < 0 {
		return nil, ErrCorrupt
	}
	base := len(dst)
	if cap(dst)-base < n {
		// n is what the caller read beside src: trust it for the first
		// megabyte only, so a damaged length cannot claim much memory.
		dst = append(make([]byte, 0, base+min(n, 1<<20)), dst...)
	}
	last := uint64(0)
	for len(src) > 0 {
		t := src[0]
		src = src[1:]
		run := uint64(t >> 5)
		if run == 7 {
			k, w := binary.Uvarint(src)
			if w <= 0 {
				return nil, ErrCorrupt
			}
			src = src[w:]
			run += k
		}
		if run > uint64(len(src)) || run > uint64(n-(len(dst)-base)) {
			return nil, ErrCorrupt
		}
		dst = append(dst, src[:run]...)
		src = src[run:]
		m := t & 31
		if m == 0 {
			continue
		}
		var length, dist uint64
		if m < 16 {
			length = uint64(m-1) + MinMatch
		} else {
			length = uint64(m-16) + RepMin
		}
		if m == 15 || m == 31 {
			k, w := binary.Uvarint(src)
			if w <= 0 || k > uint64(n) {
				return nil, ErrCorrupt
			}
			src = src[w:]
			length += k
		}
		if m < 16 {
			var w int
			dist, w = binary.Uvarint(src)
			if w <= 0 {
				return nil, ErrCorrupt
			}
			src = src[w:]
			last = dist
		} else {
			dist = last
		}
		out := len(dst) - base
		if length > uint64(n-out) || dist == 0 || dist > uint64(out+len(d.text)) {
			return nil, ErrCorrupt
		}
		m2 := int(length)
		if back := int(dist); back > out {
			// Starts in the dictionary, and may run on into the value.
			from := len(d.text) - (back - out)
			k := min(m2, len(d.text)-from)
			dst = append(dst, d.text[from:from+k]...)
			m2 -= k
			if m2 == 0 {
				continue
			}
			from = base // on from the value's first byte
			for m2 > 0 {
				k := min(m2, len(dst)-from)
				dst = append(dst, dst[from:from+k]...)
				from += k
				m2 -= k
			}
			continue
		}
		from := len(dst) - int(dist)
		for m2 > 0 {
			// Copy at most what lies between from and the end: an
			// overlapping match repeats it.
			k := min(m2, len(dst)-from)
			dst = append(dst, dst[from:from+k]...)
			from += k
			m2 -= k
		}
	}
	if len(dst)-base != n {
		return nil, ErrCorrupt
	}
	return dst, nil
}
