package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpensADatabaseOfTheJSONWorld opens testdata/world1/retrylab.db, written
// by retrylab as of c610b32 (schema v3, the world's ledgers and the journals
// stored as JSON objects): naive, safe, invoice-crm, crash,
// same-key-other-payload, natural-idempotency, unsafe-escalates and
// concurrent-duplicates, three resumes, then gen --executions 12 --seed 3.
// What that build printed about it (show --json of its 20 executions, check,
// state --json, outbox, outbox --json, journal list) must come out the same,
// and new runs must add to its ledgers.
func TestOpensADatabaseOfTheJSONWorld(t *testing.T) {
	t.Parallel()
	const dir = "world1"
	db := copyOldDatabase(t, dir)
	golden := printedBy(t, dir)
	printsAsBefore(t, db, dir, 20)
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"outbox.txt", []string{"outbox"}},
		{"outbox.json", []string{"outbox", "--json"}},
		{"journal.txt", []string{"journal", "list"}},
	} {
		if got := ok(t, db, c.args...).stdout; got != golden(c.golden) {
			t.Errorf("%s differs:\n%s", strings.Join(c.args, " "), firstDiff(got, golden(c.golden)))
		}
	}

	// New entries join the old ones in every ledger: one-send sends with a
	// key and journals the step, reads-are-free also writes the CRM.
	count := func() map[string]int {
		var st map[string][]any
		if err := json.Unmarshal([]byte(ok(t, db, "state", "--json").stdout), &st); err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for k, v := range st {
			n[k] = len(v)
		}
		return n
	}
	before := count()
	ok(t, db, "run", "one-send")
	ok(t, db, "run", "reads-are-free")
	after := count()
	for _, k := range []string{"outbox", "keys", "journal", "crm"} {
		if after[k] <= before[k] {
			t.Errorf("%s: %d entries after two new runs, %d before", k, after[k], before[k])
		}
	}
	if got := ok(t, db, "state", "--json").stdout; !strings.HasPrefix(got, golden("state.json")[:strings.Index(golden("state.json"), `"keys"`)-len("    }\n  ],\n  ")]) {
		t.Errorf("the outbox after new runs does not begin with the old one")
	}
	has(t, ok(t, db, "check"), "verdict: PASS")
}
