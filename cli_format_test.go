package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestOpensADatabaseOfTheFirstEncoding opens testdata/v1/retrylab.db, written
// by retrylab before events had a compact encoding (every event a JSON
// object): naive, safe, invoice-crm and crash with their resumes, and 12
// generated executions. Everything the build of that time printed about it
// (testdata/v1: show --json of every execution, check, state --json) must
// come out the same, and new runs must append to it.
func TestOpensADatabaseOfTheFirstEncoding(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v1")
}

// TestOpensADatabaseOfTheSecondLayout opens testdata/v2/retrylab.db, written
// by retrylab as of 8ac4e1f (schema v2: compact events, each execution's
// history in a bucket of its own), the same runs as v1. It must read and
// print as that build did, and a new run must append to the old history.
func TestOpensADatabaseOfTheSecondLayout(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v2")
}

// TestOpensADatabaseOfTheFourthLayout opens testdata/v4/retrylab.db, written
// by retrylab as of c610b32 (schema v4: every history in history_events, in
// chunks of plain compact events; execution records as JSON), the same runs
// as v1 (gen's part with that build's generator). It must read and print as
// that build did, and a new run must append to the old history.
func TestOpensADatabaseOfTheFourthLayout(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v4")
}

// opensOldDatabase checks a copy of testdata/<dir>/retrylab.db against what
// the build that wrote it printed, then appends a run to one of its
// executions and checks the whole file again.
func opensOldDatabase(t *testing.T, dir string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	data, err := os.ReadFile(filepath.Join("testdata", dir, "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	golden := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	shows, err := filepath.Glob(filepath.Join("testdata", dir, "show", "*.json"))
	if err != nil || len(shows) != 16 {
		t.Fatalf("%d shows in testdata/%s/show (%v)", len(shows), dir, err)
	}
	for _, f := range shows {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if got, want := ok(t, db, "show", "--json", id).stdout, golden(filepath.Join("show", id+".json")); got != want {
			t.Errorf("show --json %s differs from the build that wrote it:\n%s", id, firstDiff(got, want))
		}
	}
	check := ok(t, db, "check").stdout
	if _, rest, _ := strings.Cut(check, "\n"); rest != golden("check.txt") {
		t.Errorf("check differs:\n%s", firstDiff(rest, golden("check.txt")))
	}
	if got := ok(t, db, "state", "--json").stdout; got != golden("state.json") {
		t.Errorf("state --json differs:\n%s", firstDiff(got, golden("state.json")))
	}

	// New events join the old ones: naive restarts exec_7K2Q (run 2).
	ok(t, db, "run", "naive")
	var before, after struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(golden("show/exec_7K2Q.json")), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ok(t, db, "show", "--json", "exec_7K2Q").stdout), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Events) <= len(before.Events) || !reflect.DeepEqual(after.Events[:len(before.Events)], before.Events) {
		t.Fatalf("exec_7K2Q after a new run: %d events, the old %d not kept as they were", len(after.Events), len(before.Events))
	}
	if last := after.Events[len(after.Events)-1]; last["type"] != "ExecutionCompleted" || last["run"] != float64(2) {
		t.Errorf("the new run's last event: %v", last)
	}
	has(t, ok(t, db, "check"), "16 executions", "verdict: PASS")
}

// firstDiff shows where two texts part.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, gl, wl)
		}
	}
	return "(same lines)"
}
