package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/gen"
)

// TestTimelineInPseudoTerminal runs naive with the real binary, opens the
// explorer in a pseudo-terminal at 80×24 and reads the timeline off the
// screen: w shows the delivery, the deadline and the retry on one axis;
// enter on the second attempt selects it in the trace.
func TestTimelineInPseudoTerminal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	if out, err := exec.Command(bin, "--db", db, "run", "naive").CombinedOutput(); err != nil {
		t.Fatalf("run naive: %v\n%s", err, out)
	}
	s := startScreen(t, bin, db, 80, 24)
	s.waitFor("the explorer", "exec_7K2Q")
	s.press("w")
	s.waitFor("the timeline", "Timeline  exec_7K2Q", "send_invoice_e", "◆", "⏱", "mail", "#1", "#2", "attempt 1/2")
	s.press("j")
	s.waitFor("the second attempt", "attempt 2/2", "step-4 #2")
	s.press("\r")
	s.waitFor("back in the trace", "#2 ✓ 200")
	s.press("q")
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("q did not end the explorer; it shows:\n%s", s.text())
	}
}

// BenchmarkKeyToScreenTimeline is BenchmarkKeyToScreen with the Timeline
// view open on a generated naive execution of 10 000 attempts (all of it:
// the timeline reads the history past the trace's first page): from
// writing a key to the terminal until the program's answer comes out of
// it, p50, p99 and max.
func BenchmarkKeyToScreenTimeline(b *testing.B) {
	db, st, err := gen.Cached(context.Background(), gen.CacheDir(), gen.Options{Executions: 1, AttemptsPerStep: 10000, Seed: 4})
	if err != nil {
		b.Fatal(err)
	}
	reads := make(chan time.Time, 4096)
	s := startScreenTimed(b, reads, bin, db, 160, 48)
	// quiet waits until the output has been quiet for d, or a second
	// passed: the explorer's first frames of a long history keep coming.
	quiet := func(d time.Duration) {
		limit := time.After(time.Second)
		for {
			select {
			case <-reads:
			case <-time.After(d):
				return
			case <-limit:
				return
			}
		}
	}
	s.waitFor("the explorer", "Executions", "Detail", "#999")
	quiet(300 * time.Millisecond)
	s.press("w")
	s.waitFor("the timeline", "Timeline")
	// The whole history read and laid out, not the first page's timeline:
	// its title no longer says the rest is being read.
	for deadline := time.Now().Add(20 * time.Second); strings.Contains(s.text(), "reading the rest"); {
		if time.Now().After(deadline) {
			b.Fatalf("the timeline still reads the rest of the history:\n%s", s.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
	quiet(200 * time.Millisecond)
	keys := []string{"j", "j", "+", "+", "+", "l", "l", "j", "k", "h", "-", "+", "+", "j", "l", "0"}
	lat, unchanged := timeKeys(b, s, reads, keys, quiet)
	s.press("w") // closes the timeline (an esc followed at once by q reads as alt+q)
	time.Sleep(100 * time.Millisecond)
	s.press("q")
	select {
	case <-s.done:
	case <-time.After(10 * time.Second): // the cleanup kills it
	}
	reportLatencies(b, "", lat)
	b.ReportMetric(float64(st.Attempts), "attempts")
	b.ReportMetric(float64(unchanged), "unchanged-keys")
}
