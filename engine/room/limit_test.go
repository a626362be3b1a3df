package room_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/room"
)

// joinAs posts a join as a participant's retrylab would, and returns the
// room's status code.
func joinAs(t *testing.T, r *aRoom, code, name string) int {
	t.Helper()
	got, _ := request(t, http.MethodPost, r.url+"/v1/room/join", "", strings.NewReader(fmt.Sprintf(`{"code":%q,"name":%q}`, code, name)))
	return got
}

// A classroom on one address (a NAT; here, loopback): bob mistypes the
// code five times and waits, the others still join; only fifty refusals
// from the address, under whatever names (a guesser of the code), hold
// back every join from it, and a valid token still passes.
func TestAClassroomBehindOneAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	for i := 0; i < 5; i++ {
		if got := joinAs(t, r, "K7QX-3M9Q", "bob"); got != http.StatusUnauthorized {
			t.Fatalf("bob's wrong code %d: %d, want 401", i+1, got)
		}
	}
	if got := joinAs(t, r, r.code, "Bob"); got != http.StatusTooManyRequests {
		t.Errorf("bob after five wrong codes, with the right one: %d, want 429 (he waits)", got)
	}
	ada := join(t, r, filepath.Join(dir, "ada.db"), "ada")
	if got := joinAs(t, r, r.code, "grace"); got != http.StatusCreated {
		t.Errorf("grace, behind bob's address, with the right code: %d, want 201", got)
	}

	// A guesser, under a new name every five tries.
	for i := 5; i < 50; i++ {
		if got := joinAs(t, r, fmt.Sprintf("GUES-%04d", i), fmt.Sprintf("guesser%d", i/5)); got != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i+1, got)
		}
	}
	if got := joinAs(t, r, r.code, "linus"); got != http.StatusTooManyRequests {
		t.Errorf("a join after fifty refusals from the address: %d, want 429", got)
	}
	if got, body := request(t, http.MethodGet, r.url+"/v1/room/status", ada.Token, nil); got != http.StatusOK {
		t.Errorf("ada's token after fifty refusals: %d %s, want 200", got, body)
	}
}
