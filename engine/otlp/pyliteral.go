package otlp

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pythonLiteral reads s as a Python literal, the repr() of a dict, list or
// tuple of strings, numbers, True, False and None (OpenInference's
// LangChain instrumentation writes a tool's input that way), and gives the
// JSON it stands for. ok is false unless all of s is such a literal with a
// dict, list or tuple outermost: plain text stays text.
func pythonLiteral(s string) (json.RawMessage, bool) {
	s = strings.TrimSpace(s)
	if s == "" || !strings.ContainsAny(s[:1], "{[(") {
		return nil, false
	}
	p := pyParser{s: s}
	var out []byte
	out, ok := p.value(out, 0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.s) || !json.Valid(out) {
		return nil, false
	}
	return out, true
}

// maxPyDepth bounds the nesting pythonLiteral follows.
const maxPyDepth = 64

// pyParser reads a Python literal, writing its JSON as it goes.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// value appends the JSON of the literal at p.i to out.
func (p *pyParser) value(out []byte, depth int) ([]byte, bool) {
	if depth > maxPyDepth {
		return out, false
	}
	p.space()
	if p.i >= len(p.s) {
		return out, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict(out, depth)
	case c == '[':
		return p.seq(out, ']', depth)
	case c == '(':
		return p.seq(out, ')', depth)
	case c == '\'' || c == '"':
		str, ok := p.str()
		if !ok {
			return out, false
		}
		return appendJSONString(out, str), true
	}
	for _, w := range []struct{ py, js string }{{"True", "true"}, {"False", "false"}, {"None", "null"}} {
		if strings.HasPrefix(p.s[p.i:], w.py) {
			p.i += len(w.py)
			return append(out, w.js...), true
		}
	}
	return p.number(out)
}

func (p *pyParser) dict(out []byte, depth int) ([]byte, bool) {
	p.i++ // {
	out = append(out, '{')
	for n := 0; ; n++ {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return append(out, '}'), true
		}
		if n > 0 {
			out = append(out, ',')
		}
		p.space()
		if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
			return out, false // JSON has only string keys
		}
		k, ok := p.str()
		if !ok {
			return out, false
		}
		out = appendJSONString(out, k)
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return out, false
		}
		p.i++
		out = append(out, ':')
		if out, ok = p.value(out, depth+1); !ok {
			return out, false
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return append(out, '}'), true
		}
		return out, false
	}
}

// seq reads a list or a tuple (both JSON arrays) closed by end.
func (p *pyParser) seq(out []byte, end byte, depth int) ([]byte, bool) {
	p.i++
	out = append(out, '[')
	for n := 0; ; n++ {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return append(out, ']'), true
		}
		if n > 0 {
			out = append(out, ',')
		}
		var ok bool
		if out, ok = p.value(out, depth+1); !ok {
			return out, false
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return append(out, ']'), true
		}
		return out, false
	}
}

// str reads a quoted string with Python's escapes.
func (p *pyParser) str() (string, bool) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\n':
			return "", false
		case c != '\\':
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r)
			p.i += n
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return "", false
			}
			v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", false
			}
			b.WriteRune(rune(v))
			p.i += n
		default:
			return "", false
		}
	}
	return "", false
}

// number reads an int or a float as JSON writes it.
func (p *pyParser) number(out []byte) ([]byte, bool) {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE_", p.s[p.i]) >= 0 {
		p.i++
	}
	lit := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if lit == "" {
		return out, false
	}
	if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return append(out, strings.TrimPrefix(lit, "+")...), true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return out, false
	}
	return strconv.AppendFloat(out, f, 'g', -1, 64), true
}

// appendJSONString appends s as a JSON string.
func appendJSONString(out []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(out, b...)
}
