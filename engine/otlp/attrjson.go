package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// attrString is v.AsString(), and for a map or a slice the same JSON
// pdata writes (keys sorted, the last of equal keys kept, no HTML
// escaping, "" when a double is not finite), written with a stack of its
// own instead of pdata's recursion through encoding/json: a value nested a
// million levels deep costs memory in proportion, not a stack overflow.
func attrString(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
	default:
		return v.AsString()
	}
	// frame is a map or slice being written: its values (and keys, for a
	// map) and how many are written.
	type frame struct {
		keys  []string
		vals  []pcommon.Value
		next  int
		close byte
	}
	var (
		buf   bytes.Buffer
		str   bytes.Buffer // a string as encoding/json writes it, plus "\n"
		stack []frame
	)
	enc := json.NewEncoder(&str)
	enc.SetEscapeHTML(false)
	writeString := func(s string) {
		str.Reset()
		_ = enc.Encode(s) // a string always encodes
		buf.Write(bytes.TrimSuffix(str.Bytes(), []byte{'\n'}))
	}
	// open writes a scalar whole, or opens a map or slice; false for a
	// double that JSON cannot hold.
	open := func(v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeMap:
			m := v.Map()
			byKey := make(map[string]pcommon.Value, m.Len())
			m.Range(func(k string, v pcommon.Value) bool { byKey[k] = v; return true })
			f := frame{keys: make([]string, 0, len(byKey)), close: '}'}
			for k := range byKey {
				f.keys = append(f.keys, k)
			}
			slices.Sort(f.keys)
			for _, k := range f.keys {
				f.vals = append(f.vals, byKey[k])
			}
			buf.WriteByte('{')
			stack = append(stack, f)
		case pcommon.ValueTypeSlice:
			s := v.Slice()
			f := frame{vals: make([]pcommon.Value, s.Len()), close: ']'}
			for i := range f.vals {
				f.vals[i] = s.At(i)
			}
			buf.WriteByte('[')
			stack = append(stack, f)
		case pcommon.ValueTypeEmpty:
			buf.WriteString("null")
		case pcommon.ValueTypeStr:
			writeString(v.Str())
		case pcommon.ValueTypeBool:
			buf.WriteString(strconv.FormatBool(v.Bool()))
		case pcommon.ValueTypeInt:
			buf.WriteString(strconv.FormatInt(v.Int(), 10))
		case pcommon.ValueTypeDouble:
			d := v.Double()
			if math.IsNaN(d) || math.IsInf(d, 0) {
				return false
			}
			b, _ := json.Marshal(d)
			buf.Write(b)
		case pcommon.ValueTypeBytes:
			if v.Bytes().Len() == 0 {
				buf.WriteString("null") // pdata's AsRaw gives a nil slice
				break
			}
			buf.WriteByte('"')
			buf.WriteString(base64.StdEncoding.EncodeToString(v.Bytes().AsRaw()))
			buf.WriteByte('"')
		default:
			buf.WriteString("null")
		}
		return true
	}
	open(v)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next == len(f.vals) {
			buf.WriteByte(f.close)
			stack = stack[:len(stack)-1]
			continue
		}
		if f.next > 0 {
			buf.WriteByte(',')
		}
		if f.keys != nil {
			writeString(f.keys[f.next])
			buf.WriteByte(':')
		}
		val := f.vals[f.next]
		f.next++
		if !open(val) {
			return ""
		}
	}
	return buf.String()
}
