package store

import (
	_ "embed"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// chunkMax bounds the plain bytes of one chunk of events: large enough
// that the events of a short history compress together (the gen mix's
// average execution is 1.1 KB of events) and a chunk's key is a small share
// of it, small enough that compressing a chunk when it is sealed stays
// cheap (some 20 µs of CPU at 4 KB) and a page holds several compressed
// chunks.
const chunkMax = 4096

// chunkDictText is the preset dictionary of compressed chunks, 32 KB of
// plain chunks of typical histories: 6 KB of the catalogue's naive, safe,
// invoice-crm and crash runs, then executions of every shape that
// `retrylab gen --seed 99` writes (another seed than the benchmarks'). It is
// part of the format: a chunk written with it can only be read with it, so
// it is never changed (TestChunkDictionaryIsFrozen).
//
//go:embed chunkdict.bin
var chunkDictText []byte

// chunkDict is chunkDictText as an S2 dictionary (no initial repeat
// offset), built once when the package loads and never changed: s2.Dict
// builds its match tables once, on first use, behind a sync.Once, and is
// safe for concurrent encoding and decoding.
var chunkDict = s2.MakeDict(chunkDictText, nil)

// maxChunkLen bounds a chunk's plain length: encodeChunk refuses longer
// chunks (bbolt could not store one plain either), so decodeChunk refuses a
// compressed chunk that claims more as damaged instead of allocating it.
const maxChunkLen = bolt.MaxValueSize

// compressedChunk is the first byte of a compressed chunk. A plain chunk
// starts with its first event's length, which is not 0 in any file an
// older build wrote (engine/history never writes an empty event); a chunk
// this build writes that starts with an empty event is always compressed.
const compressedChunk = 0

// encodeChunk is the sealed form of a plain chunk: compressed, unless that
// would not make it shorter (then plain itself). A compressed chunk is a
// new slice of its own length; *scratch is the encoder's space, kept for
// the next call. EncodeBetter rather than Encode: on the gen mix's chunks
// 29.6% of their plain size instead of 35%, in about the time the
// hand-written codec S2 replaced took (BENCHMARKS.md, "14.3: S2 instead of
// our own codec").
//
// With sums (a file of schema v7 on) the stored chunk is followed by its
// checksum (sumChunk).
func encodeChunk(scratch *[]byte, plain []byte, sums bool) ([]byte, error) {
	return encodeWith(scratch, nil, plain, chunkDict.EncodeBetter, sums)
}

// encodeTail is the stored form of a growing tail: compressed by S2's
// fast encoder with the same dictionary (Dict.Encode: some 1-2 µs for a
// chunk, where EncodeBetter clears its 589 KB of tables first; 12-18%
// larger), unless that would not make it shorter (then plain itself, but
// for a chunk whose first event is empty, which is always compressed).
// scratch is as encodeChunk's.
func encodeTail(scratch *[]byte, plain []byte, sums bool) ([]byte, error) {
	return encodeWith(scratch, nil, plain, chunkDict.Encode, sums)
}

// encodeTailValue is encodeTail's stored form after head, in a new slice:
// history_tails' value, head being the tail's first sequence number.
func encodeTailValue(scratch *[]byte, head, plain []byte, sums bool) ([]byte, error) {
	return encodeWith(scratch, head, plain, chunkDict.Encode, sums)
}

// encodeWith is a chunk compressed by encode (one of chunkDict's S2
// encoders, writing into dst), or plain when that is not shorter and the
// chunk does not start with an empty event, after head: plain itself
// when head is nil and the chunk is stored plain without sums, else a new
// slice. With sums the chunk (not head) is followed by its checksum.
func encodeWith(scratch *[]byte, head, plain []byte, encode func(dst, src []byte) []byte, sums bool) ([]byte, error) {
	need := s2.MaxEncodedLen(len(plain))
	if need < 0 || len(plain) > maxChunkLen {
		return nil, fmt.Errorf("history chunk of %d bytes: too large", len(plain))
	}
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	enc := encode((*scratch)[:need], plain)
	extra := 0
	if sums {
		extra = sumSize
	}
	if 1+len(enc) >= len(plain) && len(plain) > 0 && plain[0] != compressedChunk {
		if head == nil && !sums {
			return plain, nil
		}
		out := append(append(make([]byte, 0, len(head)+len(plain)+extra), head...), plain...)
		if sums {
			out = appendChunkSum(out, len(head))
		}
		return out, nil
	}
	out := make([]byte, len(head)+1+len(enc), len(head)+1+len(enc)+extra)
	n := copy(out, head)
	out[n] = compressedChunk
	copy(out[n+1:], enc)
	if sums {
		out = appendChunkSum(out, n)
	}
	return out, nil
}

// sealChunk is a stored chunk (plain, a growing tail or sealed) as it
// is stored sealed; *scratch is as encodeChunk's, sums as decodeChunk's.
func sealChunk(scratch *[]byte, stored []byte, sums bool) ([]byte, error) {
	plain, err := decodeChunk(stored, true, sums)
	if err != nil {
		return nil, err
	}
	return encodeChunk(scratch, plain, sums)
}

// decodeChunk returns a stored chunk's plain events: a new slice, or, for
// a plain chunk when copyPlain is not set, a slice of stored. sums says
// the chunk is followed by its checksum (a file of schema v7 on), which
// must match.
func decodeChunk(stored []byte, copyPlain, sums bool) ([]byte, error) {
	return decodeChunkInto(nil, stored, copyPlain, sums)
}

// decodeChunkInto is decodeChunk writing a compressed chunk's events (or
// a plain chunk's, with copyPlain) into dst's space when it is large
// enough.
func decodeChunkInto(dst, stored []byte, copyPlain, sums bool) ([]byte, error) {
	if sums {
		var err error
		if stored, err = openChunk(stored); err != nil {
			return nil, err
		}
	}
	if len(stored) == 0 || stored[0] != compressedChunk {
		if copyPlain {
			return append(dst[:0], stored...), nil
		}
		return stored, nil
	}
	if n, err := s2.DecodedLen(stored[1:]); err != nil || n > maxChunkLen {
		return nil, ErrCorrupt
	}
	plain, err := chunkDict.Decode(dst[:0], stored[1:])
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// chunkEvents splits a chunk into its events, each a slice of chunk whose
// capacity ends where it does.
func chunkEvents(chunk []byte, fn func(data []byte) bool) bool {
	for len(chunk) > 0 {
		n, w := binary.Uvarint(chunk)
		if w <= 0 || n > uint64(len(chunk)-w) {
			return false
		}
		end := w + int(n)
		if !fn(chunk[w:end:end]) {
			return true
		}
		chunk = chunk[end:]
	}
	return true
}
