// Package jsonlimit names the limits on every JSON input retrylab reads
// (OTLP/HTTP bodies, imported files, Temporal histories, the control,
// runtime and simulated services' request bodies) and checks the one
// limit a decoder cannot: how deeply a text nests. A decoder that meets a
// value nested a million levels deep recurses a million times and ends
// the process with a stack overflow (pdata's OTLP/JSON decoder has no
// bound; encoding/json's is 10 000); Check refuses such a text first, with
// a scan of its brackets that keeps no stack.
package jsonlimit

import (
	"bytes"
	"fmt"
)

// The limits. The byte bounds of each input are named beside its reader
// (otlp.MaxLine, otlp.MaxDocument, otlp.DefaultMaxBody, the runtime's
// body bound) and listed here so the whole picture is in one place:
//
//	nesting of any JSON input       MaxDepth levels
//	OTLP/HTTP request body          32 MiB, compressed and decompressed
//	OTLP JSON Lines line            64 MiB
//	OTLP/JSON or protobuf document  512 MiB
//	Temporal history file           512 MiB (temporal.MaxFile)
//	spans in one OTLP/HTTP request  MaxRequestSpans
//	an attribute kept from a span   4 KiB (arguments and results whole)
//	control and runtime bodies      4 MiB
//	simulated services' bodies      1 MiB (world.DefaultMaxBody)
const (
	// MaxDepth is how deeply a JSON text may nest arrays and objects: the
	// bound pdata's protobuf decoder keeps for nested attribute values.
	// An OTLP span nests 8 levels before its attributes' values begin, a
	// Temporal history about 10.
	MaxDepth = 100
	// MaxRequestSpans is how many spans one OTLP/HTTP request may carry:
	// an exporter sends batches of 512 by default. (A file's spans are
	// bounded by its bytes: a document is read whole, JSON Lines stream.)
	MaxRequestSpans = 100_000
)

// DepthError is a JSON text nested deeper than the limit.
type DepthError struct {
	Max    int   // the limit
	Offset int64 // 0-based byte offset of the bracket past the limit
	Line   int   // 1-based line of that bracket
}

func (e *DepthError) Error() string {
	where := fmt.Sprintf("byte %d", e.Offset+1)
	if e.Line > 1 {
		where = fmt.Sprintf("line %d, %s", e.Line, where)
	}
	return fmt.Sprintf("JSON nested deeper than %d levels (at %s): retrylab refuses it unread", e.Max, where)
}

// Check returns a *DepthError if data nests arrays and objects deeper
// than MaxDepth, nil otherwise. It does not validate the JSON: brackets
// are counted outside strings, and what is not JSON is left to the
// decoder that follows.
func Check(data []byte) error { return CheckDepth(data, MaxDepth) }

// CheckDepth is Check with another limit.
func CheckDepth(data []byte, max int) error {
	depth, line := 0, 1
	for i := 0; i < len(data); {
		switch data[i] {
		case '"':
			i = stringEnd(data, i+1)
			continue
		case '[', '{':
			if depth++; depth > max {
				return &DepthError{Max: max, Offset: int64(i), Line: line}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '\n':
			line++
		}
		i++
	}
	return nil
}

// stringEnd returns the offset just past the quote that closes the string
// whose content starts at i, or len(data) if it does not close.
func stringEnd(data []byte, i int) int {
	for i < len(data) {
		rest := data[i:]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			return len(data)
		}
		b := bytes.IndexByte(rest[:q], '\\')
		if b < 0 {
			return i + q + 1
		}
		i += b + 2 // the backslash and the byte it escapes
	}
	return len(data)
}
