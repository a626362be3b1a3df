package history

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestValidFlatIsJSONValid holds validFlat, which the decoder asks instead
// of json.Valid of a flat object's whole text, to json.Valid's answer on
// flat objects built of pieces near the edges of JSON's grammar: control
// characters in names and strings, numbers right and wrong, words, white
// space about a literal.
func TestValidFlatIsJSONValid(t *testing.T) {
	strs := []string{"", "a", "to", "a b", "tab\there", "nl\n", "\x1f", "\x7f", "é", "\xff\xfe", ":", "}{", "[1]", ",x"}
	lits := []string{"0", "-0", "1", "12", "-12", "01", "-", "1.", "1.5", ".5", "1e5", "1E+5", "1e-", "1e", "0.0e0", "-1.25E-07",
		"00", "1x", "true", "false", "null", "nul", "True", "NaN", "Infinity", " 1", "1 ", "\t1\n", " true ", "1 2", "\r\n null",
		"\x00", "1\x0b", ":", "tru e", "+1", "0x10", "1e5.5", "--1"}
	rng := rand.New(rand.NewPCG(14, 1))
	checked, valid := 0, 0
	for range 20000 {
		n := 1 + rng.IntN(4)
		text := []byte{'{'}
		for i := range n {
			name := strs[rng.IntN(len(strs))]
			if rng.IntN(2) == 0 {
				text = appendMember(text, i == 0, name, strs[rng.IntN(len(strs))], true)
			} else {
				text = appendMember(text, i == 0, name, lits[rng.IntN(len(lits))], false)
			}
		}
		text = append(text, '}')
		var space [flatMembers]member
		ms, ok := flatObject(space[:0], text)
		if !ok {
			continue
		}
		checked++
		want := json.Valid(text)
		if want {
			valid++
		}
		if got := validFlat(ms); got != want {
			t.Fatalf("validFlat(%q) = %v, json.Valid says %v", text, got, want)
		}
	}
	if checked < 10000 || valid == 0 || valid == checked {
		t.Fatalf("%d flat objects checked, %d of them JSON: the cases do not reach both answers", checked, valid)
	}
	for _, lit := range lits {
		if plainNumber([]byte(lit)) && !json.Valid([]byte(lit)) {
			t.Errorf("plainNumber(%q) but it is not JSON", lit)
		}
	}
}
