package otlp

import (
	"encoding/binary"
	"math/bits"

	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// jsonWalk walks JSON text: white space, objects and arrays, their keys
// and strings taken as they are written. jsonDecoder reads OTLP/JSON with
// it, and docPlan finds a document's spans with it. What it does not take
// (an escaped or empty key, a control character in a string, nesting
// deeper than jsonlimit.MaxDepth, a misplaced byte) is errJSONDecline:
// both leave such text to pdata, whose error messages stay.
type jsonWalk struct {
	doc        []byte
	pos, depth int
	// keyAt is where the key of the member object is at starts (its
	// quote), while member runs.
	keyAt int
}

// ws skips white space as JSON (and json-iterator) knows it.
func (w *jsonWalk) ws() {
	for w.pos < len(w.doc) {
		switch w.doc[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// peek is the next byte that is not white space, 0 at the end.
func (w *jsonWalk) peek() byte {
	w.ws()
	if w.pos < len(w.doc) {
		return w.doc[w.pos]
	}
	return 0
}

// open enters the object or array that open starts, one level deeper.
func (w *jsonWalk) open(c byte) error {
	if w.peek() != c {
		return errJSONDecline
	}
	w.pos++
	if w.depth++; w.depth > jsonlimit.MaxDepth {
		return errJSONDecline
	}
	return nil
}

// object calls member with each key of the object at w.pos, positioned at
// its value, which member must read. Keys are taken raw: an escaped one,
// or an empty one (the end of an object to pdata), is declined.
func (w *jsonWalk) object(member func(key []byte) error) error {
	if err := w.open('{'); err != nil {
		return err
	}
	if w.peek() == '}' {
		w.pos++
		w.depth--
		return nil
	}
	for {
		w.ws()
		w.keyAt = w.pos
		raw, escaped, err := w.rawString()
		if err != nil {
			return err
		}
		if escaped || len(raw) == 0 || w.peek() != ':' {
			return errJSONDecline
		}
		w.pos++
		w.ws()
		if err := member(raw); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.pos++
		case '}':
			w.pos++
			w.depth--
			return nil
		default:
			return errJSONDecline
		}
	}
}

// array calls elem for each element of the array at w.pos, positioned at
// it.
func (w *jsonWalk) array(elem func() error) error {
	if err := w.open('['); err != nil {
		return err
	}
	if w.peek() == ']' {
		w.pos++
		w.depth--
		return nil
	}
	for {
		w.ws()
		if err := elem(); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.pos++
		case ']':
			w.pos++
			w.depth--
			return nil
		default:
			return errJSONDecline
		}
	}
}

// rawString reads a string's bytes as they are written, and whether they
// hold an escape. A control character is declined: json-iterator refuses
// one before the first escape and takes one after it.
func (w *jsonWalk) rawString() (raw []byte, escaped bool, err error) {
	if w.peek() != '"' {
		return nil, false, errJSONDecline
	}
	start := w.pos + 1
	for i := start; ; {
		// To the next quote, backslash or control character: eight
		// bytes at a time, then the last few one by one.
		for i+8 <= len(w.doc) {
			if m := specials(binary.LittleEndian.Uint64(w.doc[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(w.doc) && w.doc[i] != '"' && w.doc[i] != '\\' && w.doc[i] >= ' ' {
			i++
		}
		if i >= len(w.doc) {
			return nil, false, errJSONDecline
		}
		switch w.doc[i] {
		case '"':
			w.pos = i + 1
			return w.doc[start:i], escaped, nil
		case '\\':
			escaped = true
			i += 2 // the escaped byte; \u's digits are read by unescape
		default:
			return nil, false, errJSONDecline
		}
	}
}

// specials marks the bytes of w (eight of a string, the first in the low
// bits) that are a quote, a backslash or below a space, with their high
// bit: a byte xored with its own is zero, and subtracting 0x20 from one
// below it borrows. Marks above the first may be wrong (a borrow carries
// on); the first is exact.
func specials(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return zero(w^(ones*'"')) | zero(w^(ones*'\\')) | (w-ones*' ')&^w&highs
}
