package idemkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

// The expected strings in the tables below were generated once with
// python3 from the reference function and json.dumps(..., sort_keys=True)
// and pasted here as literals; nothing is computed with Python at test time.

// myString checks that named string types are accepted.
type myString string

// mustBig parses a decimal integer for the test tables.
func mustBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad big int " + s)
	}
	return n
}

var canonicalJSONCases = []struct {
	name string
	in   string
	want string
}{
	{"article args", `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}`, `{"body": "\u2026", "subject": "Your June invoice", "to": "jordan@acme.dev"}`},
	{"empty object", `{}`, `{}`},
	{"empty array", `[]`, `[]`},
	{"empty containers nested", `{"a": {}, "b": [], "c": [{}, []]}`, `{"a": {}, "b": [], "c": [{}, []]}`},
	{"nested dicts and lists", `{"z": {"y": [1, 2, {"b": 2, "a": 1}], "x": null}, "a": [[1, 2], [3, [4]]]}`, `{"a": [[1, 2], [3, [4]]], "z": {"x": null, "y": [1, 2, {"a": 1, "b": 2}]}}`},
	{"bool and null", `{"t": true, "f": false, "n": null}`, `{"f": false, "n": null, "t": true}`},
	{"top-level scalar string", `"hello"`, `"hello"`},
	{"top-level number", `42`, `42`},
	{"unicode latin", `{"name": "José Müller", "é": "ü"}`, `{"name": "Jos\u00e9 M\u00fcller", "\u00e9": "\u00fc"}`},
	{"unicode emoji surrogate pair", `{"msg": "hi 😀"}`, `{"msg": "hi \ud83d\ude00"}`},
	{"unicode escaped pair in input", `{"msg": "hi \ud83d\ude00"}`, `{"msg": "hi \ud83d\ude00"}`},
	{"unicode CJK", `{"城市": "東京", "a": "中文"}`, `{"a": "\u4e2d\u6587", "\u57ce\u5e02": "\u6771\u4eac"}`},
	{"unicode max code point", "[\"\U0010ffff\", \"\uffff\", \"\u2028\"]", `["\udbff\udfff", "\uffff", "\u2028"]`},
	{"control chars", `{"c": "a\nb\rc\td\be\ff\u0000g\u001fh\u0001"}`, `{"c": "a\nb\rc\td\be\ff\u0000g\u001fh\u0001"}`},
	{"DEL is escaped", "[\"a\x7fb\"]", `["a\u007fb"]`},
	{"C1 control", `["\u0085"]`, `["\u0085"]`},
	{"quotes and backslashes", `{"q": "say \"hi\" \\ path\\to"}`, `{"q": "say \"hi\" \\ path\\to"}`},
	{"slash not escaped", `{"url": "https://example.com/a/b", "esc": "\/"}`, `{"esc": "/", "url": "https://example.com/a/b"}`},
	{"key sort by code point", "{\"b\": 1, \"a\": 2, \"B\": 3, \"é\": 4, \"z\": 5, \"😀\": 6, \"\uffff\": 7, \"\": 8, \"aa\": 9}", `{"": 8, "B": 3, "a": 2, "aa": 9, "b": 1, "z": 5, "\u00e9": 4, "\uffff": 7, "\ud83d\ude00": 6}`},
	{"float 1.0", `[1.0]`, `[1.0]`},
	{"float 0.1", `[0.1]`, `[0.1]`},
	{"float 1e16", `[1e16]`, `[1e+16]`},
	{"float 1e15", `[1e15]`, `[1000000000000000.0]`},
	{"float 1e-5", `[1e-5]`, `[1e-05]`},
	{"float 0.0001", `[0.0001]`, `[0.0001]`},
	{"float 123456789.123", `[123456789.123]`, `[123456789.123]`},
	{"float 1e22", `[1e22]`, `[1e+22]`},
	{"float 5e-324", `[5e-324]`, `[5e-324]`},
	{"float -0.0", `[-0.0]`, `[-0.0]`},
	{"float 2.5", `[2.5]`, `[2.5]`},
	{"float 1.5e300", `[1.5e300]`, `[1.5e+300]`},
	{"float max", `[1.7976931348623157e308]`, `[1.7976931348623157e+308]`},
	{"float underflow to zero", `[1e-400, -1e-400]`, `[0.0, -0.0]`},
	{"float exponent forms", `[1E2, 1e+2, 1.5E-7, 100e-2, 0.5e1]`, `[100.0, 100.0, 1.5e-07, 1.0, 5.0]`},
	{"float many digits", `[3.141592653589793238462643383279, 0.30000000000000004]`, `[3.141592653589793, 0.30000000000000004]`},
	{"int -0", `[-0]`, `[0]`},
	{"int zero and negative", `[0, -1, 17]`, `[0, -1, 17]`},
	{"big int", `[123456789012345678901234567890]`, `[123456789012345678901234567890]`},
	{"big negative int", `[-123456789012345678901234567890]`, `[-123456789012345678901234567890]`},
	{"int64 bounds", `[9223372036854775807, -9223372036854775808, 18446744073709551616]`, `[9223372036854775807, -9223372036854775808, 18446744073709551616]`},
	{"int vs float distinct", `{"i": 1, "f": 1.0}`, `{"f": 1.0, "i": 1}`},
	{"duplicate keys last wins", `{"a": 1, "a": 2}`, `{"a": 2}`},
}

var whitespaceVariants = []struct {
	a, b string
	want string
}{
	{`{"a":1,"b":[1,2,{"c":"d"}]}`, "{ \"b\" : [ 1 , 2 , { \"c\" : \"d\" } ] ,\n\t\"a\" : 1 }\r\n", `{"a": 1, "b": [1, 2, {"c": "d"}]}`},
	{`{"x":{"q":1,"p":2}}`, ` {"x":{"p":2,"q":1}} `, `{"x": {"p": 2, "q": 1}}`},
}

var canonicalCases = []struct {
	name string
	in   any
	want string
}{
	{"float64 1.0", 1.0, `1.0`},
	{"float64 0.1", 0.1, `0.1`},
	{"float64 1e16", 1e16, `1e+16`},
	{"float64 1e-5", 1e-5, `1e-05`},
	{"float64 0.0001", 0.0001, `0.0001`},
	{"float64 100.0", 100.0, `100.0`},
	{"float64 123456789.123", 123456789.123, `123456789.123`},
	{"float64 1e22", 1e22, `1e+22`},
	{"float64 5e-324", 5e-324, `5e-324`},
	{"float64 -0.0", math.Copysign(0, -1), `-0.0`},
	{"float64 2.5", 2.5, `2.5`},
	{"float64 1.5e300", 1.5e300, `1.5e+300`},
	{"float64 NaN", math.NaN(), `NaN`},
	{"float64 +Inf", math.Inf(1), `Infinity`},
	{"float64 -Inf", math.Inf(-1), `-Infinity`},
	{"float32 widened", float32(0.1), `0.10000000149011612`},
	{"int", int(42), `42`},
	{"int64 min", int64(math.MinInt64), `-9223372036854775808`},
	{"uint64 max", uint64(math.MaxUint64), `18446744073709551615`},
	{"int8", int8(-7), `-7`},
	{"uint16", uint16(65535), `65535`},
	{"big.Int", mustBig("-123456789012345678901234567890"), `-123456789012345678901234567890`},
	{"json.Number int", json.Number("123456789012345678901234567890"), `123456789012345678901234567890`},
	{"json.Number -0", json.Number("-0"), `0`},
	{"json.Number float", json.Number("1e16"), `1e+16`},
	{"json.Number -0.0", json.Number("-0.0"), `-0.0`},
	{"nil", nil, `null`},
	{"bools", []any{true, false}, `[true, false]`},
	{"string with everything", "a\"b\\c/d\n\x7f\u00e9\U0001F600", `"a\"b\\c/d\n\u007f\u00e9\ud83d\ude00"`},
	{"nested map[string]any", map[string]any{"b": []any{1, 2.0, "x"}, "a": map[string]any{}}, `{"a": {}, "b": [1, 2.0, "x"]}`},
	{"map[string]string", map[string]string{"k2": "v2", "k1": "v1"}, `{"k1": "v1", "k2": "v2"}`},
	{"map[any]any with string keys", map[any]any{"b": 1, "a": []any{}}, `{"a": [], "b": 1}`},
	{"[]string", []string{"x", "y"}, `["x", "y"]`},
	{"[]int", []int{3, 1, 2}, `[3, 1, 2]`},
	{"array", [2]float64{1, 0.5}, `[1.0, 0.5]`},
	{"named string type", myString("named"), `"named"`},
	{"empty []any", []any{}, `[]`},
	{"yaml-style nested", map[string]any{"list": []any{map[string]any{"n": int(1)}, nil}, "f": float64(3)}, `{"f": 3.0, "list": [{"n": 1}, null]}`},
}

var deriveCases = []struct {
	execution, step       string
	args                  string // JSON text, decoded with UseNumber
	want8, want32, want64 string
}{
	{`exec_01H8`, `step-4`, `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}`, `ik_a94a0b1d`, `ik_a94a0b1dc930c7aeacafa88611d51cea`, `ik_a94a0b1dc930c7aeacafa88611d51cea1d0978e41bc58c72504abee92e5b1f33`},
	{`exec_01H8`, `step-5`, `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}`, `ik_5acf826d`, `ik_5acf826d2ad7597f466d3b287c052737`, `ik_5acf826d2ad7597f466d3b287c052737d65c4cac5830e3577ab732cd8c3e8f1d`},
	{`exec_01H9`, `step-4`, `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}`, `ik_4d5ad6da`, `ik_4d5ad6da6398fa64b094ba66cd8d5f57`, `ik_4d5ad6da6398fa64b094ba66cd8d5f57245cec36cfd1b341ce1ff68785286106`},
	{`exec_01H8`, `step-4`, `{"to": "jordan@acme.dev", "subject": "Your July invoice", "body": "…"}`, `ik_2baa9447`, `ik_2baa9447a5c9cd66b22e0e5099bd5d33`, `ik_2baa9447a5c9cd66b22e0e5099bd5d33a82e714605098808245413f1dcc4b1fd`},
	{`exec_01H8`, `step-4`, `{}`, `ik_3684e280`, `ik_3684e280e3ec31a5a0e8b7a3b6f0661e`, `ik_3684e280e3ec31a5a0e8b7a3b6f0661ef39fd3d2a4b9dce9fa0b4edcd6b681aa`},
	{`exec_01H8`, `step-4`, `null`, `ik_d017d09c`, `ik_d017d09cf8655bcd29b29a972707adab`, `ik_d017d09cf8655bcd29b29a972707adab82fa1fe6ebb49d20c90919fab25046e9`},
	{`é`, `😀`, `{"n": [1, 1.0, -0.0, 1000000000000000000000000000000]}`, `ik_be5296b6`, `ik_be5296b659cc0e7f2a7cd9476996149e`, `ik_be5296b659cc0e7f2a7cd9476996149e5926d9f3c5f323ca648399a9dafca3d7`},
}

func TestArticleVector(t *testing.T) {
	args := map[string]any{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}
	got, err := Canonical(args)
	if err != nil {
		t.Fatal(err)
	}
	const wantCanonical = `{"body": "\u2026", "subject": "Your June invoice", "to": "jordan@acme.dev"}`
	if string(got) != wantCanonical {
		t.Errorf("Canonical = %s, want %s", got, wantCanonical)
	}
	key, err := Derive("exec_01H8", "step-4", args, DefaultDigits)
	if err != nil {
		t.Fatal(err)
	}
	if key != "ik_a94a0b1d" {
		t.Errorf("Derive = %s, want ik_a94a0b1d", key)
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range canonicalJSONCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("CanonicalJSON(%q): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("CanonicalJSON(%q)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalJSONWhitespaceAndOrder(t *testing.T) {
	for _, tc := range whitespaceVariants {
		a, err := CanonicalJSON([]byte(tc.a))
		if err != nil {
			t.Fatal(err)
		}
		b, err := CanonicalJSON([]byte(tc.b))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != tc.want || string(b) != tc.want {
			t.Errorf("variants %q / %q gave %s / %s, want %s", tc.a, tc.b, a, b, tc.want)
		}
		ka, err := Derive("e", "s", json.RawMessage(tc.a), LongDigits)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := Derive("e", "s", json.RawMessage(tc.b), LongDigits)
		if err != nil {
			t.Fatal(err)
		}
		if ka != kb {
			t.Errorf("keys differ for equivalent JSON: %s vs %s", ka, kb)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range canonicalCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(tc.in)
			if err != nil {
				t.Fatalf("Canonical(%#v): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%#v)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalKeyOrderIndependent(t *testing.T) {
	// Go map iteration order is random; repeat to make an ordering bug show.
	m := map[string]any{}
	for _, k := range []string{"delta", "alpha", "charlie", "bravo", "écho", "Zulu", "0"} {
		m[k] = k
	}
	first, err := Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"0": "0", "Zulu": "Zulu", "alpha": "alpha", "bravo": "bravo", "charlie": "charlie", "delta": "delta", "\u00e9cho": "\u00e9cho"}`
	if string(first) != want {
		t.Fatalf("got %s want %s", first, want)
	}
	for range 50 {
		again, err := Canonical(m)
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("unstable output %s (%v)", again, err)
		}
	}
}

func decodeUseNumber(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDerive(t *testing.T) {
	seen := map[string]int{}
	for i, tc := range deriveCases {
		args := decodeUseNumber(t, tc.args)
		for _, d := range []struct {
			digits int
			want   string
		}{{DefaultDigits, tc.want8}, {LongDigits, tc.want32}, {64, tc.want64}} {
			got, err := Derive(tc.execution, tc.step, args, d.digits)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			if got != d.want {
				t.Errorf("case %d digits %d: got %s want %s", i, d.digits, got, d.want)
			}
		}
		if j, dup := seen[tc.want64]; dup {
			t.Errorf("cases %d and %d share a key", j, i)
		}
		seen[tc.want64] = i
	}
}

func TestDeriveDistinct(t *testing.T) {
	base := map[string]any{"to": "a@b.c", "n": json.Number("1")}
	key := func(exec, step string, args any) string {
		t.Helper()
		k, err := Derive(exec, step, args, LongDigits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	ref := key("exec", "step", base)
	others := map[string]string{
		"other execution": key("exec2", "step", base),
		"other step":      key("exec", "step2", base),
		"other value":     key("exec", "step", map[string]any{"to": "a@b.d", "n": json.Number("1")}),
		"float not int":   key("exec", "step", map[string]any{"to": "a@b.c", "n": json.Number("1.0")}),
		"extra key":       key("exec", "step", map[string]any{"to": "a@b.c", "n": json.Number("1"), "x": nil}),
		"no args":         key("exec", "step", nil),
	}
	for name, k := range others {
		if k == ref {
			t.Errorf("%s: same key %s as the reference", name, k)
		}
	}
	// Same content built differently gives the same key.
	same := key("exec", "step", map[any]any{"n": 1, "to": "a@b.c"})
	if same != ref {
		t.Errorf("equivalent args gave %s, want %s", same, ref)
	}
}

func TestDeriveDigits(t *testing.T) {
	for _, d := range []int{-1, 0, 3, 65, 100} {
		if k, err := Derive("e", "s", nil, d); err == nil {
			t.Errorf("digits %d: got %q, want error", d, k)
		}
	}
	for _, d := range []int{4, DefaultDigits, LongDigits, 64} {
		k, err := Derive("e", "s", nil, d)
		if err != nil {
			t.Errorf("digits %d: %v", d, err)
			continue
		}
		if len(k) != len("ik_")+d || !strings.HasPrefix(k, "ik_") {
			t.Errorf("digits %d: bad key %q", d, k)
		}
	}
}

func TestDeriveErrors(t *testing.T) {
	if _, err := Derive("bad\xff", "s", nil, 8); !errors.Is(err, errInvalid) {
		t.Errorf("invalid UTF-8 execution: err = %v", err)
	}
	if _, err := Derive("e", "bad\xff", nil, 8); !errors.Is(err, errInvalid) {
		t.Errorf("invalid UTF-8 step: err = %v", err)
	}
	_, err := Derive("e", "s", struct{ A int }{1}, 8)
	if !errors.Is(err, errUnsupported) || !strings.Contains(err.Error(), "struct { A int }") {
		t.Errorf("struct args: err = %v", err)
	}
}

func TestCanonicalErrors(t *testing.T) {
	type point struct{ X, Y int }
	cyclic := make([]any, 1)
	cyclic[0] = cyclic
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap
	x := 1
	tests := []struct {
		name    string
		in      any
		wantErr error
		mention string // must appear in the error message
	}{
		{"struct", point{1, 2}, errUnsupported, "idemkey.point"},
		{"struct nested", map[string]any{"p": []any{point{}}}, errUnsupported, "idemkey.point"},
		{"channel", make(chan int), errUnsupported, "chan int"},
		{"func", func() {}, errUnsupported, "func()"},
		{"complex", complex(1, 2), errUnsupported, "complex128"},
		{"pointer", &x, errUnsupported, "*int"},
		{"byte slice", []byte("hi"), errUnsupported, "[]uint8"},
		{"map int keys", map[int]string{1: "a"}, errUnsupported, "map[int]string"},
		{"map any non-string key", map[any]any{1: "a"}, errUnsupported, "map[interface {}]interface {}"},
		{"map any nil key", map[any]any{nil: "a"}, errUnsupported, "map[interface {}]interface {}"},
		{"duplicate keys after conversion", map[any]any{"a": 1, myString("a"): 2}, errInvalid, `"a"`},
		{"invalid UTF-8 string", "bad\xffbyte", errInvalid, "UTF-8"},
		{"invalid UTF-8 key", map[string]any{"bad\xc0": 1}, errInvalid, "UTF-8"},
		{"json.Number not a number", json.Number("abc"), errInvalid, "abc"},
		{"json.Number empty", json.Number(""), errInvalid, "json.Number"},
		{"json.Number leading zero", json.Number("01"), errInvalid, "01"},
		{"json.Number plus sign", json.Number("+5"), errInvalid, "+5"},
		{"json.Number hex float", json.Number("0x1.8p1"), errInvalid, "0x1.8p1"},
		{"json.Number overflow", json.Number("1e400"), errInvalid, "1e400"},
		{"cyclic slice", cyclic, errInvalid, "nesting"},
		{"cyclic map", cyclicMap, errInvalid, "nesting"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonical(tc.in)
			if err == nil {
				t.Fatalf("got %s, want error", out)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want wrapping %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("err = %v, want mention of %q", err, tc.mention)
			}
		})
	}
}

func TestCanonicalJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"whitespace only", "  \n"},
		{"trailing value", "1 2"},
		{"trailing garbage", `{"a": 1} x`},
		{"trailing object", `{}{}`},
		{"unterminated", `{"a": [1, 2`},
		{"invalid UTF-8", "[\"\xff\"]"},
		{"invalid UTF-8 outside strings", "[1]\xff"},
		{"lone high surrogate", `["\ud800"]`},
		{"lone low surrogate", `["\udc00"]`},
		{"high surrogate then letter", `["\ud83dA"]`},
		{"high surrogate then non-low escape", `["\ud83d\u0041"]`},
		{"two high surrogates", `["\ud83d\ud83d\ude00"]`},
		{"lone surrogate in key", `{"\udfff": 1}`},
		{"NaN literal", `[NaN]`},
		{"Infinity literal", `[Infinity]`},
		{"float overflow", `[1e400]`},
		{"raw control char", "[\"a\x01\"]"},
		{"BOM", "\ufeff{}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := CanonicalJSON([]byte(tc.in)); err == nil {
				t.Errorf("CanonicalJSON(%q) = %s, want error", tc.in, out)
			}
		})
	}
	// Decoder errors are wrapped, not flattened.
	_, err := CanonicalJSON([]byte(`{"a":}`))
	var syntaxErr *json.SyntaxError
	if !errors.As(err, &syntaxErr) {
		t.Errorf("err = %v, want a wrapped *json.SyntaxError", err)
	}
}

func TestAppendFloatBoundaries(t *testing.T) {
	// Exponent thresholds of Python's repr, generated with python3.
	tests := []struct {
		in   float64
		want string
	}{
		{9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"},
		{1.2345e16, "1.2345e+16"},
		{0.0001, "0.0001"},
		{0.00012, "0.00012"},
		{9.9e-05, "9.9e-05"},
		{1e-100, "1e-100"},
		{123.456, "123.456"},
		{-1.5, "-1.5"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"},
	}
	for _, tc := range tests {
		if got := string(appendFloat(nil, tc.in)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestOrderedMatchesPythonInsertionOrder(t *testing.T) {
	args := map[string]any{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}
	got, err := Ordered(args, []string{"to", "subject", "body"})
	if err != nil {
		t.Fatal(err)
	}
	// python3: json.dumps({"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"})
	want := `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "\u2026"}`
	if string(got) != want {
		t.Fatalf("Ordered = %s, want %s", got, want)
	}
	unsorted, err := FromCanonical("exec_01H8", "step-4", got, 8)
	if err != nil {
		t.Fatal(err)
	}
	sorted, _ := Derive("exec_01H8", "step-4", args, 8)
	if sorted != "ik_a94a0b1d" || unsorted == sorted {
		t.Fatalf("sorted %s, unsorted %s: want ik_a94a0b1d and a different key", sorted, unsorted)
	}
}

// The fast path for flat objects takes the usual arguments of a tool call,
// leaves everything else to the long way, and agrees with it.
func TestCanonicalFlat(t *testing.T) {
	for in, fast := range map[string]bool{
		`{"to": "user1@example.com", "subject": "Invoice 1"}`:    true,
		` {"b":1,"a":null , "c":true,"d":false,"e":-12, "f":0} `: true,
		`{}`:                   true,
		`{"a": "x", "a": "y"}`: false, // duplicate key: the last one wins
		`{"a": -0}`:            false,
		`{"a": 1.0}`:           false,
		`{"a": 1e3}`:           false,
		`{"a": 01}`:            false,
		`{"a": "é"}`:           false,
		`{"a": "x\"y"}`:        false,
		`{"a": {"b": 1}}`:      false,
		`{"a": [1]}`:           false,
		`{"a": 1,}`:            false,
		`{"a": 1} x`:           false,
		`{"a" 1}`:              false,
		`[1]`:                  false,
		`{"a": tru}`:           false,
		`{"a": nul`:            false,
	} {
		out, ok := canonicalFlat([]byte(in))
		if ok != fast {
			t.Errorf("%s: fast path %v, want %v", in, ok, fast)
		}
		long, err := canonicalDecoded([]byte(in))
		if ok && (err != nil || string(out) != string(long)) {
			t.Errorf("%s: fast %s, long %s (%v)", in, out, long, err)
		}
		got, gerr := CanonicalJSON([]byte(in))
		if string(got) != string(long) || (gerr == nil) != (err == nil) {
			t.Errorf("%s: CanonicalJSON %s %v, the long way %s %v", in, got, gerr, long, err)
		}
	}
}
