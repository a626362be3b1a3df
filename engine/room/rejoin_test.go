package room_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/room"
)

// A participant joining again under its name gets its place back when it
// proves it is them (the token its database was given) or after it left;
// anyone else asking for a taken name is refused. A participant who left
// shows as left, and its token no longer passes.
func TestJoinAgainAndLeave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	ada := join(t, r, filepath.Join(dir, "ada.db"), "ada")
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	push(t, r, ada, room.Execution{ID: "exec_1", Scenario: "naive", Status: "completed", Sends: map[string]int{"k": 2}, Started: at, Updated: at})
	c := &room.Client{URL: r.url}
	ctx := context.Background()

	var se *room.StatusError
	if _, err := c.Join(ctx, r.code, "ADA"); !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Errorf("another joining as ada: %v, want 409", err)
	}
	if _, err := c.Rejoin(ctx, r.code, "ada", "rlp_not-hers"); !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Errorf("joining as ada with another token: %v, want 409", err)
	}
	if _, err := c.Rejoin(ctx, "WRNG-CODE", "ada", ada.Token); !errors.Is(err, room.ErrWrongCode) {
		t.Errorf("ada's token with a wrong code: %v, want ErrWrongCode", err)
	}
	back, err := c.Rejoin(ctx, r.code, "ada", ada.Token)
	if err != nil || back.Token != ada.Token || back.Participant != ada.Participant {
		t.Fatalf("ada joining again with her token: %+v, %v; want her place and token", back, err)
	}

	if err := (&room.Client{URL: r.url, Token: ada.Token}).Leave(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := r.srv.Status()
	if err != nil || len(st.Participants) != 1 || !st.Participants[0].Left {
		t.Fatalf("after ada left: %+v, %v; want her row, left", st, err)
	}
	if code, _ := request(t, http.MethodGet, r.url+"/v1/room/status", ada.Token, nil); code != http.StatusUnauthorized {
		t.Errorf("ada's token after she left: %d, want 401", code)
	}
	again, err := c.Join(ctx, r.code, "ada")
	if err != nil || again.Participant != ada.Participant || again.Token == ada.Token {
		t.Fatalf("ada joining again after she left: %+v, %v; want her place under a new token", again, err)
	}
	st, _ = r.srv.Status()
	if p := st.Participants[0]; p.Left || p.Executions != 1 {
		t.Errorf("ada back: %+v, want in, with her run", p)
	}
}

// A participant whose room is down is told so in one line when its
// retrylab closes after a run; with the room up, nothing is said.
func TestMirrorSaysTheRoomCannotBeReached(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	adaDB, graceDB := filepath.Join(dir, "ada.db"), filepath.Join(dir, "grace.db")
	join(t, r, adaDB, "ada")
	join(t, r, graceDB, "grace")

	var mu sync.Mutex
	var said []string
	opts := fastMirror
	opts.Warn = func(p string) { mu.Lock(); said = append(said, p); mu.Unlock() }
	hg := openParticipantWith(t, graceDB, opts)
	runScenario(t, hg, "one-send")
	if err := hg.Close(); err != nil {
		t.Fatal(err)
	}
	if len(said) != 0 {
		t.Fatalf("with the room up: %q, want nothing said", said)
	}

	r.close()
	ha := openParticipantWith(t, adaDB, opts)
	runScenario(t, ha, "one-send")
	if err := ha.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], "the room at "+r.url+" cannot be reached (connection refused)") || strings.Contains(said[0], "\n") {
		t.Errorf("with the room down: %q, want one line that it cannot be reached", said)
	}
}
