package idemkey

import (
	"bytes"
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fuzzInt is an integer JSON number in normalised decimal form, kept apart
// from float64 so that 1 and 1.0 compare unequal.
type fuzzInt string

// decodeNormalised decodes one JSON value with UseNumber and replaces every
// json.Number by a comparable value: numbers containing '.', 'e' or 'E'
// (floats for Python) become their float64 value, all others become a
// fuzzInt holding big.Int's decimal form (so "-0" and "0" are equal). Floats
// compare with ==, so -0.0 equals 0.0; that is fine because the canonical
// form is checked for idempotence separately.
func decodeNormalised(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normaliseNumbers(v)
}

func normaliseNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return strconv.ParseFloat(s, 64)
		}
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, strconv.ErrSyntax
		}
		return fuzzInt(n.String()), nil
	case map[string]any:
		for k, el := range x {
			n, err := normaliseNumbers(el)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, el := range x {
			n, err := normaliseNumbers(el)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

func FuzzCanonicalJSON(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzCanonicalJSON.
	for _, tc := range canonicalJSONCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CanonicalJSON(data)
		long, lerr := canonicalDecoded(data)
		if (err == nil) != (lerr == nil) || !bytes.Equal(out, long) {
			t.Fatalf("the fast path and the long way differ on %q:\n fast %q %v\n long %q %v", data, out, err, long, lerr)
		}
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q", out)
		}
		for i, c := range out {
			if c >= 0x80 || (c < 0x20) {
				t.Fatalf("output byte %d is %#x, want printable ASCII: %q", i, c, out)
			}
		}
		again, err := CanonicalJSON(out)
		if err != nil {
			t.Fatalf("CanonicalJSON(output %q): %v", out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n in  %q\n out %q\n out2 %q", data, out, again)
		}
		want, err := decodeNormalised(data)
		if err != nil {
			t.Fatalf("input accepted by CanonicalJSON but not decodable: %v", err)
		}
		got, err := decodeNormalised(out)
		if err != nil {
			t.Fatalf("output not decodable: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("value changed:\n in  %q\n out %q\n got  %#v\n want %#v", data, out, got, want)
		}
	})
}
