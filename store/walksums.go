package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The checksums of a file's records, checked on its pages as walkPages
// walks them (walkPagesSums): a writer's Open refuses a file whose records
// are damaged before anything is written beside them, as it refuses a
// damaged page. bbolt's pages carry no checksum of their own, so a record
// whose bytes changed (a disk fault inside a value) passes the walk of the
// pages' bounds and bbolt's check alike; only its seal says so (see sum.go).
//
// The sealed records cost next to nothing beside the walk (1–2 ms on
// BENCHMARKS.md 2a's 80 MB file, whose walk takes 8–15 ms); the histories'
// chunks, most of a file's bytes, cost about 0.2 ms per MB (+15 ms on that
// file), so they are summed only in a file checked in full at open
// (Options.CheckUpTo), whose bbolt check costs as much. In a larger file a
// damaged chunk fails the read, or the append, that reaches it.

// sumLevel is which records' checksums a walk checks.
type sumLevel uint8

const (
	sumNone    sumLevel = iota // none: the pages' bounds only
	sumRecords                 // the sealed records, not the histories' chunks
	sumAll                     // the sealed records and the histories' chunks
)

// collKind is what a collection's records are, for their checksum.
type collKind uint8

const (
	collRoot   collKind = iota // the root: its elements are the top-level collections
	collPlain                  // records without checksums
	collSealed                 // sealed records (seal)
	collChunks                 // history_events: chunks followed by their checksum
	collTails                  // history_tails: a sequence number, then a chunk and its checksum
)

// collection is the collection a page's records belong to: its top-level
// name, and what its records are.
type collection struct {
	kind collKind
	name Bucket
}

// nested is the collection a bucket named name inside c is.
func (c collection) nested(name []byte) collection {
	switch c.kind {
	case collRoot:
		switch b := Bucket(name); {
		case b == bucketHistoryEvents:
			return collection{kind: collChunks, name: b}
		case b == bucketHistoryTails:
			return collection{kind: collTails, name: b}
		case summed(b):
			return collection{kind: collSealed, name: b}
		default:
			return collection{kind: collPlain, name: b}
		}
	case collSealed:
		return c // nested collections of a summed one are summed too (sealAll)
	}
	return collection{kind: collPlain, name: c.name}
}

// errChunkSum is why a history chunk or tail is damaged when its checksum
// does not match, or it is too short to hold one.
var errChunkSum = errors.New("its checksum does not match, or it is too short to hold one: its bytes are not those written")

// checkRecord reports a record of c (key, value as stored) whose checksum
// does not match; with level sumRecords, the histories' chunks pass.
func (c collection) checkRecord(key, value []byte, level sumLevel) error {
	if level < sumAll && (c.kind == collChunks || c.kind == collTails) {
		return nil
	}
	switch c.kind {
	case collSealed:
		if _, ok := unseal(key, value); !ok {
			return errSum
		}
	case collChunks:
		if !chunkSumOK(value) {
			return errChunkSum
		}
	case collTails:
		// The first sequence number (its length, then its bytes), then the
		// chunk; storedTail reads it so.
		if len(value) < 2 || len(value) < 2+int(value[0]) || !chunkSumOK(value[1+int(value[0]):]) {
			return errChunkSum
		}
	}
	return nil
}

// chunkSumOK reports whether a stored chunk's checksum matches (openChunk's
// test, without its error).
func chunkSumOK(stored []byte) bool {
	if len(stored) < sumSize {
		return false
	}
	n := len(stored) - sumSize
	return binary.BigEndian.Uint32(stored[n:]) == crc32.Checksum(stored[:n], castagnoli)
}

// record checks the record key, value of coll on page id: it keeps the
// first whose checksum does not match, and the file's schema version.
func (w *pageWalker) record(id uint64, coll collection, key, value []byte) {
	if coll.name == bucketMeta && coll.kind == collPlain && string(key) == "schema" && len(value) == 8 {
		w.schema = binary.BigEndian.Uint64(value)
		return
	}
	if w.badRecord != nil {
		return
	}
	if err := coll.checkRecord(key, value, w.sums); err != nil {
		w.badRecord = fmt.Errorf("damaged record in %s, key %s, page %d: %w", coll.name, QuoteKey(key), id, err)
	}
}
