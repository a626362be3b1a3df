package main

import "testing"

// show tells what only the whole history can: the effect each attempt
// caused, as recorded, and the crashed attempt whose outcome the agent
// never learnt though the provider delivered (◆).
func TestCLIShowReadsEffectsFromTheHistory(t *testing.T) {
	db := newDB(t)
	must(t, 137, db, "run", "crash") // the worker is killed
	ok(t, db, "resume")
	has(t, ok(t, db, "show"),
		"[mail-api]  delivered id=msg_3def2b to jordan@acme.dev for step-4 attempt 1 (recorded)",
		"[trace]     ◆ attempt 1 of step-4: outcome unknown, provider delivered msg_3def2b",
		"[mail-api]  delivered id=msg_fee683 to jordan@acme.dev for step-4 attempt 2 (recorded)")
}
