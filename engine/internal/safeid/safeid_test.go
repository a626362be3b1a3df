package safeid

import (
	"strings"
	"testing"
)

func TestPart(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc-DEF_1.2", 64, "abc-DEF_1.2"},
		{"a b/c:d", 64, "a_b_c_d"},
		{"héllo", 64, "h_llo"},
		{"", 64, ""},
		{strings.Repeat("x", 100), 64, strings.Repeat("x", 64)},
		{strings.Repeat("/", 100), 80, strings.Repeat("_", 80)},
		{"abcdef", 3, "abc"},
	} {
		if got := Part(c.in, c.max); got != c.want {
			t.Errorf("Part(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
