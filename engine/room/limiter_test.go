package room

import (
	"strings"
	"testing"
	"time"
)

// The limiter blocks an address after its failures within the window, and
// forgets it once the window passed since the last one; other addresses
// are not touched.
func TestFailureLimiter(t *testing.T) {
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	l := newFailureLimiter(3, time.Minute, func() time.Time { return now })
	for i := 0; i < 3; i++ {
		if b, _ := l.blocked("10.0.0.1"); b {
			t.Fatalf("blocked after %d failures, want after 3", i)
		}
		l.fail("10.0.0.1")
		now = now.Add(10 * time.Second)
	}
	if b, wait := l.blocked("10.0.0.1"); !b || wait != 50*time.Second {
		t.Errorf("after 3 failures: blocked %v for %v, want true for 50s", b, wait)
	}
	if b, _ := l.blocked("10.0.0.2"); b {
		t.Error("another address is blocked")
	}
	now = now.Add(50 * time.Second)
	if b, _ := l.blocked("10.0.0.1"); b {
		t.Error("still blocked once the window passed")
	}
	l.fail("10.0.0.1")
	if b, _ := l.blocked("10.0.0.1"); b {
		t.Error("one failure after the window blocks again: the count did not start over")
	}
}

// Names are made safe for a terminal and cut to MaxNameLen.
func TestSanitiseName(t *testing.T) {
	for in, want := range map[string]string{
		"ada":                                  "ada",
		"  grace   hopper \t":                  "grace hopper",
		"\x1b[2J\x1b]0;pwned\x07eve":           "[2J]0;pwnedeve",
		"zero\u200bwidth\u202eflip":            "zerowidthflip",
		"\x00\x1b\x07":                         "",
		"Émilie du Châtelet":                   "Émilie du Châtelet",
		"abcdefghijklmnopqrstuvwxyz0123456789": "abcdefghijklmnopqrstuvwxyz012345",
	} {
		if got := SanitiseName(in); got != want {
			t.Errorf("SanitiseName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Codes are two groups of four from the alphabet, and compare without
// regard to case, spaces or dashes.
func TestCodes(t *testing.T) {
	c, err := NewCode()
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 9 || c[4] != '-' {
		t.Fatalf("code %q: want XXXX-XXXX", c)
	}
	for i, r := range c {
		if i != 4 && !strings.ContainsRune(codeAlphabet, r) {
			t.Errorf("code %q has %q, not in the alphabet", c, r)
		}
	}
	if !sameSecret(normaliseCode("k7qx 3m9p"), normaliseCode("K7QX-3M9P")) || sameSecret(normaliseCode("K7QX-3M9Q"), normaliseCode("K7QX-3M9P")) {
		t.Error("codes do not compare as typed")
	}
}
