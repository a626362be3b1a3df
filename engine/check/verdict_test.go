package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
)

// The verdict's duplicated count is the table's: a duplicate of a planned
// key expiry is counted, and said to be planned (chaos seed 31337's verdict
// said "0 duplicated" above a table of 1).
func TestVerdictCountsPlannedExpiriesAsTheTableDoes(t *testing.T) {
	r := newReport()
	kj := r.tally(history.Policy{Keys: true, Journal: true}.String())
	kj.Executions, kj.Operations, kj.Exact = 2, 2, 2
	kj.Classes[OK], kj.Classes[Duplicated], kj.ExpiredDuplicates = 1, 1, 1
	var table, verdict bytes.Buffer
	r.WriteTable(&table)
	r.WriteVerdict(&verdict, 0)
	want := "verdict: PASS — keys+journal: 0 lost, 1 duplicated (1 by a planned key expiry), 0 unexpected; every count as the model predicts (2 exact, 0 within range)\n"
	if verdict.String() != want {
		t.Fatalf("verdict:\n%s\nwant:\n%s", verdict.String(), want)
	}
	row := ""
	for _, l := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(l, "keys+journal ") {
			row = l
		}
	}
	col := 3 // policy, execs, ops, then the classes
	for col-3 < len(Classes) && Classes[col-3] != Duplicated {
		col++
	}
	if f := strings.Fields(row); len(f) <= col || f[col] != "1" {
		t.Fatalf("the table's keys+journal row %q does not show the 1 duplicated the verdict counts (columns %v)", row, Classes)
	}
}
