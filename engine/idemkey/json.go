package idemkey

import (
	"bytes"
	"encoding/json"
	"fmt"
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
