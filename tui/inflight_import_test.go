package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/trace"
)

// A workflow still running at its source (its history cut while SendEmail's
// attempt 3 runs, after two start-to-close timeouts), on a database of
// imports only: the list gives the span its history recorded, not now
// minus a start months ago; the audit finds the repeat in flight possible,
// and its Effects pane and the list's ◇ say so.
func TestGoldenInFlightImport(t *testing.T) {
	t.Parallel()
	h := openHost(t, importedDB(t, "../fixtures/temporal/inflight-sendemail.cli.json"))
	defer h.Close()
	src := engine.ImportsOnly(h)
	t.Run("At200x30", func(t *testing.T) {
		v := view(t, src, 200, 30, "POSSIBLE SendEmail")
		mustShow(t, ansi.Strip(v), "a running import", "◇ temporal-5a7e9c20", "the repeat is in flight", "#3 … in flight", "→ in flight: no end recorded yet")
		golden.RequireEqual(t, []byte(v))
	})
	t.Run("ListAt80x24", func(t *testing.T) {
		v := view(t, src, 80, 24, "POSSIBLE SendEmail", "shift+tab")
		plain := ansi.Strip(v)
		mustShow(t, plain, "a running import's row", "◇ temporal-5a7e9c20", "2026-03-02 10:00  13.2s recorded")
		if strings.Contains(plain, "h") && strings.Contains(plain, "m38s") {
			t.Errorf("the list gives a running import a duration to now:\n%s", plain)
		}
		golden.RequireEqual(t, []byte(v))
	})
}

// The trace's end row says the status the source gave, once, as show
// does: "execution timed out", not "execution failed — workflow timed out".
func TestEndRowSaysTheSourcesStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    trace.Note
		want string
	}{
		{trace.Note{Kind: trace.ExecutionEnded, Mark: trace.MarkFailed, Text: "timed out", Error: "workflow timed out"}, "execution timed out"},
		{trace.Note{Kind: trace.ExecutionEnded, Mark: trace.MarkFailed, Text: "cancelled", Error: "workflow cancelled"}, "execution cancelled"},
		{trace.Note{Kind: trace.ExecutionEnded, Mark: trace.MarkFailed, Error: "send_invoice_email: 503"}, "execution failed — send_invoice_email: 503"},
		{trace.Note{Kind: trace.ExecutionEnded, Mark: trace.MarkOK}, "execution completed"},
	} {
		if got := noteLine(&c.n); got != c.want {
			t.Errorf("%+v: %q, want %q", c.n, got, c.want)
		}
		// The run's row and the event's name say the same word.
		status, _ := c.n.EndWords()
		r := &trace.Run{Number: 1, End: &c.n}
		if got := runLine(r, &trace.Trace{Runs: []*trace.Run{r}}, true); !strings.HasSuffix(got, " "+status) {
			t.Errorf("%+v: the run's row %q does not end %q", c.n, got, status)
		}
		if got, want := eventName(&c.n), "execution "+status; status != "failed" && status != "completed" && got != want {
			t.Errorf("%+v: the event is named %q, want %q", c.n, got, want)
		}
	}
}
