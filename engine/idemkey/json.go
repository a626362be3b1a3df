package idemkey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// CanonicalJSON parses the JSON text data and returns [Canonical] of the
// decoded value, i.e. what Python's json.dumps(json.loads(data),
// sort_keys=True) prints.
//
// Numbers are decoded with json.Decoder.UseNumber, so 1 stays an integer and
// 1.0 stays a float, as with Python's json.loads. Exactly one JSON value is
// accepted: trailing data other than whitespace is an error. Invalid UTF-8
// is an error, and so is a \u escape of an unpaired UTF-16 surrogate, which
// Python would keep but Go strings cannot represent. When an object has
// duplicate keys the last one wins, as in Python. A float literal too large
// for float64 (such as 1e400) is an error.
func CanonicalJSON(data []byte) ([]byte, error) {
	if out, ok := canonicalFlat(data); ok {
		return out, nil
	}
	return canonicalDecoded(data)
}

// canonicalDecoded is CanonicalJSON the long way: decode into Go values,
// then encode them (Canonical).
func canonicalDecoded(data []byte) ([]byte, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("idemkey: canonical JSON: %w: input is not valid UTF-8", errInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("idemkey: canonical JSON: decode: %w", err)
	}
	off := dec.InputOffset()
	if rest := bytes.TrimLeft(data[off:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("idemkey: canonical JSON: %w: trailing data at offset %d", errInvalid, len(data)-len(rest))
	}
	if err := checkSurrogates(data); err != nil {
		return nil, fmt.Errorf("idemkey: canonical JSON: %w", err)
	}
	return Canonical(v)
}

// checkSurrogates reports an error if a string in the syntactically valid
// JSON text data contains a \u escape of a surrogate that is not part of a
// high-low pair. encoding/json silently replaces those with U+FFFD, which
// would make the output differ from Python's.
func checkSurrogates(data []byte) error {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if data[i+1] != 'u' {
				i++ // skip the escaped character
				continue
			}
			r := hex4(data[i+2 : i+6])
			i += 5 // now at the last hex digit
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if i+6 < len(data) && data[i+1] == '\\' && data[i+2] == 'u' {
					if lo := hex4(data[i+3 : i+7]); lo >= 0xdc00 && lo < 0xe000 {
						i += 6
						continue
					}
				}
				return fmt.Errorf("%w: unpaired high surrogate \\u%04x in string", errInvalid, r)
			case r >= 0xdc00 && r < 0xe000:
				return fmt.Errorf("%w: unpaired low surrogate \\u%04x in string", errInvalid, r)
			}
		}
	}
	return nil
}

// hex4 decodes four hex digits, already validated by the JSON decoder.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// flatField is one member of a flat object: its key's bytes (between the
// quotes) and its value's text.
type flatField struct{ key, val []byte }

// canonicalFlat is CanonicalJSON's fast path for a tool call's usual
// arguments: one object whose keys are strings and whose values are
// strings, integers, true, false or null, its strings printable ASCII
// without escapes. Such text is canonical once its members are sorted and
// spaced as Python spaces them: no value needs decoding. It reports false
// for anything else (nesting, escapes, other characters, floats, "-0",
// duplicate keys, bad syntax), which canonicalDecoded then handles, so the
// two always agree (FuzzCanonicalJSON checks it); it decodes into no Go
// values, which is most of the long way's cost.
func canonicalFlat(data []byte) ([]byte, bool) {
	var buf [16]flatField
	fields := buf[:0]
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		if skipSpace(data, i+1) != len(data) {
			return nil, false
		}
		return []byte("{}"), true
	}
	n := 2 // the braces
	for {
		key, j, ok := flatString(data, i)
		if !ok {
			return nil, false
		}
		j = skipSpace(data, j)
		if j >= len(data) || data[j] != ':' {
			return nil, false
		}
		j = skipSpace(data, j+1)
		end, ok := flatValue(data, j)
		if !ok {
			return nil, false
		}
		fields = append(fields, flatField{key: key, val: data[j:end]})
		n += len(key) + 4 + (end - j) + 2 // "key": value,_
		j = skipSpace(data, end)
		if j >= len(data) {
			return nil, false
		}
		if data[j] == '}' {
			if skipSpace(data, j+1) != len(data) {
				return nil, false
			}
			break
		}
		if data[j] != ',' {
			return nil, false
		}
		i = skipSpace(data, j+1)
	}
	slices.SortFunc(fields, func(a, b flatField) int { return bytes.Compare(a.key, b.key) })
	out := make([]byte, 0, n)
	out = append(out, '{')
	for k, f := range fields {
		if k > 0 {
			if bytes.Equal(fields[k-1].key, f.key) {
				return nil, false // a duplicate key: the last one wins, the long way
			}
			out = append(out, ", "...)
		}
		out = append(out, '"')
		out = append(out, f.key...)
		out = append(out, `": `...)
		out = append(out, f.val...)
	}
	return append(out, '}'), true
}

// skipSpace skips JSON whitespace from i.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// flatString reads a string of printable ASCII without escapes at i: its
// bytes between the quotes, and where it ends.
func flatString(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// flatValue reads a value canonical as written at i (a flat string, an
// integer other than -0, true, false or null) and says where it ends.
func flatValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		_, end, ok := flatString(data, i)
		return end, ok
	case c == 't':
		return i + 4, bytes.HasPrefix(data[i:], []byte("true"))
	case c == 'f':
		return i + 5, bytes.HasPrefix(data[i:], []byte("false"))
	case c == 'n':
		return i + 4, bytes.HasPrefix(data[i:], []byte("null"))
	case c == '-' || isDigit(c):
		j := i
		if c == '-' {
			j++
		}
		switch {
		case j < len(data) && data[j] == '0':
			if c == '-' {
				return 0, false // -0 prints as 0
			}
			j++
		case j < len(data) && data[j] >= '1' && data[j] <= '9':
			for j < len(data) && isDigit(data[j]) {
				j++
			}
		default:
			return 0, false
		}
		if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E' || isDigit(data[j])) {
			return 0, false // a float (or a leading zero): the long way
		}
		return j, true
	}
	return 0, false
}
