package room_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/room"
)

// A participant's runs read from the room are what its own database holds:
// the same events, the same mail per attempt, the list and its filter.
func TestParticipantReaderIsTheParticipantsOwnHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	aliceDB := filepath.Join(dir, "alice.db")
	join(t, r, aliceDB, "alice")
	ha := openParticipant(t, aliceDB)
	runScenario(t, ha, "naive")
	waitStatus(t, r, outboxes(map[string]int{"alice": 2}))

	if _, err := r.srv.Participant("mallory"); !errors.Is(err, room.ErrNoParticipant) {
		t.Fatalf("a name nobody has: %v, want ErrNoParticipant", err)
	}
	pr, err := r.srv.Participant("alice")
	if err != nil {
		t.Fatal(err)
	}
	list, total, err := pr.Executions(0, 10)
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("alice's executions in the room: %+v, %d, %v", list, total, err)
	}
	x := list[0]
	local, err := ha.Execution(x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.Scenario != "naive" || x.Status != local.Status || !x.Duplicates {
		t.Errorf("alice's execution in the room: %+v, want naive, %s, with a duplicate", x, local.Status)
	}

	want, err := ha.Events(x.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pr.Events(x.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("alice's events in the room differ from hers:\nroom  %s\nlocal %s", gj, wj)
	}
	if tail, err := pr.Events(x.ID, 3, 2); err != nil || len(tail) != 2 || tail[0].Seq != 3 {
		t.Errorf("events from seq 3, two: %+v, %v", tail, err)
	}

	wantMsgs, err := engine.NewLocal(ha).MessagesFor(x.ID)
	if err != nil {
		t.Fatal(err)
	}
	gotMsgs, err := pr.MessagesFor(x.ID)
	if err != nil || len(gotMsgs) != len(wantMsgs) || len(gotMsgs) != 2 {
		t.Fatalf("alice's outbox in the room: %+v, %v; hers: %+v", gotMsgs, err, wantMsgs)
	}
	for i := range wantMsgs {
		w, g := wantMsgs[i], gotMsgs[i]
		if g.ID != w.ID || g.To != w.To || g.Subject != w.Subject || g.Attribution.Step != w.Attribution.Step ||
			g.Attribution.Attempt != w.Attribution.Attempt || g.Attribution.Key != w.Attribution.Key {
			t.Errorf("message %d in the room %+v, hers %+v", i, g, w)
		}
	}
	if _, n, err := pr.RecentMessages(10); err != nil || n != 2 {
		t.Errorf("alice's whole outbox in the room: %d, %v; want 2", n, err)
	}
	if _, n, _ := pr.FindExecutions("⚠", 0, 10); n != 1 {
		t.Errorf("filter ⚠: %d, want 1", n)
	}
	if _, n, _ := pr.FindExecutions("safe", 0, 10); n != 0 {
		t.Errorf("filter safe: %d, want 0", n)
	}
}

// A subscription to a participant's runs says when the room received more
// of them: the explorer then reads them again.
func TestParticipantReaderFollowsTheRoom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	aliceDB := filepath.Join(dir, "alice.db")
	join(t, r, aliceDB, "alice")
	ha := openParticipant(t, aliceDB)
	pr, err := r.srv.Participant("alice")
	if err != nil {
		t.Fatal(err)
	}
	room.SetPoll(pr, 10*time.Millisecond)
	notices, unsubscribe := pr.Subscribe(16)
	runScenario(t, ha, "naive")
	select {
	case n, ok := <-notices:
		if !ok || !n.Lagged {
			t.Fatalf("the subscription said %+v (open %v), want a Lagged notice", n, ok)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notice in 30s of alice's run reaching the room")
	}
	unsubscribe()
	for range notices { // closed once unsubscribed
	}
	unsubscribe() // twice is harmless
}
