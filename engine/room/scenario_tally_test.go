package room_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/room"
)

// push sends one execution's record to the room as a participant's mirror
// would (no events: the tally reads the records).
func push(t *testing.T, r *aRoom, m room.Membership, x room.Execution) {
	t.Helper()
	c := room.Client{URL: r.url, Token: m.Token}
	if _, err := c.Push(context.Background(), room.PushRequest{Execution: &x}); err != nil {
		t.Fatalf("push %s of %s: %v", x.ID, m.Name, err)
	}
}

// The user trial: ada ran naive (a duplicate), then crash (killed: one
// message so far), then safe; grace ran naive, then natural-idempotency
// (no mail). Each scenario's tally counts each participant's latest run of
// that scenario only, and a participant's row says its latest run's own
// outbox, not everything it ever sent.
func TestScenarioTallyCountsEachScenariosOwnRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	ada := join(t, r, filepath.Join(dir, "ada.db"), "ada")
	grace := join(t, r, filepath.Join(dir, "grace.db"), "grace")
	at := func(min int) time.Time { return time.Date(2026, 6, 1, 9, min, 0, 0, time.UTC) }
	const invoice = "jordan@acme.dev\x00Your June invoice"

	push(t, r, ada, room.Execution{ID: "exec_1", Scenario: "naive", Status: "completed", Sends: map[string]int{invoice: 2}, Duplicates: true, Started: at(0), Updated: at(1)})
	push(t, r, grace, room.Execution{ID: "exec_1", Scenario: "naive", Status: "completed", Sends: map[string]int{invoice: 2}, Duplicates: true, Started: at(0), Updated: at(1)})
	push(t, r, grace, room.Execution{ID: "exec_2", Scenario: "natural-idempotency", Status: "completed", Started: at(2), Updated: at(3)})
	// ada's crash, killed after its first send: no duplicate yet.
	push(t, r, ada, room.Execution{ID: "exec_2", Scenario: "crash", Status: "crashed", Sends: map[string]int{invoice: 1}, Started: at(2), Updated: at(3)})

	st, err := r.srv.Status()
	if err != nil {
		t.Fatal(err)
	}
	want := []room.ScenarioTally{
		{Scenario: "crash", Participants: 1, Duplicated: 0},
		{Scenario: "naive", Participants: 2, Duplicated: 2},
		{Scenario: "natural-idempotency", Participants: 1, Duplicated: 0},
	}
	if g, w := mustJSON(t, st.Scenarios), mustJSON(t, want); g != w {
		t.Errorf("after the crash:\ngot  %s\nwant %s", g, w)
	}

	// ada resumes the crash (a duplicate), then runs safe (one message).
	push(t, r, ada, room.Execution{ID: "exec_2", Scenario: "crash", Status: "completed", Runs: 2, Sends: map[string]int{invoice: 2}, Duplicates: true, Started: at(2), Updated: at(4)})
	push(t, r, ada, room.Execution{ID: "exec_3", Scenario: "safe", Status: "completed", Sends: map[string]int{invoice: 1}, Started: at(5), Updated: at(6)})
	st, err = r.srv.Status()
	if err != nil {
		t.Fatal(err)
	}
	want = []room.ScenarioTally{
		{Scenario: "crash", Participants: 1, Duplicated: 1},
		{Scenario: "naive", Participants: 2, Duplicated: 2},
		{Scenario: "natural-idempotency", Participants: 1, Duplicated: 0},
		{Scenario: "safe", Participants: 1, Duplicated: 0},
	}
	if g, w := mustJSON(t, st.Scenarios), mustJSON(t, want); g != w {
		t.Errorf("after safe:\ngot  %s\nwant %s", g, w)
	}
	a := st.Participants[0]
	if a.Name != "ada" || a.Scenario != "safe" || a.LatestOutbox != 1 || a.LatestDuplicates != 0 || a.Outbox != 5 || a.Duplicates != 2 {
		t.Errorf("ada: %+v, want safe, its run 1 message and no duplicate; 5 messages and 2 duplicates in all", a)
	}
	g := st.Participants[1]
	if g.Scenario != "natural-idempotency" || g.LatestOutbox != 0 || g.LatestDuplicates != 0 {
		t.Errorf("grace: %+v, want natural-idempotency, its run no mail", g)
	}
}
