package otlp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Attr is one attribute of a span or of a span's event, its value
// flattened to a string.
type Attr struct{ Key, Value string }

// Attrs are a span's or an event's attributes, sorted by key, each key
// once. A sorted slice, not a map: a span is read for a few keys and
// written out whole in key order, and a receiver decodes hundreds of
// thousands of spans a second, each of whose map (made, filled, then
// iterated and sorted to be stored) cost more than its attributes.
type Attrs []Attr

// AttrsOf returns m's attributes as Attrs.
func AttrsOf(m map[string]string) Attrs {
	if len(m) == 0 {
		return nil
	}
	a := make(Attrs, 0, len(m))
	for k, v := range m {
		a = append(a, Attr{k, v})
	}
	sortAttrs(a)
	return a
}

// find returns where key k is in a, or where it would go, and whether it
// is there.
func (a Attrs) find(k string) (int, bool) {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m].Key < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(a) && a[lo].Key == k
}

// Lookup returns the value of key k, and whether the attributes have it.
func (a Attrs) Lookup(k string) (string, bool) {
	if i, ok := a.find(k); ok {
		return a[i].Value, true
	}
	return "", false
}

// Get returns the value of key k, "" if there is none.
func (a Attrs) Get(k string) string {
	v, _ := a.Lookup(k)
	return v
}

// Has reports whether the attributes have key k.
func (a Attrs) Has(k string) bool {
	_, ok := a.Lookup(k)
	return ok
}

// Set sets key k to v, adding it in its place if it is not there.
func (a *Attrs) Set(k, v string) {
	i, found := a.find(k)
	if found {
		(*a)[i].Value = v
		return
	}
	*a = slices.Insert(*a, i, Attr{k, v})
}

// Delete removes key k, if it is there.
func (a *Attrs) Delete(k string) {
	if i, found := a.find(k); found {
		*a = slices.Delete(*a, i, i+1)
	}
}

// Map returns the attributes as a map.
func (a Attrs) Map() map[string]string {
	if len(a) == 0 {
		return nil
	}
	m := make(map[string]string, len(a))
	for _, kv := range a {
		m[kv.Key] = kv.Value
	}
	return m
}

// MarshalJSON writes the attributes as a JSON object in key order, as a
// map of them would be written.
func (a Attrs) MarshalJSON() ([]byte, error) {
	if a == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.Key) // a string always marshals
		v, _ := json.Marshal(kv.Value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads attributes written as a JSON object of strings.
func (a *Attrs) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("attributes: %w", err)
	}
	*a = AttrsOf(m)
	return nil
}

// keptAttrs returns kvs, in the order they were read, as Attrs: sorted by
// key, of equal keys the last kept (as pdata's flatten and a map filled
// in order keep it), in a slice cut from slab (of their own if slab is
// nil).
func keptAttrs(kvs []Attr, slab *attrSlab) Attrs {
	if len(kvs) == 0 {
		return nil
	}
	sortAttrs(kvs)
	n := 0
	for i := range kvs {
		if i+1 < len(kvs) && kvs[i+1].Key == kvs[i].Key {
			continue // a later one of the same key follows
		}
		kvs[n] = kvs[i]
		n++
	}
	if slab == nil {
		return slices.Clone(kvs[:n])
	}
	return slab.cut(kvs[:n])
}

// attrReader collects the attributes a decoder reads of one span or
// event, in the order read, and keeps them (keptAttrs) in slices cut
// from its slab; what it collected it then forgets, for the next.
type attrReader struct {
	read []Attr
	slab attrSlab
}

func (r *attrReader) add(k, v string) { r.read = append(r.read, Attr{k, v}) }

// keep returns what was read as Attrs and forgets it.
func (r *attrReader) keep() Attrs {
	out := keptAttrs(r.read, &r.slab)
	r.forget()
	return out
}

// forget drops what was read (its strings let go).
func (r *attrReader) forget() {
	clear(r.read)
	r.read = r.read[:0]
}

// attrSlab hands out the attributes of the spans a decoder reads from
// allocations of some thousand, which the spans of a request or chunk
// share (they live and die together): one allocation per span was a
// twentieth of a receiver's decoding. Memory handed out is never handed
// out again.
type attrSlab []Attr

// slabAttrs is how many attributes an attrSlab allocates at once (48 KiB).
const slabAttrs = 1536

// cut returns a copy of kvs, of its length and capacity, cut from s.
func (s *attrSlab) cut(kvs []Attr) Attrs {
	n := len(kvs)
	if n > len(*s) {
		if n > slabAttrs/4 {
			return slices.Clone(kvs)
		}
		*s = make(attrSlab, slabAttrs)
	}
	out := (*s)[:n:n]
	copy(out, kvs)
	*s = (*s)[n:]
	return Attrs(out)
}

// sortAttrs sorts kvs by key, keeping equal keys in their order. A span's
// few dozen attributes at most are sorted by insertion on the keys' first
// 16 bytes read as two numbers, the strings compared only where those are
// equal: slices.SortFunc, a func call for each comparison of keys that
// mostly share a prefix ("gen_ai.", "retrylab."), took 1.0-1.2 µs of a
// span of 17 attributes (the own export's); this takes 0.63-0.68.
func sortAttrs(kvs []Attr) {
	n := len(kvs)
	if n > 32 {
		slices.SortStableFunc(kvs, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
		return
	}
	// hi and lo are the prefixes of the attributes in their order sorted
	// so far, at is where each is in kvs.
	var hi, lo [32]uint64
	var at [32]uint8
	for i := range n {
		var b [16]byte
		copy(b[:], kvs[i].Key)
		h, l := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
		j := i
		for ; j > 0 && (h < hi[j-1] || h == hi[j-1] && (l < lo[j-1] || l == lo[j-1] && kvs[i].Key < kvs[at[j-1]].Key)); j-- {
			hi[j], lo[j], at[j] = hi[j-1], lo[j-1], at[j-1]
		}
		hi[j], lo[j], at[j] = h, l, uint8(i)
	}
	var sorted [32]Attr
	for i := range n {
		sorted[i] = kvs[at[i]]
	}
	copy(kvs, sorted[:n])
}
