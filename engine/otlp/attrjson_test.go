package otlp

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestAttrStringAsPdata: attrString writes what pdata's AsString writes,
// for values of every type nested at random (fixed seed).
func TestAttrStringAsPdata(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	strs := []string{"", "a", "<b>&", "é\u2028\x01", "\xff", `"\`, "k"}
	var fill func(v pcommon.Value, depth int)
	fill = func(v pcommon.Value, depth int) {
		kind := rng.IntN(9)
		if depth > 4 && kind >= 7 {
			kind = rng.IntN(7)
		}
		switch kind {
		case 0:
		case 1:
			v.SetStr(strs[rng.IntN(len(strs))])
		case 2:
			v.SetBool(rng.IntN(2) == 0)
		case 3:
			v.SetInt(rng.Int64() - rng.Int64())
		case 4:
			v.SetDouble([]float64{0, -1.5, 1e21, 1e-7, 123456789.125, math.MaxFloat64}[rng.IntN(6)])
		case 5:
			v.SetEmptyBytes().FromRaw([]byte(strs[rng.IntN(len(strs))]))
		case 6:
			v.SetStr(strings.Repeat("x", rng.IntN(50)))
		case 7:
			s := v.SetEmptySlice()
			for range rng.IntN(4) {
				fill(s.AppendEmpty(), depth+1)
			}
		case 8:
			m := v.SetEmptyMap()
			for range rng.IntN(4) {
				// PutEmpty keeps one value a key; equal keys come from
				// a map whose entries were appended (as a decoder does).
				fill(m.PutEmpty(strs[rng.IntN(len(strs))]), depth+1)
			}
		}
	}
	for i := range 2000 {
		v := pcommon.NewValueEmpty()
		fill(v, 0)
		if got, want := attrString(v), v.AsString(); got != want {
			t.Fatalf("value %d: attrString = %q, AsString = %q", i, got, want)
		}
	}
	nan := pcommon.NewValueSlice()
	nan.Slice().AppendEmpty().SetDouble(math.NaN())
	if got, want := attrString(nan), nan.AsString(); got != want {
		t.Fatalf("NaN: attrString = %q, AsString = %q", got, want)
	}
}

// TestAttrStringDeep: a value nested 200 000 levels is written without a
// stack overflow.
func TestAttrStringDeep(t *testing.T) {
	t.Parallel()
	const levels = 200_000
	v := pcommon.NewValueEmpty()
	cur := v
	for range levels {
		cur = cur.SetEmptySlice().AppendEmpty()
	}
	cur.SetInt(1)
	want := strings.Repeat("[", levels) + "1" + strings.Repeat("]", levels)
	if got := attrString(v); got != want {
		t.Fatalf("attrString of %d levels: %d bytes, want %d", levels, len(got), len(want))
	}
}
