package temporal_test

import (
	"os"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/temporal"
)

// FuzzDecode feeds arbitrary files to the history decoder: it must never
// panic nor overflow its stack, and an error is one line naming no source
// file. Seeds: a real history, nesting bombs in the payload shorthand just
// under, just over and far over the limit. More live in testdata/fuzz.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"order-run1.cli.json", "order-run2.ui.json", "bad-cut-short.json"} {
		data, err := os.ReadFile("../../fixtures/temporal/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, levels := range []int{90, 93, 94, 20_000} {
		f.Add(temporalBomb(levels))
	}
	f.Add([]byte(`{"history":` + strings.Repeat(`{"events":[`, 60) + strings.Repeat("]}", 60) + "}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := temporal.Decode(data)
		if err != nil && (strings.ContainsAny(err.Error(), "\n\r") || strings.Contains(err.Error(), ".go:")) {
			t.Fatalf("error %q: more than one line, or a source file", err)
		}
	})
}
