package cli

import (
	"regexp"
	"testing"
)

// A move of the world clock is on the timeline, as the cause of the late
// duplicate in key-retention: show and the handout say each move with the
// total, and the key it expired; a second move, which expires nothing,
// still says the total (+50h). check still passes the history with them.
func TestCLIClockMovesAreInTheHistory(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	must(t, 137, db, "run", "key-retention")
	ok(t, db, "clock", "advance", "25h")
	ok(t, db, "clock", "advance", "25h")
	ok(t, db, "resume")

	show := ok(t, db, "show")
	has(t, show, "[clock]     ⏰ world clock +25h · now +25h", "[clock]     ⏰ world clock +25h · now +50h")
	key := regexp.MustCompile(`⏰ key (ik_[0-9a-f]+) expired \(step-4, kept 24h\): a retry with it executes again`)
	m := key.FindStringSubmatch(show.stdout)
	if m == nil {
		t.Fatalf("show does not say which key expired\n%s", show)
	}
	if n := count(show.stdout, "expired (step-4"); n != 1 {
		t.Errorf("the key is said to expire %d times, want once (the second move expired nothing)\n%s", n, show)
	}

	md := ok(t, db, "show", "--markdown")
	has(t, md, "⏰ world clock +25h · now +25h", "⏰ key "+m[1]+" expired (step-4, kept 24h)", "⏰ world clock +25h · now +50h")

	c := rl(t, db, "check")
	if c.code != 0 {
		t.Fatalf("check of a history with clock moves: exit %d\n%s", c.code, c)
	}
	has(t, c, "verdict: PASS")
}
