package verify_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/narrate"
	"github.com/retrylab/retrylab/engine/verify"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

var (
	offsetRE    = regexp.MustCompile(`\+\d+\.\d{3}s`)
	durationRE  = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|ms|s)\b`)
	timestampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
)

// timelineRE is a line of the handout's timeline picture (its axis and
// lanes): where its bars fall depends on how long each attempt took in
// this run. Its moments, in words, are kept.
var timelineRE = regexp.MustCompile(`(?m)^[^\n]*[│╵][^\n]*$`)

// normalise replaces what differs between runs: times and durations, and
// the timeline's picture.
func normalise(b []byte) []byte {
	b = timelineRE.ReplaceAll(b, []byte("PICTURE"))
	b = timestampRE.ReplaceAll(b, []byte("TIMESTAMP"))
	b = offsetRE.ReplaceAll(b, []byte("+T"))
	return durationRE.ReplaceAll(b, []byte("DUR"))
}

// TestHandoutGolden runs scenarios for real and holds `show --markdown`'s
// handout of each to testdata/NAME.md.golden (go test -update rewrites them).
func TestHandoutGolden(t *testing.T) {
	for _, name := range []string{"crash", "safe", "invoice-crm", "regenerated-args-fixed", "unsafe-escalates"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scn := load(t, name)
			h, closeFn, err := opener(t)()
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := closeFn(); err != nil {
					t.Error(err)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := verify.Run(ctx, h, scn, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			x, err := h.Execution(out.Execution)
			if err != nil {
				t.Fatal(err)
			}
			events, err := h.Events(x.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := h.Providers().Records()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			err = narrate.Markdown(&buf, narrate.Handout{Execution: x, Events: events, Messages: out.Messages,
				Records: recs, Scenario: scn})
			if err != nil {
				t.Fatal(err)
			}
			got := normalise(buf.Bytes())
			golden := filepath.Join("testdata", name+".md.golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("handout differs from %s (go test -update rewrites it):\n%s", golden, firstDiff(got, want))
			}
		})
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "(same lines)"
}
