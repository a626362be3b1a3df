package pack

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"time"
)

// The primitives below are what every compact encoding of the engine is
// made of: this package's packed records, and engine/history's events and
// execution records (formats of their own, older than this one, with their
// own string forms and tables). One copy of each, so the encodings read and
// refuse damage the same way.

// Index maps each entry of a string table to its place; built once by the
// table's owner, never changed.
func Index(table []string) map[string]int {
	m := make(map[string]int, len(table))
	for i, s := range table {
		m[s] = i
	}
	return m
}

// Bits gathers the field bits a record starts with.
type Bits uint64

// Set sets bit when the field is present.
func (b *Bits) Set(bit uint64, present bool) {
	if present {
		*b |= Bits(bit)
	}
}

// IsLowerHex reports whether s is lowercase hex digits only.
func IsLowerHex[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// AppendHexBytes appends the bytes that lowercase hex text h (an even
// number of digits: IsLowerHex) spells.
func AppendHexBytes[S ~string | ~[]byte](b []byte, h S) []byte {
	for i := 0; i+1 < len(h); i += 2 {
		b = append(b, unhex(h[i])<<4|unhex(h[i+1]))
	}
	return b
}

// AppendHexText appends raw as lowercase hex text.
func AppendHexText(b, raw []byte) []byte {
	for _, c := range raw {
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

const hexDigits = "0123456789abcdef"

// StoredJSON is v as encoding/json stores a RawMessage in the text it
// marshals: compacted, with <, > and & escaped. It refuses what is not
// JSON, as encoding/json does.
func StoredJSON(v json.RawMessage) ([]byte, error) {
	var c, h bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return nil, err
	}
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes(), nil
}

// FitsNanos reports whether t is within what int64 Unix nanoseconds hold
// (the years 1678 to 2261): AppendNanos's form, not AppendWideTime's.
func FitsNanos(t time.Time) bool {
	y := t.Year()
	return y >= 1678 && y <= 2261
}

// AppendNanos appends t's Unix nanoseconds as 8 little-endian bytes
// (Cursor.Nanos). t must FitsNanos.
func AppendNanos(b []byte, t time.Time) []byte {
	return binary.LittleEndian.AppendUint64(b, uint64(t.UnixNano()))
}

// AppendWideTime appends any t as its Unix seconds and nanoseconds, as
// varints (Cursor.WideTime).
func AppendWideTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// ValidOffset reports whether a stored zone offset (seconds east of UTC)
// is one a writer stores: not 0 (UTC is stored as no offset) and within a
// day.
func ValidOffset(off int64) bool {
	return off != 0 && off >= -24*3600 && off <= 24*3600
}

// InZone puts t in the zone of offset off as encoding/json reads a time's
// offset: the local zone if it has that offset at that time, else a zone
// without a name.
func InZone(t time.Time, off int64) time.Time {
	if _, lo := t.In(time.Local).Zone(); int64(lo) == off {
		return t.In(time.Local)
	}
	return t.In(time.FixedZone("", int(off)))
}

// Cursor reads the numbers and bytes of one record front to back. The
// first problem sticks: it is reported as the damage error the cursor was
// made with (Err), and every read after it gives zero values.
type Cursor struct {
	b      []byte
	err    error
	damage error
}

// NewCursor reads b, reporting a problem as damage.
func NewCursor(b []byte, damage error) Cursor { return Cursor{b: b, damage: damage} }

// Left is how many bytes are still to be read: a count read from the
// record cannot honestly exceed it.
func (c *Cursor) Left() int { return len(c.b) }

// Err is the first problem met, or nil.
func (c *Cursor) Err() error { return c.err }

// Done is Err, or the damage error when bytes are left over.
func (c *Cursor) Done() error {
	if c.err == nil && len(c.b) != 0 {
		c.Fail()
	}
	return c.err
}

// Fail marks the record damaged: its reader found a value it cannot hold.
func (c *Cursor) Fail() {
	if c.err == nil {
		c.err = c.damage
	}
	c.b = nil
}

// Bits reads the field bits a record (or a part of one) starts with; a
// bit at or past last, a field the reader does not know, marks the record
// damaged.
func (c *Cursor) Bits(last uint64) Bits {
	b := c.Uvarint()
	if b >= last {
		c.Fail()
	}
	return Bits(b)
}

// Uvarint reads an unsigned number.
func (c *Cursor) Uvarint() uint64 {
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.Fail()
		return 0
	}
	c.b = c.b[n:]
	return v
}

// Varint reads a signed number.
func (c *Cursor) Varint() int64 {
	v, n := binary.Varint(c.b)
	if n <= 0 {
		c.Fail()
		return 0
	}
	c.b = c.b[n:]
	return v
}

// Int reads a signed number that must fit an int.
func (c *Cursor) Int() int {
	v := c.Varint()
	if v < math.MinInt || v > math.MaxInt {
		c.Fail()
		return 0
	}
	return int(v)
}

// Next reads the next n bytes (the record's own, not a copy).
func (c *Cursor) Next(n uint64) []byte {
	if n > uint64(len(c.b)) {
		c.Fail()
		return nil
	}
	out := c.b[:n:n]
	c.b = c.b[n:]
	return out
}

// Nanos reads what AppendNanos wrote, in UTC.
func (c *Cursor) Nanos() time.Time {
	n := c.Next(8)
	if c.err != nil {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(n))).UTC()
}

// WideTime reads what AppendWideTime wrote, in UTC.
func (c *Cursor) WideTime() time.Time {
	sec := c.Varint()
	ns := c.Uvarint()
	if ns >= 1e9 {
		c.Fail()
	}
	return time.Unix(sec, int64(ns)).UTC()
}
