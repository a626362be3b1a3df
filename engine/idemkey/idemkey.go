// Package idemkey derives idempotency keys for workflow steps.
//
// A key is computed exactly like this Python reference function, and is
// byte-for-byte compatible with it:
//
//	def idempotency_key(execution_id: str, step_id: str, args: dict) -> str:
//	    canonical = json.dumps(args, sort_keys=True)
//	    raw = f"{execution_id}:{step_id}:{canonical}"
//	    return "ik_" + hashlib.sha256(raw.encode()).hexdigest()[:8]
//
// The heart of the package is [Canonical], which reproduces the output of
// Python's json.dumps(v, sort_keys=True) with its default settings
// (separators ", " and ": ", ensure_ascii=True) for values built from JSON
// or YAML decoding. [CanonicalJSON] does the same starting from JSON text,
// with the same int/float distinction that Python's json.loads makes.
//
// Compatibility notes:
//
//   - Strings are escaped the way Python's ensure_ascii encoder does it:
//     every code point outside the printable ASCII range 0x20..0x7e,
//     including DEL (0x7f), is written as a lowercase \uXXXX escape (as a
//     UTF-16 surrogate pair above U+FFFF); '"' and '\' are backslash-escaped;
//     \b \f \n \r \t use their short forms; '/' is not escaped.
//   - Integers are printed like Python's int, floats like Python's float
//     repr (shortest round-trip digits, "1.0", "1e+16", "1e-05", "-0.0").
//   - Strings (and map keys) must be valid UTF-8; Python strings cannot hold
//     arbitrary bytes, so there is no compatible encoding for them.
//   - Like the reference function, the raw string joins execution, step and
//     arguments with ':' without escaping, so an execution or step id that
//     itself contains ':' can collide with another split of the same text.
//     Callers that mint ids should keep ':' out of them.
package idemkey

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultDigits is the number of hex digits of the SHA-256 digest kept by
// the reference function (32 bits). It is fine for a single workflow, but
// collisions become likely after tens of thousands of keys.
const DefaultDigits = 8

// LongDigits is the number of hex digits (128 bits) recommended for large
// runs, where the birthday bound of [DefaultDigits] is too small.
const LongDigits = 32

// minDigits and maxDigits bound the digits argument of Derive.
const (
	minDigits = 4
	maxDigits = sha256.Size * 2
)

// maxDepth bounds the nesting of containers so that cyclic Go values
// (a slice or map containing itself) give an error instead of exhausting
// the stack. It matches encoding/json's own nesting limit.
const maxDepth = 10000

var (
	errUnsupported = errors.New("unsupported type")
	errInvalid     = errors.New("invalid value")
)

// Derive returns the idempotency key of a step: "ik_" followed by the first
// digits hex digits of sha256(execution + ":" + step + ":" + Canonical(args)).
// digits must be in [4, 64]; use [DefaultDigits] for compatibility with the
// reference function and [LongDigits] for large runs. execution and step
// must be valid UTF-8.
func Derive(execution, step string, args any, digits int) (string, error) {
	canonical, err := Canonical(args)
	if err != nil {
		return "", fmt.Errorf("idemkey: derive key for step %q: %w", step, err)
	}
	return FromCanonical(execution, step, canonical, digits)
}

// FromCanonical is Derive for arguments already encoded: "ik_" + the first
// digits hex digits of sha256(execution + ":" + step + ":" + encoded).
// Derive passes the canonical form; an agent that skips canonicalisation
// passes whatever it happened to write (see Ordered), which is the mistake
// the "canonicalise before hashing" lesson shows.
func FromCanonical(execution, step string, encoded []byte, digits int) (string, error) {
	if digits < minDigits || digits > maxDigits {
		return "", fmt.Errorf("idemkey: digits must be in [%d, %d], got %d", minDigits, maxDigits, digits)
	}
	if !utf8.ValidString(execution) {
		return "", fmt.Errorf("idemkey: execution id: %w: not valid UTF-8", errInvalid)
	}
	if !utf8.ValidString(step) {
		return "", fmt.Errorf("idemkey: step id: %w: not valid UTF-8", errInvalid)
	}
	h := sha256.New()
	h.Write([]byte(execution))
	h.Write([]byte{':'})
	h.Write([]byte(step))
	h.Write([]byte{':'})
	h.Write(encoded)
	return "ik_" + hex.EncodeToString(h.Sum(nil))[:digits], nil
}

// Ordered encodes a top-level object with its keys in the given order (keys
// not listed follow in sorted order), like Python's json.dumps without
// sort_keys for a dict built in that order. Values are encoded canonically.
func Ordered(args map[string]any, order []string) ([]byte, error) {
	seen := make(map[string]bool, len(args))
	keys := make([]string, 0, len(args))
	for _, k := range order {
		if _, ok := args[k]; ok && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	rest := make([]string, 0, len(args))
	for k := range args {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	var buf []byte
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		name, err := Canonical(k)
		if err != nil {
			return nil, err
		}
		val, err := Canonical(args[k])
		if err != nil {
			return nil, fmt.Errorf("idemkey: argument %q: %w", k, err)
		}
		buf = append(append(append(buf, name...), ": "...), val...)
	}
	return append(buf, '}'), nil
}

// Canonical returns the canonical form of a Go value built from JSON or YAML
// decoding, identical to Python's json.dumps(v, sort_keys=True).
//
// Supported values are nil, bool, string, json.Number, json.RawMessage
// (canonicalised as by [CanonicalJSON]), all signed and unsigned integer
// types, float32 and float64, *big.Int, slices and arrays of supported
// values, and maps whose keys are strings (map[string]T, or map[any]T whose
// keys all hold strings, as produced by some YAML decoders). Named types
// with those underlying kinds are accepted too. A nil map, slice or pointer
// encodes as null, as encoding/json does.
//
// A json.Number must follow the JSON number grammar. It is printed as an
// integer when it contains no '.', 'e' or 'E' (so "-0" prints "0", as
// Python's int does), and as a float otherwise; a float literal too large for
// float64 is an error. A float32 is widened exactly to float64 first, since
// Python has only one float type. NaN and infinities print as NaN, Infinity
// and -Infinity, as Python does.
//
// Other types (structs, pointers, channels, functions, complex numbers,
// []byte, maps with non-string keys) give an error naming the type.
func Canonical(v any) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 64)}
	if err := e.value(v, 0); err != nil {
		return nil, fmt.Errorf("idemkey: canonical form: %w", err)
	}
	return e.buf, nil
}

// encoder accumulates the canonical output.
type encoder struct {
	buf []byte
}

// value appends the canonical form of v.
func (e *encoder) value(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d levels (cyclic value?)", errInvalid, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
		return nil
	case string:
		return e.str(x)
	case bool:
		e.bool(x)
		return nil
	case json.Number:
		return e.number(string(x))
	case json.RawMessage:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		out, err := CanonicalJSON(x)
		if err != nil {
			return fmt.Errorf("json.RawMessage: %w", err)
		}
		e.buf = append(e.buf, out...)
		return nil
	case float64:
		e.buf = appendFloat(e.buf, x)
		return nil
	case float32:
		e.buf = appendFloat(e.buf, float64(x))
		return nil
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
		return nil
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
		return nil
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
		return nil
	case *big.Int:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = x.Append(e.buf, 10)
		return nil
	case map[string]any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ", "...)
			}
			if err := e.str(k); err != nil {
				return fmt.Errorf("map key: %w", err)
			}
			e.buf = append(e.buf, ": "...)
			if err := e.value(x[k], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		return nil
	case []any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ", "...)
			}
			if err := e.value(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		return nil
	}
	return e.reflectValue(reflect.ValueOf(v), depth)
}

// reflectValue handles the types not covered by the fast paths in value:
// other integer widths, named types and generic maps and slices.
func (e *encoder) reflectValue(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Bool:
		e.bool(rv.Bool())
		return nil
	case reflect.String:
		return e.str(rv.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, rv.Int(), 10)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, rv.Uint(), 10)
		return nil
	case reflect.Float32, reflect.Float64:
		e.buf = appendFloat(e.buf, rv.Float())
		return nil
	case reflect.Interface:
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(rv.Elem().Interface(), depth)
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			// Python's json module cannot encode bytes; refuse rather than
			// guess between a list of ints and base64.
			return fmt.Errorf("%w %s: byte slices have no JSON form", errUnsupported, rv.Type())
		}
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.list(rv, depth)
	case reflect.Array:
		return e.list(rv, depth)
	case reflect.Map:
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.mapValue(rv, depth)
	}
	return fmt.Errorf("%w %s", errUnsupported, rv.Type())
}

// list appends a slice or array held in rv.
func (e *encoder) list(rv reflect.Value, depth int) error {
	e.buf = append(e.buf, '[')
	for i := range rv.Len() {
		if i > 0 {
			e.buf = append(e.buf, ", "...)
		}
		if err := e.value(rv.Index(i).Interface(), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

// mapEntry is one key/value pair of a generic map, used for sorting.
type mapEntry struct {
	key string
	val reflect.Value
}

// mapValue appends a generic map whose keys are strings, or interfaces
// holding strings.
func (e *encoder) mapValue(rv reflect.Value, depth int) error {
	keyType := rv.Type().Key()
	if keyType.Kind() != reflect.String && keyType.Kind() != reflect.Interface {
		return fmt.Errorf("%w %s: map keys must be strings", errUnsupported, rv.Type())
	}
	entries := make([]mapEntry, 0, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k := iter.Key()
		if k.Kind() == reflect.Interface {
			if k.IsNil() {
				return fmt.Errorf("%w %s: map key is nil, keys must be strings", errUnsupported, rv.Type())
			}
			k = k.Elem()
			if k.Kind() != reflect.String {
				return fmt.Errorf("%w %s: map key of type %s, keys must be strings", errUnsupported, rv.Type(), k.Type())
			}
		}
		entries = append(entries, mapEntry{key: k.String(), val: iter.Value()})
	}
	// Byte order of valid UTF-8 equals code point order, which is the order
	// Python's sort_keys uses.
	sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	e.buf = append(e.buf, '{')
	for i, en := range entries {
		if i > 0 {
			if entries[i-1].key == en.key {
				// Possible with map[any]any holding differently named
				// string types; the result would not be a valid object.
				return fmt.Errorf("%w: duplicate map key %q", errInvalid, en.key)
			}
			e.buf = append(e.buf, ", "...)
		}
		if err := e.str(en.key); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		e.buf = append(e.buf, ": "...)
		if err := e.value(en.val.Interface(), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// bool appends true or false.
func (e *encoder) bool(b bool) {
	if b {
		e.buf = append(e.buf, "true"...)
	} else {
		e.buf = append(e.buf, "false"...)
	}
}

const hexDigits = "0123456789abcdef"

// str appends s as a JSON string escaped like Python's ensure_ascii encoder.
func (e *encoder) str(s string) error {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '"' || c == '\\':
				e.buf = append(e.buf, '\\', c)
			case c >= 0x20 && c < 0x7f:
				e.buf = append(e.buf, c)
			case c == '\n':
				e.buf = append(e.buf, '\\', 'n')
			case c == '\r':
				e.buf = append(e.buf, '\\', 'r')
			case c == '\t':
				e.buf = append(e.buf, '\\', 't')
			case c == '\b':
				e.buf = append(e.buf, '\\', 'b')
			case c == '\f':
				e.buf = append(e.buf, '\\', 'f')
			default: // other control characters and DEL
				e.appendU(rune(c))
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("%w: string %q is not valid UTF-8 (byte offset %d)", errInvalid, truncate(s), i)
		}
		i += size
		if r > 0xffff {
			r -= 0x10000
			e.appendU(0xd800 + (r>>10)&0x3ff)
			e.appendU(0xdc00 + r&0x3ff)
		} else {
			e.appendU(r)
		}
	}
	e.buf = append(e.buf, '"')
	return nil
}

// appendU appends a \uXXXX escape for a code unit r <= 0xffff.
func (e *encoder) appendU(r rune) {
	e.buf = append(e.buf, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// truncate shortens s for use in error messages.
func truncate(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

// number appends a json.Number, deciding int versus float the way Python's
// json.loads does.
func (e *encoder) number(s string) error {
	if !validNumber(s) {
		return fmt.Errorf("%w: json.Number %q is not a JSON number", errInvalid, truncate(s))
	}
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			// Only overflow is possible after validNumber; Python would
			// produce Infinity, which is not valid JSON input anyway.
			return fmt.Errorf("%w: number %q: %w", errInvalid, truncate(s), err)
		}
		e.buf = appendFloat(e.buf, f)
		return nil
	}
	// Integer: the grammar already excludes leading zeros, so the only
	// normalisation Python's int() applies is "-0" -> "0".
	if s == "-0" {
		s = "0"
	}
	e.buf = append(e.buf, s...)
	return nil
}

// validNumber reports whether s matches the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// isDigit reports whether c is an ASCII decimal digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// appendFloat appends f formatted like Python's repr(float): the shortest
// digits that round-trip, in fixed notation when the decimal exponent is in
// [-4, 16) (always with a fractional part), otherwise in scientific notation
// with a signed exponent of at least two digits.
func appendFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	// Shortest round-trip digits, as d.ddde±XX.
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	neg := sci[0] == '-'
	if neg {
		sci = sci[1:]
	}
	ePos := 0
	for sci[ePos] != 'e' {
		ePos++
	}
	mantissa := sci[:ePos]
	exp, _ := strconv.Atoi(string(sci[ePos+1:])) // always well-formed
	digits := make([]byte, 0, len(mantissa))
	for _, c := range mantissa {
		if c != '.' {
			digits = append(digits, c)
		}
	}

	if neg {
		buf = append(buf, '-')
	}
	switch {
	case exp >= 16 || exp < -4:
		buf = append(buf, digits[0])
		if len(digits) > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if exp < 0 {
			buf = append(buf, '-')
			exp = -exp
		} else {
			buf = append(buf, '+')
		}
		if exp < 10 {
			buf = append(buf, '0')
		}
		buf = strconv.AppendInt(buf, int64(exp), 10)
	case exp >= 0:
		intLen := exp + 1
		if len(digits) <= intLen {
			buf = append(buf, digits...)
			for range intLen - len(digits) {
				buf = append(buf, '0')
			}
			buf = append(buf, '.', '0')
		} else {
			buf = append(buf, digits[:intLen]...)
			buf = append(buf, '.')
			buf = append(buf, digits[intLen:]...)
		}
	default: // -4 <= exp < 0
		buf = append(buf, '0', '.')
		for range -exp - 1 {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	}
	return buf
}
