package cli

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The teacher closes the room and starts it again on its database: it is
// back at its address with its code, the participants' tokens pass, and
// what grace ran meanwhile (told in one line that the room was down)
// arrives; joining again under one's own name gives one's place back,
// after a leave too, which the room's status shows; --new-code asks for
// another code.
func TestCLIRoomRestartJoinAgainAndLeave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	roomDB := filepath.Join(dir, "room.db")
	adaDB, graceDB := filepath.Join(dir, "ada.db"), filepath.Join(dir, "grace.db")
	rm := startRoom(t, roomDB)
	ok(t, adaDB, "join", rm.url, "--code", rm.code, "--name", "ada")
	graceToken := tokenOf(t, ok(t, graceDB, "join", rm.url, "--code", rm.code, "--name", "grace"))

	rm.kill()
	r := must(t, 0, graceDB, "run", "one-send")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "room: the room at "+rm.url+" cannot be reached (connection refused)") {
		t.Errorf("grace's run with the room down should say so in one line\n%s", r)
	}

	again := startRoom(t, roomDB)
	if again.url != rm.url || again.code != rm.code {
		t.Fatalf("the room came back at %s with code %s, want %s with %s", again.url, again.code, rm.url, rm.code)
	}
	ok(t, graceDB, "run", "one-send") // nothing to say: the room is back
	if g := statusOf(t, roomDB)["grace"]; !strings.Contains(g, `"executions":2`) {
		t.Errorf("grace's runs did not reach the room back: %s", g)
	}
	// Her row says her latest run's mail (1 message), and all her runs'.
	if r := ok(t, graceDB, "room", "status"); !regexp.MustCompile(`(?m)^grace +2 +one-send +completed +1 +0 +2 messages, 0 dup `).MatchString(r.stdout) {
		t.Errorf("grace's room status:\n%s", r)
	}

	r = ok(t, graceDB, "join", again.url, "--code", again.code, "--name", "grace")
	if !strings.Contains(r.stdout, "again as grace") || tokenOf(t, r) != graceToken {
		t.Errorf("grace joining again should get her place and token back\n%s", r)
	}
	msg := fails(t, 1, filepath.Join(dir, "eve.db"), "join", again.url, "--code", again.code, "--name", "grace")
	if !strings.Contains(msg, "409") || !strings.Contains(msg, "taken") {
		t.Errorf("another database joining as grace: %q, want 409", msg)
	}

	ok(t, adaDB, "leave")
	if r := ok(t, roomDB, "room", "status"); !strings.Contains(r.stdout, "ada (left)") {
		t.Errorf("the room should say ada left\n%s", r)
	}
	r = ok(t, adaDB, "join", again.url, "--code", again.code, "--name", "ada")
	if !strings.Contains(r.stdout, "joined the room") {
		t.Errorf("ada joining again after she left\n%s", r)
	}
	if r := ok(t, roomDB, "room", "status"); strings.Contains(r.stdout, "(left)") {
		t.Errorf("ada is back: the room should not say she left\n%s", r)
	}

	again.kill()
	fresh := startRoom(t, roomDB, "--new-code")
	if fresh.url != rm.url || fresh.code == rm.code {
		t.Errorf("--new-code: at %s with %s, want %s with another code than %s", fresh.url, fresh.code, rm.url, rm.code)
	}

	// Its address taken meanwhile: the room moves to another port of the
	// same host, its code kept.
	fresh.kill()
	ln, err := net.Listen("tcp", strings.TrimPrefix(fresh.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	moved := startRoom(t, roomDB)
	if moved.url == fresh.url || !strings.HasPrefix(moved.url, "http://127.0.0.1:") || moved.code != fresh.code {
		t.Errorf("its address taken: at %s with %s, want another port of 127.0.0.1 with %s", moved.url, moved.code, fresh.code)
	}
}
