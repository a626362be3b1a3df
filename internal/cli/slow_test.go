package cli

import "testing"

// run --slow waits before each attempt and says so as it narrates, and
// show finds the waits in the history; a negative pace is a usage error.
func TestCLIRunSlow(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := ok(t, db, "run", "naive", "--slow=20ms")
	has(t, r, "slow motion: 20ms before attempt 1 of step-4", "slow motion: 20ms before attempt 2 of step-4")
	has(t, ok(t, db, "show"), "slow motion: 20ms before attempt 2 of step-4")
	fails(t, 2, db, "run", "naive", "--slow=-1s")
}
