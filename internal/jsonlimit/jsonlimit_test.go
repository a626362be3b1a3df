package jsonlimit

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		err  string // "" for none
	}{
		{"flat", `{"a":[1,2,{"b":3}]}`, 3, ""},
		{"at the limit", `[[[]]]`, 3, ""},
		{"one past", `[[[[]]]]`, 3, "JSON nested deeper than 3 levels (at byte 4): retrylab refuses it unread"},
		{"objects count", `{"a":{"b":{"c":{}}}}`, 3, "JSON nested deeper than 3 levels (at byte 16): retrylab refuses it unread"},
		{"brackets in strings", `["[[[[{{{{", "\"[[[[", "\\", ["]]]]"]]`, 2, ""},
		{"escaped quote then brackets", `["\"", [[[1]]]]`, 3, "JSON nested deeper than 3 levels (at byte 10): retrylab refuses it unread"},
		{"closing past zero", `]]]][[[`, 3, ""},
		{"line named", "{\n\"a\":\n[[[1]]]}", 3, "JSON nested deeper than 3 levels (at line 3, byte 10): retrylab refuses it unread"},
		{"unclosed string", `["[[[[[[`, 1, ""},
		{"trailing backslash", `["\`, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDepth([]byte(tc.in), tc.max)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("CheckDepth(%q) = %v, want nil", tc.in, err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("CheckDepth(%q) = %v, want %q", tc.in, err, tc.err)
			}
			var de *DepthError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%T is not a *DepthError", err)
			}
		})
	}
}

// TestCheckBomb is the input that ended a host: a million levels. Each
// level has three brackets, so the 101st is the second of level 33.
func TestCheckBomb(t *testing.T) {
	bomb := strings.Repeat(`{"arrayValue":{"values":[`, 1_000_000)
	err := Check([]byte(bomb))
	var de *DepthError
	if !errors.As(err, &de) || de.Max != MaxDepth || de.Offset != 33*25+14 {
		t.Fatalf("Check(bomb) = %#v", err)
	}
}

// FuzzCheck compares Check with a byte-by-byte reading of JSON strings.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":"[\"]"}`), 2)
	f.Add([]byte(strings.Repeat("[", 200)), 100)
	f.Add([]byte(`["\\\"[[", [[[]]]]`), 3)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1000 {
			return
		}
		got := CheckDepth(data, max)
		want := slowDepth(data, max)
		var de *DepthError
		switch {
		case want < 0 && got != nil:
			t.Fatalf("CheckDepth(%q, %d) = %v, want nil", data, max, got)
		case want >= 0 && (!errors.As(got, &de) || de.Offset != int64(want)):
			t.Fatalf("CheckDepth(%q, %d) = %v, want a refusal at %d", data, max, got, want)
		}
	})
}

// slowDepth is the offset of the first bracket past max, or -1.
func slowDepth(data []byte, max int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return i
			}
		case c == ']' || c == '}':
			depth = max0(depth - 1)
		}
	}
	return -1
}

func max0(n int) int { return max(n, 0) }
