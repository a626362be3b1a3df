package otlp

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// Attrs answer as the map of the same attributes would, for keys there and
// not there, after sets and deletes in any order.
func TestAttrsAnswerAsAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := []string{"", "a", "b", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
		"retrylab.run", "retrylab.run.crashed", "retrylab.attempt", "z", "zz", "gen_ai.", "ü"}
	for round := range 300 {
		m := map[string]string{}
		var a Attrs
		for op := range r.IntN(40) {
			k := keys[r.IntN(len(keys))]
			if r.IntN(4) == 0 {
				delete(m, k)
				a.Delete(k)
				continue
			}
			v := fmt.Sprint(round, op)
			m[k] = v
			a.Set(k, v)
		}
		if !slices.IsSortedFunc(a, func(x, y Attr) int { return compareKeys(x.Key, y.Key) }) || len(a) != len(m) {
			t.Fatalf("round %d: %v is not %v sorted", round, a, m)
		}
		for _, k := range keys {
			want, wantOK := m[k]
			if got, ok := a.Lookup(k); got != want || ok != wantOK || a.Get(k) != want || a.Has(k) != wantOK {
				t.Fatalf("round %d: %q is %q %v, want %q %v", round, k, got, ok, want, wantOK)
			}
		}
		if !maps.Equal(a.Map(), m) && len(m) > 0 {
			t.Fatalf("round %d: Map %v, want %v", round, a.Map(), m)
		}
		if !slices.Equal(AttrsOf(m), a) {
			t.Fatalf("round %d: AttrsOf %v, want %v", round, AttrsOf(m), a)
		}
		got, err := json.Marshal(a)
		want, _ := json.Marshal(m)
		if len(m) == 0 {
			want = []byte("null")
			if a != nil {
				want = []byte("{}")
			}
		}
		if err != nil || string(got) != string(want) {
			t.Fatalf("round %d: JSON %s, want %s (%v)", round, got, want, err)
		}
		var back Attrs
		if err := json.Unmarshal(got, &back); err != nil || !slices.Equal(back, AttrsOf(m)) {
			t.Fatalf("round %d: read back %v, want %v (%v)", round, back, a, err)
		}
	}
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Attributes read in any order are kept sorted, the last of equal keys
// kept (as pdata's flatten keeps it), whether cut from a slab or not; a
// slab's slices do not share what they can grow into.
func TestKeptAttrsKeepTheLastOfEqualKeys(t *testing.T) {
	read := []Attr{{"b", "1"}, {"a", "2"}, {"b", "3"}, {"c", "4"}, {"a", "5"}, {"b", "6"}}
	want := Attrs{{"a", "5"}, {"b", "6"}, {"c", "4"}}
	var slab attrSlab
	for _, s := range []*attrSlab{nil, &slab} {
		if got := keptAttrs(slices.Clone(read), s); !slices.Equal(got, want) {
			t.Errorf("slab %v: kept %v, want %v", s != nil, got, want)
		}
	}
	// Many attributes: the sort is not the small one.
	var many []Attr
	for i := range 100 {
		many = append(many, Attr{fmt.Sprintf("k%02d", i%40), fmt.Sprint(i)})
	}
	got := keptAttrs(many, &slab)
	if len(got) != 40 || got[0] != (Attr{"k00", "80"}) || got[39] != (Attr{"k39", "79"}) {
		t.Errorf("kept %v", got)
	}
	first := keptAttrs([]Attr{{"a", "1"}}, &slab)
	second := keptAttrs([]Attr{{"b", "2"}}, &slab)
	first.Set("c", "3")
	if second[0] != (Attr{"b", "2"}) {
		t.Errorf("a set on one span's attributes wrote over another's: %v", second)
	}
}

// A stored span whose attributes are out of key order or name a key
// twice (no writer of ours stores one) reads as the map it was once read
// into did: sorted, the last of equal keys kept.
func TestStoredAttrsOutOfOrderReadSorted(t *testing.T) {
	s := Span{TraceID: "t", SpanID: "s", Name: "n",
		Attrs: Attrs{{"gen_ai.tool.name", "b"}, {"a.custom", "1"}, {"gen_ai.tool.name", "c"}, {"z", "2"}}}
	var back Span
	if err := decodeSpan(encodeSpan(nil, &s), &back); err != nil {
		t.Fatal(err)
	}
	want := Attrs{{"a.custom", "1"}, {"gen_ai.tool.name", "c"}, {"z", "2"}}
	if !slices.Equal(back.Attrs, want) || back.Attrs.Get("gen_ai.tool.name") != "c" {
		t.Errorf("read %v, want %v", back.Attrs, want)
	}
	s.Attrs = want
	if err := decodeSpan(encodeSpan(nil, &s), &back); err != nil || !slices.Equal(back.Attrs, want) {
		t.Errorf("in order: read %v, %v", back.Attrs, err)
	}
}

// A result an emitter writes for none (ADK's {"result": "<not specified>"}
// for a tool that raised) is no result; one that says more is a result.
func TestPlaceholderResultIsNone(t *testing.T) {
	for v, want := range map[string]string{
		`{"result": "<not specified>"}`:              "",
		`<not specified>`:                            "",
		`{"result": "<not specified>", "note": "x"}`: `{"result": "<not specified>", "note": "x"}`,
		`{"result": "ok"}`:                           `{"result": "ok"}`,
	} {
		s := Span{Attrs: Attrs{{"gcp.vertex.agent.tool_response", v}}}
		if got := string(s.Result()); got != want {
			t.Errorf("result of %s: %q, want %q", v, got, want)
		}
	}
}
