package errkind

import (
	"errors"
	"fmt"
	"testing"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/store"
)

// TestEveryRowRoundTrips sends each sentinel across as the host does
// (its kind and its words) and checks what arrives: the same kind, the
// same words, the same sentinel, the same exit code.
func TestEveryRowRoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range rows {
		if r.kind == "" || seen[r.kind] {
			t.Errorf("%v: kind %q is empty or named twice", r.err, r.kind)
		}
		seen[r.kind] = true
		sent := fmt.Errorf("%w: x-1", r.err)
		kind := KindOf(sent)
		if kind != r.kind {
			t.Errorf("KindOf(%q) = %q, want %q", sent, kind, r.kind)
		}
		got := FromWire(kind, sent.Error())
		if got.Error() != sent.Error() {
			t.Errorf("FromWire(%q) says %q, want the words as sent", kind, got)
		}
		if !errors.Is(got, r.err) {
			t.Errorf("FromWire(%q) is not %v", kind, r.err)
		}
		if KindOf(got) != kind {
			t.Errorf("KindOf(FromWire(%q)) = %q", kind, KindOf(got))
		}
		if ExitCode(got) != r.exit || ExitCode(sent) != r.exit {
			t.Errorf("%v: exit %d here, %d arrived, want %d", r.err, ExitCode(sent), ExitCode(got), r.exit)
		}
	}
}

// TestExitCodes pins the codes the command line has always ended with.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("something else"), ExitFailure},
		{fmt.Errorf("run: %w", ErrNoExecution), 1},
		{ErrBusy, 1},
		{ErrHostClosing, 1},
		{fmt.Errorf("%w %q (known: naive)", scenario.ErrUnknown, "nope"), 2},
		{fmt.Errorf("%w: x.yaml", scenario.ErrNoFile), 2},
		{store.ErrCorrupt, 1},
		{store.ErrLocked, 1},
		{FromWire("unknown_scenario", `unknown scenario "nope"`), 2},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestUnknownKindIsJustWords: a kind this build does not know (a newer
// host's), or none, arrives as its words and exits 1.
func TestUnknownKindIsJustWords(t *testing.T) {
	for _, kind := range []string{"", "from_a_newer_host"} {
		err := FromWire(kind, "it failed")
		if err.Error() != "it failed" || KindOf(err) != "" || ExitCode(err) != ExitFailure {
			t.Errorf("FromWire(%q): %q, kind %q, exit %d", kind, err, KindOf(err), ExitCode(err))
		}
	}
	if KindOf(errors.New("no such execution")) != "" {
		t.Error("an error is named by what it is, not by its words")
	}
}
