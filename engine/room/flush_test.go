package room_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// slowPushes delays every push by d: a room under a workshop's load.
func slowPushes(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/push") {
				time.Sleep(d)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// roomEvents is what the room holds of one of the participant's
// executions, read with its token.
func roomEvents(t *testing.T, r *aRoom, m room.Membership, exec string) []json.RawMessage {
	t.Helper()
	code, body := request(t, http.MethodGet, r.url+"/v1/room/events?execution="+exec, m.Token, nil)
	if code != http.StatusOK {
		t.Fatalf("%s's events of %s: %d %s", m.Name, exec, code, body)
	}
	var got struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	return got.Events
}

// A lesson resets the participant's database before the next one: the run
// before it reaches the room whole, however slow the room is, because the
// reset waits for the mirror to send it (within its drain bound), not
// because the mirror happened to be quick. The last run reaches it on
// Close, the same way.
func TestResetAndCloseWaitForTheMirror(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoomWrapped(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{}, slowPushes(150*time.Millisecond))
	aliceDB := filepath.Join(dir, "alice.db")
	alice := join(t, r, aliceDB, "alice")
	opts := fastMirror
	opts.Drain = 20 * time.Second // the bound: never reached here
	opts.Rescan = time.Hour
	h, err := engine.Open(engine.Config{DBPath: aliceDB, Scenarios: testrun.QuickTimeouts(t, fixtures.FS),
		Companion: room.Companion(room.MembershipFile(aliceDB), opts)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	runScenario(t, h, "naive")
	local, err := h.Events("exec_7K2Q", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Reset(); err != nil { // at once: the mirror is still pushing
		t.Fatal(err)
	}
	if got := roomEvents(t, r, alice, "exec_7K2Q"); len(got) != len(local) {
		t.Fatalf("after the reset the room holds %d of naive's %d events", len(got), len(local))
	}

	runScenario(t, h, "safe")
	xs, _, err := h.Executions(0, 0)
	if err != nil || len(xs) != 1 {
		t.Fatalf("after the reset: %+v, %v", xs, err)
	}
	local, err = h.Events(xs[0].ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := roomEvents(t, r, alice, xs[0].ID); len(got) != len(local) {
		t.Fatalf("after Close the room holds %d of safe's %d events", len(got), len(local))
	}
}
