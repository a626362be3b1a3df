package scenario

import (
	"strings"
	"testing"
)

func TestNearestNamesATypo(t *testing.T) {
	names := []string{"crash", "key-retention", "key-retention-fixed", "naive", "one-send", "safe", "unsafe-escalates"}
	for _, c := range []struct{ typed, want string }{
		{"nave", "naive"},
		{"niave", "naive"},
		{"sfae", "safe"},
		{"key-retension", "key-retention"},
		{"key-ret", "key-retention key-retention-fixed"},
		{"onesend", "one-send"},
		{"nope", ""},
		{"zzzzzzzz", ""},
	} {
		if got := strings.Join(Nearest(c.typed, names), " "); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"nave", "naive", 1}, {"kitten", "sitting", 3}, {"sfae", "safe", 1}, {"ab", "ba", 1}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
