package execindex

import (
	"errors"
	"slices"
	"testing"
)

// intern codes values in order of first sight, gives a known value its
// code again, and refuses a new value past the limit with ErrFull.
func TestIntern(t *testing.T) {
	codes, names := map[string]uint32{}, []string(nil)
	for i, v := range []string{"a", "b", "a", "c", "b"} {
		want := map[string]uint32{"a": 0, "b": 1, "c": 2}[v]
		got, err := intern(v, codes, &names, 3, "things")
		if err != nil || got != want {
			t.Fatalf("step %d: intern(%q) = %d, %v; want %d", i, v, got, err, want)
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("names = %v", names)
	}
	if _, err := intern("d", codes, &names, 3, "things"); !errors.Is(err, ErrFull) || err.Error() != ErrFull.Error()+": more than 3 things" {
		t.Errorf("a fourth value: %v, want ErrFull: more than 3 things", err)
	}
	if c, err := intern("c", codes, &names, 3, "things"); err != nil || c != 2 {
		t.Errorf("a known value when full: %d, %v", c, err)
	}
}
