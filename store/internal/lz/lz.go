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
// The compressed form is a sequence of tokens, each a uvarint v:
//
//	v&1 == 0   a literal run: the next v>>1 bytes are copied as they are
//	v&1 == 1   a match of v>>1 + MinMatch bytes, then a uvarint distance d:
//	           the copy starts d bytes before the end of what was decoded
//	           so far, counting the dictionary as lying just before it
//
// A match may overlap what it writes (a run). Decode refuses tokens that
// reach before the dictionary or past the stated length.
package lz

import (
	"encoding/binary"
	"errors"
)

// MinMatch is the shortest match the compressor emits.
const MinMatch = 4

const (
	dictBits = 14 // the dictionary's hash table
	srcBits  = 12 // a value's own hash table
)

// ErrCorrupt means the bytes are not a compressed value of this dictionary.
var ErrCorrupt = errors.New("lz: damaged compressed value")

// Dict is a preset dictionary and its hash table, built once and only read
// after: safe for concurrent use.
type Dict struct {
	text  []byte
	table [1 << dictBits]int32 // 1 + the last position with that hash
}

// NewDict prepares a dictionary. text is kept, not copied: do not change it.
func NewDict(text []byte) *Dict {
	d := &Dict{text: text}
	for i := 0; i+MinMatch <= len(text); i++ {
		d.table[hash(text[i:], dictBits)] = int32(i + 1)
	}
	return d
}

func hash(b []byte, bits uint) uint32 {
	return binary.LittleEndian.Uint32(b) * 2654435761 >> (32 - bits)
}

func common(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Encode appends the compressed form of src to dst. Values longer than
// 1<<31 bytes are not supported.
func (d *Dict) Encode(dst, src []byte) []byte {
	var table [1 << srcBits]int32 // 1 + the last position in src
	lit := 0
	for i := 0; i+MinMatch <= len(src); {
		h := hash(src[i:], srcBits)
		best, dist := 0, 0
		if p := int(table[h]) - 1; p >= 0 {
			if n := common(src[p:], src[i:]); n >= MinMatch {
				best, dist = n, i-p
			}
		}
		if p := int(d.table[hash(src[i:], dictBits)]) - 1; p >= 0 {
			if n := common(d.text[p:], src[i:]); n > best && n >= MinMatch {
				best, dist = n, i+len(d.text)-p
			}
		}
		table[h] = int32(i + 1)
		if best == 0 {
			i++
			continue
		}
		if i > lit {
			dst = binary.AppendUvarint(dst, uint64(i-lit)<<1)
			dst = append(dst, src[lit:i]...)
		}
		dst = binary.AppendUvarint(dst, uint64(best-MinMatch)<<1|1)
		dst = binary.AppendUvarint(dst, uint64(dist))
		for j := i + 1; j < i+best && j+MinMatch <= len(src); j++ {
			table[hash(src[j:], srcBits)] = int32(j + 1)
		}
		i += best
		lit = i
	}
	if len(src) > lit {
		dst = binary.AppendUvarint(dst, uint64(len(src)-lit)<<1)
		dst = append(dst, src[lit:]...)
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
	for len(src) > 0 {
		v, w := binary.Uvarint(src)
		if w <= 0 {
			return nil, ErrCorrupt
		}
		src = src[w:]
		out := len(dst) - base
		if v&1 == 0 {
			run := v >> 1
			if run > uint64(len(src)) || run > uint64(n-out) {
				return nil, ErrCorrupt
			}
			dst = append(dst, src[:run]...)
			src = src[run:]
			continue
		}
		length := v>>1 + MinMatch
		dist, w := binary.Uvarint(src)
		if w <= 0 || length > uint64(n-out) || dist == 0 || dist > uint64(out+len(d.text)) {
			return nil, ErrCorrupt
		}
		src = src[w:]
		m := int(length)
		if back := int(dist); back > out {
			// Starts in the dictionary, and may run on into the value.
			from := len(d.text) - (back - out)
			k := min(m, len(d.text)-from)
			dst = append(dst, d.text[from:from+k]...)
			m -= k
			if m == 0 {
				continue
			}
			dist = uint64(len(dst) - base) // on from the value's first byte
		}
		from := len(dst) - int(dist)
		for m > 0 {
			// Copy at most what lies between from and the end: an
			// overlapping match repeats it.
			k := min(m, len(dst)-from)
			dst = append(dst, dst[from:from+k]...)
			from += k
			m -= k
		}
	}
	if len(dst)-base != n {
		return nil, ErrCorrupt
	}
	return dst, nil
}
