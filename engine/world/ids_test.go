package world

import (
	"fmt"
	"regexp"
	"testing"
)

func TestMessageIDsUnique(t *testing.T) {
	pattern := regexp.MustCompile(`^msg_[0-9a-f]{6}$`)
	seen := make(map[string]uint64, 100000)
	for seq := uint64(1); seq <= 100000; seq++ {
		id := messageID(seq)
		if !pattern.MatchString(id) {
			t.Fatalf("seq %d: id %q", seq, id)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("seq %d and %d share id %q", prev, seq, id)
		}
		seen[id] = seq
		if messageID(seq) != id {
			t.Fatalf("seq %d: id not deterministic", seq)
		}
	}
	if messageID(1) == "msg_000001" {
		t.Error("ids are not scrambled")
	}
}

// scramble24 must be a bijection on the whole 24-bit range.
func TestScramble24Bijective(t *testing.T) {
	if testing.Short() {
		t.Skip("walks 2^24 values")
	}
	seen := make([]uint64, (1<<24)/64)
	for x := uint64(0); x < 1<<24; x++ {
		y := scramble24(x)
		if y > mask24 {
			t.Fatalf("scramble24(%d) = %d out of range", x, y)
		}
		if seen[y/64]&(1<<(y%64)) != 0 {
			t.Fatalf("scramble24 collides at %d", x)
		}
		seen[y/64] |= 1 << (y % 64)
	}
}

func TestScrambleWidens(t *testing.T) {
	if got := len(scramble(1<<24 - 1)); got != 6 {
		t.Errorf("seq 2^24-1: %d digits", got)
	}
	if got := len(scramble(1 << 24)); got != 7 {
		t.Errorf("seq 2^24: %d digits", got)
	}
	seen := map[string]uint64{}
	for _, base := range []uint64{1<<24 - 20000, 1<<28 - 20000, 1<<40 - 20000} {
		for seq := base; seq < base+40000; seq++ {
			s := scramble(seq)
			if prev, dup := seen[s]; dup {
				t.Fatalf("seq %d and %d share %q", prev, seq, s)
			}
			seen[s] = seq
		}
	}
	if recordID(7) != "rec_"+scramble(7) {
		t.Errorf("record ids %q", recordID(7))
	}
}

// scramble writes the high bits in hex without leading zeros, then the
// scrambled low 24 bits in six hex digits, as fmt's %x%06x would.
func TestScrambleAsPrintf(t *testing.T) {
	seqs := []uint64{0, 1, 2, 15, 16, 255, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1 << 28, 1<<40 + 12345, 1<<64 - 1}
	for s := uint64(3); s < 1<<62; s = s*7 + 1 {
		seqs = append(seqs, s)
	}
	for _, seq := range seqs {
		want := fmt.Sprintf("%06x", scramble24(seq))
		if high := seq >> 24; high != 0 {
			want = fmt.Sprintf("%x%06x", high, scramble24(seq))
		}
		if got := scramble(seq); got != want {
			t.Fatalf("scramble(%d) = %q, want %q", seq, got, want)
		}
		if got := messageID(seq); got != "msg_"+want {
			t.Fatalf("messageID(%d) = %q", seq, got)
		}
		if got := recordID(seq); got != "rec_"+want {
			t.Fatalf("recordID(%d) = %q", seq, got)
		}
	}
}
