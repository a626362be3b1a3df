package cli

import (
	"path/filepath"
	"regexp"
	"testing"
)

// TestRoomOnTheProjector: 'retrylab room' in a terminal opens the room
// view at 80×24 with the line participants type; a participant who joins
// and runs naive shows up live with the duplicate, and s puts it on a
// slide, enter opens her trace beside her outbox; q closes the room.
func TestRoomOnTheProjector(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	roomDB, ada := filepath.Join(dir, "room.db"), filepath.Join(dir, "ada.db")
	s := startScreen(t, bin, roomDB, 80, 24, "room", "--code", "K7QX-3M9P")
	s.waitFor("the empty room", "Room · 0 participants", "nobody has joined yet")
	url := regexp.MustCompile(`retrylab join (http://127\.0\.0\.1:\d+) --code K7QX-3M9P`).FindStringSubmatch(s.text())
	if url == nil {
		t.Fatalf("the room view shows no join line:\n%s", s.text())
	}
	ok(t, ada, "join", url[1], "--code", "K7QX-3M9P", "--name", "ada")
	s.waitFor("ada joined", "Room · 1 participant", "ada")
	ok(t, ada, "run", "naive")
	s.waitFor("ada's naive run, live", "naive", "✓ completed", "2 ⚠", "naive: 1 of 1 sent a duplicate")
	s.press("s")
	s.waitFor("ada's slide", "a d a  ·  n a i v e", "the trace says   ✓ completed", "the outbox says  2 messages  ← duplicate")
	s.press("s")
	s.waitFor("back in the room", "Room · 1 participant")
	s.press("\r")
	s.waitFor("ada's trace beside her outbox", "ada's runs, as the room holds them", "2 messages ← duplicate send")
	s.press("P")
	s.waitFor("the room again", "Room · 1 participant")
	s.press("q")
	if err := <-s.done; err != nil {
		t.Fatalf("the room did not close cleanly on q: %v\n%s", err, s.text())
	}
}
