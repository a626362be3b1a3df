package otlp

import (
	"strings"
	"testing"
)

// A file cut short (a copy that stopped, a disk that filled) is named as
// such, wherever the cut falls, not by the JSON library's internals
// ("ID.UnmarshalJSONIter: length mismatch", "readStringSlowPath").
func TestTruncatedJSONSaysCutShort(t *testing.T) {
	full := doc(goodSpan)
	for _, cut := range []int{20, strings.Index(full, "a0000000") + 5, strings.Index(full, `"name"`) + 3, len(full) - 3} {
		_, err := read(strings.NewReader(full[:cut]), 1<<20, func(Batch) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "not OTLP/JSON: the JSON ends early (cut short?)") {
			t.Errorf("cut at %d: error %v, want it to say the file was cut short", cut, err)
		}
	}
	lines := doc(goodSpan) + "\n" + full[:len(full)-3] + "\n"
	_, err := read(strings.NewReader(lines), 1<<20, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2: not OTLP/JSON: the JSON ends early (cut short?)") {
		t.Errorf("JSON Lines: error %v, want line 2 cut short", err)
	}
}
