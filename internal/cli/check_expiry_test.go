package cli

import "testing"

// 'check' judges the key expiry by what happened: key-retention run and
// resumed at once (the clock never moved, the key was remembered, one
// invoice) passes, as does the run whose clock was moved 25 hours (the key
// forgotten, two invoices, a planned expiry). The check once took the
// expiry from the scenario's script and failed the first.
func TestCLICheckJudgesKeyExpiryByTheRecord(t *testing.T) {
	t.Parallel()
	quick := newDB(t)
	must(t, 137, quick, "run", "key-retention")
	ok(t, quick, "resume")
	c := rl(t, quick, "check")
	if c.code != 0 {
		t.Fatalf("run; resume; check: exit %d\n%s", c.code, c)
	}
	has(t, c, "verdict: PASS")

	paused := newDB(t)
	must(t, 137, paused, "run", "key-retention")
	ok(t, paused, "clock", "advance", "25h")
	ok(t, paused, "resume")
	c = rl(t, paused, "check")
	if c.code != 0 {
		t.Fatalf("run; advance 25h; resume; check: exit %d\n%s", c.code, c)
	}
	has(t, c, "verdict: PASS")
}
