package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "span", "0 spans"},
		{1, "span", "1 span"},
		{2, "span", "2 spans"},
		{-1, "run", "-1 runs"},
		{1, "side-effecting attempt", "1 side-effecting attempt"},
		{12, "CRM write", "12 CRM writes"},
	} {
		if got := Count(tt.n, tt.noun); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}

func TestCountTypes(t *testing.T) {
	if got := Count(int64(1), "event"); got != "1 event" {
		t.Errorf("Count(int64(1)) = %q", got)
	}
	if got := Count(uint64(7), "event"); got != "7 events" {
		t.Errorf("Count(uint64(7)) = %q", got)
	}
	if got := Noun(uint32(1), "run"); got != "run" {
		t.Errorf("Noun(uint32(1)) = %q", got)
	}
}
