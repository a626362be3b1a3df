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

// Members that each pass flatMember, as the decoder writes them, make a
// text that flatObject splits back into as many and validFlat accepts, so
// the decoder need not split it again; members that do not pass may still
// (they run into each other), which the decoder then asks flatObject.
func TestFlatMemberIsFlatObject(t *testing.T) {
	// Pieces that quote, escape or separate, so members may run into
	// each other.
	strs := []string{"", "a", "a b", "tab\there", "\x1f", "é", "\xff", ":", "}{", "[1]", ",x", "q\"q", "back\\slash", "\"", "\\", "a,b", "{",
		"x\"y:z", "\",\"", "\":\"", "b\",\"c\":\"d", "b\",\"c\":1", "\":1,\"", "a\":", "\"x"}
	lits := []string{"0", "-0", "12", "01", "1.5", ".5", "1e5", "-1.25E-07", "true", "null", "nul", " 1", "1 ", "1 2", "",
		"\x00", "1,2", "1}", "[1]", "{}", "\"1\"", "\\1", "1\"", ",", "tru e", "+1", "\"\"", "\"a\\\"", "\"\x01\"", "\"a\"b\"",
		"1,\"y\":2", "\"b\",\"c\":\"d\"", "1,\"y\"", ":2", "\":2"}
	rng := rand.New(rand.NewPCG(14, 2))
	flat, not, fused := 0, 0, 0
	for range 100000 {
		n := 1 + rng.IntN(4)
		text := []byte{'{'}
		each := true
		for i := range n {
			name := strs[rng.IntN(len(strs))]
			value, isString := strs[rng.IntN(len(strs))], true
			if rng.IntN(2) == 0 {
				value, isString = lits[rng.IntN(len(lits))], false
			}
			text = appendMember(text, i == 0, name, value, isString)
			each = each && flatMember([]byte(name), []byte(value), isString)
		}
		text = append(text, '}')
		var space [flatMembers]member
		ms, ok := flatObject(space[:0], text)
		whole := ok && len(ms) == n && validFlat(ms)
		if each && !whole {
			t.Fatalf("%q: each member flat, the whole text not", text)
		}
		switch {
		case each:
			flat++
		case whole:
			fused++
		default:
			not++
		}
	}
	if flat < 1000 || not < 1000 || fused == 0 {
		t.Fatalf("%d flat, %d not, %d run together: the cases do not reach every answer", flat, not, fused)
	}
}
