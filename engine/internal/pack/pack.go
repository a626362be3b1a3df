// Package pack is the compact binary encoding of the world's records (outbox
// messages, stored keys, CRM rows and writes) and of the journals: the
// building blocks their owners (engine/world, engine/history) put together
// field by field. A record so encoded starts with Magic, a byte no JSON text
// starts with, so a reader tells it from the JSON objects older databases
// hold and reads both. The primitives the blocks are made of (primitives.go:
// numbers and bytes read with a sticky error, hex, times, JSON as
// encoding/json stores it) serve engine/history's event and execution
// encodings too, which are formats of their own.
//
// The blocks:
//
//   - Numbers are varints (signed ones zigzag).
//   - A string is a uvarint v. When v is even, it is entry v>>1 of the
//     frozen table below. Otherwise n = v>>3 and v&7 says: 1 n bytes of
//     text; 3 the n-th string the record holds before it (its refs: the
//     seeds the reader is given, such as the record's key, then every
//     string written as text or with a prefix); 5 a prefix and a tail, with
//     a byte x: x>>3 is the prefix's place in the frozen prefixes below, x&7
//     the tail's kind: 0 n bytes written as lowercase hex; 1 ref n; 2 what
//     follows the first '_' of ref n ("inv_" + the "00D9ZK7Z" of
//     "exec_00D9ZK7Z"); 3 n bytes of text; 4 n characters of Crockford's
//     base32 alphabet (0-9A-Z without I, L, O, U: the execution ids), five
//     bits each, in (5n+7)/8 bytes. The writer takes the shortest form.
//   - A time is a uvarint h: h&3 = 0 the zero time, 1 the record's previous
//     time again, 2 Unix nanoseconds as 8 little-endian bytes, 3 seconds and
//     nanoseconds as varints (outside 1678-2262); h>>2 = 1 when the zone
//     offset (seconds, varint) follows, which encoding/json's text of it
//     keeps.
//   - A JSON value is kept byte for byte as encoding/json writes a
//     RawMessage (compacted, <, > and & escaped): a uvarint t, with t&3 = 0 a
//     string (its text between the quotes, escapes and all, as a string
//     above), 1 a literal or anything else (its text), 2 an object of t>>2
//     members (name as a string, then the value), 3 an array of t>>2 values.
//
// A record's optional fields are declared once, in a Fields table
// (fields.go): the table gives each field its bit and its place, and both
// writes and reads the record's bits and values.
package pack

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Magic starts every packed record.
const Magic = 0xC3

// Is reports whether a stored value is packed (rather than JSON).
func Is(v []byte) bool { return len(v) > 0 && v[0] == Magic }

// table holds the strings stored as an index. It is part of the format:
// entries are only ever appended, never changed, removed or reordered. The
// first 64 take one byte.
var table = [...]string{
	// 0: the empty string, also the prefix of plain hex strings
	"",
	// 1-: steps, tools, endpoints, CRM operations
	"step-1", "step-2", "step-3", "step-4", "step-5", "step-6", "step-7", "step-8",
	"send_invoice_email", "record_invoice", "open_ticket", "lookup_customer", "save_customer",
	"mail POST /v1/send", "crm POST /v1/records", "mail", "crm", "upsert", "create", "create-existing",
	// 21-: names and values of bodies, responses and CRM fields
	"to", "subject", "body", "\u2026", "message_id", "deduplicated", "idempotency_key", "status", "sent",
	"id", "version", "created", "fields", "existing", "customer", "invoice", "priority", "low",
	"true", "false", "null", "0", "1", "2", "3",
	"type", "title", "detail", "urn:retrylab:problem:server-error", "Internal Server Error",
	// 51-: the catalogue's words
	"jordan@acme.dev", "Your June invoice",
	"January", "February", "March", "April", "May", "June", "July", "August",
	"September", "October", "November", "December",
}

// prefixes are the prefixes a string may be written after, by their place
// in this list ("" only before hex and base32). It is part of the format,
// as the table is.
var prefixes = [...]string{"", "ik_", "msg_", "rec_", "inv_", "exec_", "crm PUT /v1/records/", "Your ", "ticket_", "cus_"}

// tableIndex finds a string's table entry; built once, never changed.
var tableIndex = func() map[string]int {
	m := make(map[string]int, len(table))
	for i, s := range table {
		m[s] = i
	}
	return m
}()

// String kinds: v&7 of a string's uvarint when v is odd.
const (
	kText   = 1
	kRef    = 3
	kPrefix = 5
)

// Tail kinds of a string written after a prefix: x&7 of its byte x.
const (
	tHex = iota
	tRef
	tSuffix
	tText
	tBase32
	tLast
)

// base32 is Crockford's alphabet, which execution ids are written in.
const base32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// base32Value maps a character to its value in base32, or 0xff.
var base32Value = func() (v [256]byte) {
	for i := range v {
		v[i] = 0xff
	}
	for i := 0; i < len(base32); i++ {
		v[base32[i]] = byte(i)
	}
	return v
}()

// packBase32 packs base32 text five bits a character, or reports false.
func packBase32(s string) ([]byte, bool) {
	out := make([]byte, (5*len(s)+7)/8)
	for i := 0; i < len(s); i++ {
		v := base32Value[s[i]]
		if v == 0xff {
			return nil, false
		}
		for bit := range 5 {
			if v>>(4-bit)&1 != 0 {
				pos := 5*i + bit
				out[pos/8] |= 0x80 >> (pos % 8)
			}
		}
	}
	return out, true
}

// unpackBase32 gives back n characters packed by packBase32; the unused
// bits must be zero.
func unpackBase32(raw []byte, n int) (string, bool) {
	out := make([]byte, n)
	for i := range n {
		var v byte
		for bit := range 5 {
			pos := 5*i + bit
			v = v<<1 | raw[pos/8]>>(7-pos%8)&1
		}
		out[i] = base32[v]
	}
	for pos := 5 * n; pos < 8*len(raw); pos++ {
		if raw[pos/8]>>(7-pos%8)&1 != 0 {
			return "", false
		}
	}
	return string(out), true
}

// Writer writes one packed record.
type Writer struct {
	b        []byte
	refs     []string
	prev     time.Time
	hasPrev  bool
	scratch  []byte
	scratch2 []byte
}

// NewWriter starts a record. The seeds are strings the reader also knows
// (the record's key, say): the record may refer to them.
func NewWriter(seeds ...string) *Writer {
	w := &Writer{b: make([]byte, 1, 96)}
	w.b[0] = Magic
	w.refs = append(w.refs, seeds...)
	return w
}

// Bytes is the record written so far.
func (w *Writer) Bytes() []byte { return w.b }

// Uvarint writes an unsigned number.
func (w *Writer) Uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

// Varint writes a signed number.
func (w *Writer) Varint(v int64) { w.b = binary.AppendVarint(w.b, v) }

// Str writes a string.
func (w *Writer) Str(s string) {
	if i, ok := tableIndex[s]; ok {
		w.Uvarint(uint64(i) << 1)
		return
	}
	if i := w.ref(s); i >= 0 {
		w.Uvarint(strTag(kRef, uint64(i)))
		return
	}
	best := binary.AppendUvarint(w.scratch[:0], strTag(kText, uint64(len(s))))
	best = append(best, s...)
	for place, prefix := range prefixes {
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok {
			continue
		}
		try := func(tail, n uint64, bytes string) {
			c := binary.AppendUvarint(w.scratch2[:0], strTag(kPrefix, n))
			c = append(c, byte(place<<3)|byte(tail))
			c = append(c, bytes...)
			if len(c) < len(best) {
				best, c = c, best
			}
			w.scratch2 = c
		}
		if len(rest) >= 2 && len(rest)%2 == 0 && IsLowerHex(rest) {
			raw := AppendHexBytes(make([]byte, 0, len(rest)/2), rest)
			try(tHex, uint64(len(raw)), string(raw))
		}
		if raw, ok := packBase32(rest); ok && len(rest) > 0 {
			try(tBase32, uint64(len(rest)), string(raw))
		}
		if prefix == "" {
			continue
		}
		if i := w.ref(rest); i >= 0 {
			try(tRef, uint64(i), "")
		}
		for i, r := range w.refs {
			if _, after, ok := strings.Cut(r, "_"); ok && after == rest {
				try(tSuffix, uint64(i), "")
				break
			}
		}
		try(tText, uint64(len(rest)), rest)
	}
	w.b = append(w.b, best...)
	w.scratch = best
	w.refs = append(w.refs, s)
}

// AppendString appends a string's packed form, without seeds or refs, to
// b: a self-delimiting form (no string's form is the start of another's),
// so a collection's keys may begin with it. ReadString reads it back.
func AppendString(b []byte, s string) []byte {
	w := Writer{}
	w.Str(s)
	return append(b, w.b...)
}

// ReadString reads a string AppendString wrote at the start of b and
// returns what follows it.
func ReadString(b []byte) (string, []byte, error) {
	r := Reader{Cursor: NewCursor(b, ErrDamaged)}
	s := r.Str()
	return s, r.b, r.err
}

// strTag is the uvarint that starts a string of a kind other than a table
// entry.
func strTag(kind, n uint64) uint64 { return n<<3 | kind }

func (w *Writer) ref(s string) int {
	for i, r := range w.refs {
		if r == s {
			return i
		}
	}
	return -1
}

// Time writes a time as encoding/json's text of it keeps it: the instant
// and the zone offset.
func (w *Writer) Time(t time.Time) {
	_, offset := t.Zone()
	switch {
	case t.IsZero():
		w.Uvarint(0)
		return
	case w.hasPrev && t.Equal(w.prev) && sameOffset(t, w.prev):
		w.Uvarint(1)
		return
	}
	w.prev, w.hasPrev = t, true
	var zone uint64
	if offset != 0 {
		zone = 1
	}
	if !FitsNanos(t) {
		w.Uvarint(zone<<2 | 3)
		w.b = AppendWideTime(w.b, t)
	} else {
		w.Uvarint(zone<<2 | 2)
		w.b = AppendNanos(w.b, t)
	}
	if zone != 0 {
		w.Varint(int64(offset))
	}
}

func sameOffset(a, b time.Time) bool {
	_, x := a.Zone()
	_, y := b.Zone()
	return x == y
}

// JSON writes a JSON value as encoding/json stores a RawMessage in the text
// it marshals: compacted, with <, > and & escaped. It refuses what is not
// JSON, as encoding/json does.
func (w *Writer) JSON(v json.RawMessage) error {
	text, err := StoredJSON(v)
	if err != nil {
		return err
	}
	mark, refs, prev, hasPrev := len(w.b), len(w.refs), w.prev, w.hasPrev
	if rest, ok := w.value(text, 0); ok && len(rest) == 0 {
		return nil
	}
	// Not the JSON this writer takes apart: keep its text.
	w.b, w.refs, w.prev, w.hasPrev = w.b[:mark], w.refs[:refs], prev, hasPrev
	w.Uvarint(1)
	w.Str(string(text))
	return nil
}

// maxDepth bounds the nesting taken apart; deeper values are kept as text.
const maxDepth = 32

// value writes the compact JSON value at the start of b and returns what
// follows it; ok is false when b does not start with one this writer can
// write back byte for byte.
func (w *Writer) value(b []byte, depth int) (rest []byte, ok bool) {
	if len(b) == 0 || depth > maxDepth {
		return nil, false
	}
	switch b[0] {
	case '"':
		s, rest, ok := jsonString(b)
		if !ok {
			return nil, false
		}
		w.Uvarint(0)
		w.Str(s)
		return rest, true
	case '{', '[':
		close := byte('}')
		kind := uint64(2)
		if b[0] == '[' {
			close, kind = ']', 3
		}
		// Count the members first: the count comes before them.
		n, ok := countItems(b, depth)
		if !ok {
			return nil, false
		}
		w.Uvarint(uint64(n)<<2 | kind)
		rest = b[1:]
		for i := range n {
			if i > 0 {
				rest = rest[1:] // the ',' countItems saw
			}
			if kind == 2 {
				name, after, ok := jsonString(rest)
				if !ok || len(after) == 0 || after[0] != ':' {
					return nil, false
				}
				w.Str(name)
				rest = after[1:]
			}
			if rest, ok = w.value(rest, depth+1); !ok {
				return nil, false
			}
		}
		if len(rest) == 0 || rest[0] != close {
			return nil, false
		}
		return rest[1:], true
	}
	end := literalEnd(b)
	if end == 0 {
		return nil, false
	}
	w.Uvarint(1)
	w.Str(string(b[:end]))
	return b[end:], true
}

// countItems counts the members of the object or array at the start of b.
func countItems(b []byte, depth int) (int, bool) {
	probe := Writer{}
	rest := b[1:]
	if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
		return 0, true
	}
	n := 0
	for {
		if b[0] == '{' {
			_, after, ok := jsonString(rest)
			if !ok || len(after) == 0 || after[0] != ':' {
				return 0, false
			}
			rest = after[1:]
		}
		var ok bool
		if rest, ok = probe.skip(rest, depth+1); !ok {
			return 0, false
		}
		probe.b = probe.b[:0]
		n++
		if len(rest) == 0 {
			return 0, false
		}
		if rest[0] != ',' {
			return n, true
		}
		rest = rest[1:]
	}
}

// skip finds the end of the JSON value at the start of b.
func (w *Writer) skip(b []byte, depth int) ([]byte, bool) {
	if len(b) == 0 || depth > maxDepth {
		return nil, false
	}
	switch b[0] {
	case '"':
		_, rest, ok := jsonString(b)
		return rest, ok
	case '{', '[':
		close := byte('}')
		if b[0] == '[' {
			close = ']'
		}
		n, ok := countItems(b, depth)
		if !ok {
			return nil, false
		}
		rest := b[1:]
		for i := range n {
			if i > 0 {
				rest = rest[1:]
			}
			if b[0] == '{' {
				_, after, _ := jsonString(rest)
				rest = after[1:]
			}
			rest, _ = w.skip(rest, depth+1)
		}
		if len(rest) == 0 || rest[0] != close {
			return nil, false
		}
		return rest[1:], true
	}
	end := literalEnd(b)
	return b[end:], end > 0
}

// literalEnd is the length of the literal (a number, true, false, null)
// at the start of b: up to the first byte that ends one.
func literalEnd(b []byte) int {
	end := 0
	for end < len(b) && !strings.ContainsRune(",}]:{[\" \t\r\n", rune(b[end])) {
		end++
	}
	return end
}

// jsonString reads the JSON string at the start of b: its text between the
// quotes as written (escapes kept), and what follows.
func jsonString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return string(b[1:i]), b[i+1:], true
		}
	}
	return "", nil, false
}

// ErrDamaged is every reason a packed record is refused.
var ErrDamaged = errors.New("damaged packed record")

// Reader reads one packed record; the first problem sticks (Err).
type Reader struct {
	Cursor
	refs    []string
	prev    time.Time
	hasPrev bool
}

// NewReader starts reading a record written with the same seeds. It fails
// (Err) when v is not packed.
func NewReader(v []byte, seeds ...string) *Reader {
	// Room for the strings of a usual record up front: the list grown one
	// append at a time cost four allocations a record.
	r := &Reader{Cursor: NewCursor(nil, ErrDamaged), refs: append(make([]string, 0, len(seeds)+16), seeds...)}
	if !Is(v) {
		r.Fail()
		return r
	}
	r.b = v[1:]
	return r
}

func (r *Reader) tableEntry(i uint64) string {
	if i >= uint64(len(table)) {
		r.Fail()
		return ""
	}
	return table[i]
}

func (r *Reader) refAt(i uint64) string {
	if i >= uint64(len(r.refs)) {
		r.Fail()
		return ""
	}
	return r.refs[i]
}

// Str reads a string.
func (r *Reader) Str() string {
	v := r.Uvarint()
	if r.err != nil {
		return ""
	}
	if v&1 == 0 {
		return r.tableEntry(v >> 1)
	}
	n := v >> 3
	var s string
	switch v & 7 {
	case kRef:
		return r.refAt(n)
	case kText:
		s = string(r.Next(n))
	case kPrefix:
		x := r.Next(1)
		if r.err != nil || int(x[0]>>3) >= len(prefixes) || x[0]&7 >= tLast {
			r.Fail()
			return ""
		}
		p := prefixes[x[0]>>3]
		switch x[0] & 7 {
		case tHex:
			raw := r.Next(n)
			s = string(AppendHexText(append(make([]byte, 0, len(p)+2*len(raw)), p...), raw))
		case tBase32:
			if n == 0 || n > uint64(8*len(r.b)/5) {
				r.Fail()
				return ""
			}
			text, ok := unpackBase32(r.Next((5*n+7)/8), int(n))
			if !ok {
				r.Fail()
			}
			s = p + text
		case tRef:
			s = p + r.refAt(n)
		case tSuffix:
			_, after, ok := strings.Cut(r.refAt(n), "_")
			if !ok {
				r.Fail()
			}
			s = p + after
		default:
			s = p + string(r.Next(n))
		}
	default:
		r.Fail()
	}
	if r.err != nil {
		return ""
	}
	r.refs = append(r.refs, s)
	return s
}

// Time reads a time.
func (r *Reader) Time() time.Time {
	h := r.Uvarint()
	if r.err != nil {
		return time.Time{}
	}
	var t time.Time
	switch h & 3 {
	case 0:
		if h != 0 {
			r.Fail()
		}
		return time.Time{}
	case 1:
		if h != 1 || !r.hasPrev {
			r.Fail()
		}
		return r.prev
	case 2:
		t = r.Nanos()
	case 3:
		t = r.WideTime()
	}
	switch h >> 2 {
	case 0:
	case 1:
		off := r.Varint()
		if !ValidOffset(off) {
			r.Fail()
			break
		}
		t = InZone(t, off)
	default:
		r.Fail()
	}
	if r.err != nil {
		return time.Time{}
	}
	r.prev, r.hasPrev = t, true
	return t
}

// JSON reads a JSON value.
func (r *Reader) JSON() json.RawMessage {
	out := r.value(nil, 0)
	if r.err != nil || len(out) == 0 || !json.Valid(out) {
		r.Fail()
		return nil
	}
	return json.RawMessage(out)
}

func (r *Reader) value(out []byte, depth int) []byte {
	t := r.Uvarint()
	if r.err != nil || depth > maxDepth {
		r.Fail()
		return nil
	}
	switch t & 3 {
	case 0:
		out = append(out, '"')
		out = append(out, r.Str()...)
		return append(out, '"')
	case 1:
		if t != 1 {
			r.Fail()
			return nil
		}
		return append(out, r.Str()...)
	}
	n := t >> 2
	if n > uint64(len(r.b)) {
		r.Fail()
		return nil
	}
	open, close := byte('{'), byte('}')
	if t&3 == 3 {
		open, close = '[', ']'
	}
	out = append(out, open)
	for i := range n {
		if r.err != nil {
			return nil
		}
		if i > 0 {
			out = append(out, ',')
		}
		if open == '{' {
			out = append(out, '"')
			out = append(out, r.Str()...)
			out = append(out, '"', ':')
		}
		out = r.value(out, depth+1)
	}
	return append(out, close)
}
