package room_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// TestMain lets the hosts start this very test binary as their workers.
func TestMain(m *testing.M) {
	agent.MainForTests()
	testrun.WaitBound(4)
	os.Exit(m.Run())
}

const teacherToken = "rlt_teacher-token-for-tests"

// aRoom is a room served on loopback from its own database.
type aRoom struct {
	host *engine.Host
	srv  *room.Server
	http *http.Server
	url  string
	addr string
	code string
}

// openRoom hosts a room on dbPath at addr ("127.0.0.1:0": any port).
func openRoom(t *testing.T, dbPath, addr string, cfg room.Config) *aRoom {
	t.Helper()
	return openRoomWrapped(t, dbPath, addr, cfg, nil)
}

// openRoomWrapped is openRoom with the room's handler inside wrap (a slow
// network, say), unless wrap is nil.
func openRoomWrapped(t *testing.T, dbPath, addr string, cfg room.Config, wrap func(http.Handler) http.Handler) *aRoom {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: dbPath, Scenarios: testrun.QuickTimeouts(t, fixtures.FS), KeepOnReset: room.Buckets})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host, cfg.Services = h, h.Providers()
	if cfg.Code == "" {
		cfg.Code = "K7QX-3M9P"
	}
	cfg.TeacherToken = teacherToken
	srv, err := room.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for i := 0; ; i++ { // the port of a room just closed may take a moment to be free
		if ln, err = net.Listen("tcp", addr); err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	handler := srv.Handler()
	if wrap != nil {
		handler = wrap(handler)
	}
	r := &aRoom{host: h, srv: srv, http: &http.Server{Handler: handler}, addr: ln.Addr().String(), code: cfg.Code}
	r.url = "http://" + r.addr
	go func() { _ = r.http.Serve(ln) }()
	t.Cleanup(r.close)
	return r
}

// close stops the room as a kill would leave it: no goodbye to anyone.
func (r *aRoom) close() {
	if r.host == nil {
		return
	}
	_ = r.http.Close()
	_ = r.host.Close()
	r.host = nil
}

// join joins name to the room and remembers it beside dbPath.
func join(t *testing.T, r *aRoom, dbPath, name string) room.Membership {
	t.Helper()
	c := room.Client{URL: r.url}
	resp, err := c.Join(context.Background(), r.code, name)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	m := room.Membership{URL: r.url, Name: resp.Name, Participant: resp.Participant, Token: resp.Token}
	if err := room.SaveMembership(room.MembershipFile(dbPath), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// fastMirror retries quickly, for tests.
var fastMirror = room.MirrorOptions{Retry: 20 * time.Millisecond, MaxRetry: 100 * time.Millisecond, Drain: 2 * time.Second,
	Rescan: 50 * time.Millisecond}

// openParticipant opens a participant's host, mirroring to its room.
func openParticipant(t *testing.T, dbPath string) *engine.Host {
	t.Helper()
	return openParticipantWith(t, dbPath, fastMirror)
}

func openParticipantWith(t *testing.T, dbPath string, opts room.MirrorOptions) *engine.Host {
	t.Helper()
	h, err := engine.Open(engine.Config{DBPath: dbPath, Scenarios: testrun.QuickTimeouts(t, fixtures.FS),
		Companion: room.Companion(room.MembershipFile(dbPath), opts)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func runScenario(t *testing.T, h *engine.Host, name string) {
	t.Helper()
	run, err := h.Start(name, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitStatus polls the room's status until ok accepts it, for a bounded
// time, and fails with the last status seen otherwise.
func waitStatus(t *testing.T, r *aRoom, ok func(map[string]room.ParticipantStatus) bool) map[string]room.ParticipantStatus {
	t.Helper()
	c := room.Client{URL: r.url, Token: teacherToken}
	var last room.Status
	for i := 0; i < 1000; i++ {
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = st
		byName := map[string]room.ParticipantStatus{}
		for _, p := range st.Participants {
			byName[p.Name] = p
		}
		if ok(byName) {
			return byName
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the room never showed what was expected; last status: %+v", last)
	return nil
}

func outboxes(want map[string]int) func(map[string]room.ParticipantStatus) bool {
	return func(got map[string]room.ParticipantStatus) bool {
		for name, n := range want {
			if p, ok := got[name]; !ok || p.Outbox != n || p.Outcome != "completed" {
				return false
			}
		}
		return true
	}
}

// request sends one request to the room and returns its status and body.
func request(t *testing.T, method, url, token string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// Two participants on their own databases, one running naive and one
// safe, are seen in the room's status as they are; a participant's own
// agent, with its token, sends through the room's mail API and the send
// counts in its outbox; a wrong code is refused.
func TestTwoParticipantsAndAnAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})

	if _, err := (&room.Client{URL: r.url}).Join(context.Background(), "WRNG-CODE", "eve"); !errors.Is(err, room.ErrWrongCode) {
		t.Fatalf("a wrong code: got %v, want ErrWrongCode", err)
	}

	aliceDB, bobDB := filepath.Join(dir, "alice.db"), filepath.Join(dir, "bob.db")
	alice := join(t, r, aliceDB, "alice")
	bob := join(t, r, bobDB, "bob")
	ha, hb := openParticipant(t, aliceDB), openParticipant(t, bobDB)
	runScenario(t, ha, "naive")
	runScenario(t, hb, "safe")

	got := waitStatus(t, r, outboxes(map[string]int{"alice": 2, "bob": 1}))
	if a := got["alice"]; a.Scenario != "naive" || a.Executions != 1 || a.Duplicates != 1 {
		t.Errorf("alice: %+v, want naive, 1 execution, 1 duplicate", a)
	}
	if b := got["bob"]; b.Scenario != "safe" || b.Executions != 1 || b.Duplicates != 0 {
		t.Errorf("bob: %+v, want safe, 1 execution, no duplicate", b)
	}

	// Bob's own agent, in any language: plain HTTP with his token.
	send := `{"to":"jordan@acme.dev","subject":"From bob's own agent","body":"hi"}`
	code, body := request(t, http.MethodPost, r.url+"/v1/room/mail/v1/send", bob.Token, strings.NewReader(send))
	if code/100 != 2 {
		t.Fatalf("bob's agent's send: %d %s", code, body)
	}
	waitStatus(t, r, outboxes(map[string]int{"alice": 2, "bob": 2}))

	// Each reads its own runs, and only those.
	code, body = request(t, http.MethodGet, r.url+"/v1/room/events?execution=exec_7K2Q", alice.Token, nil)
	if code != http.StatusOK || !strings.Contains(body, `"EffectObserved"`) && !strings.Contains(body, `"seq":1`) {
		t.Fatalf("alice reads her run: %d %s", code, body)
	}
	code, body = request(t, http.MethodGet, r.url+"/v1/room/events?execution=exec_7K2Q", bob.Token, nil)
	if code != http.StatusOK || !strings.Contains(body, `"events":[]`) {
		t.Fatalf("bob reads alice's run: %d %s, want none of it", code, body)
	}

	// The status the participant reads is the room's.
	st, err := (&room.Client{URL: r.url, Token: alice.Token}).Status(context.Background())
	if err != nil || len(st.Participants) != 2 {
		t.Fatalf("alice reads the status: %+v, %v", st, err)
	}
}

// What an attacker gets: no token, a wrong token, a huge body, a name with
// escape sequences, a participant calling the teacher's reset, and
// repeated failures from one address.
func TestAttacker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{MaxBody: 4096, MaxFailures: 5, MaxAddressFailures: 5})
	mallory := join(t, r, filepath.Join(dir, "mallory.db"), "\x1b[2J\x1b]0;pwned\x07mal\tlory\u200b"+strings.Repeat("y", 100))
	if strings.ContainsAny(mallory.Name, "\x1b\x07\t\u200b") || len([]rune(mallory.Name)) > room.MaxNameLen {
		t.Errorf("the name was not sanitised: %q", mallory.Name)
	}
	code, _ := request(t, http.MethodPost, r.url+"/v1/room/join", "", strings.NewReader(`{"code":"K7QX-3M9P","name":"\u001b\u0007"}`))
	if code != http.StatusBadRequest {
		t.Errorf("a name of nothing but escapes: %d, want 400", code)
	}

	huge := `{"events":["` + strings.Repeat("x", 10000) + `"]}`
	if code, body := request(t, http.MethodPost, r.url+"/v1/room/push", mallory.Token, strings.NewReader(huge)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a huge body: %d %s, want 413", code, body)
	}
	deep := `{"events":[` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `]}`
	if code, body := request(t, http.MethodPost, r.url+"/v1/room/push", mallory.Token, strings.NewReader(deep)); code != http.StatusBadRequest || !strings.Contains(body, "nested deeper") {
		t.Errorf("a body nested 1000 deep: %d %s, want 400", code, body)
	}
	if code, body := request(t, http.MethodPost, r.url+"/v1/room/reset", mallory.Token, nil); code != http.StatusNotFound {
		t.Errorf("a participant calling reset: %d %s, want 404", code, body)
	}
	if code, _ := request(t, http.MethodPost, r.url+"/v1/room/mail/v1/send", teacherToken, strings.NewReader(`{}`)); code != http.StatusForbidden {
		t.Errorf("the teacher's token on the mail API: %d, want 403", code)
	}

	for i, tok := range []string{"", "rlp_guess", "rlp_guess2", mallory.Token + "x", "Bearer"} {
		if code, _ := request(t, http.MethodGet, r.url+"/v1/room/status", tok, nil); code != http.StatusUnauthorized {
			t.Errorf("bad token %d: %d, want 401", i, code)
		}
	}
	// Five refusals: from then on a join, even with the right code, and a
	// wrong token are refused at once; a valid token still passes.
	code, body := request(t, http.MethodPost, r.url+"/v1/room/join", "", strings.NewReader(`{"code":"K7QX-3M9P","name":"trudy"}`))
	if code != http.StatusTooManyRequests {
		t.Errorf("a join after five refusals: %d %s, want 429", code, body)
	}
	if code, body := request(t, http.MethodGet, r.url+"/v1/room/status", "rlp_guess3", nil); code != http.StatusTooManyRequests {
		t.Errorf("a wrong token after five refusals: %d %s, want 429", code, body)
	}
	if code, body := request(t, http.MethodGet, r.url+"/v1/room/status", mallory.Token, nil); code != http.StatusOK {
		t.Errorf("a valid token after five refusals: %d %s, want 200", code, body)
	}
}

// The room is killed: the participant keeps running locally, and its runs
// reach the room when the room is back. A resend of what the room already
// has (the participant killed between the room's acknowledgement and its
// cursor's commit) changes nothing there.
func TestRoomDownThenBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	roomDB := filepath.Join(dir, "room.db")
	r := openRoom(t, roomDB, "127.0.0.1:0", room.Config{})
	aliceDB := filepath.Join(dir, "alice.db")
	join(t, r, aliceDB, "alice")
	r.close()

	ha := openParticipant(t, aliceDB)
	runScenario(t, ha, "naive") // with no room to mirror to
	x, err := ha.Execution("exec_7K2Q")
	if err != nil || x.Status != "completed" {
		t.Fatalf("alice's local run: %+v, %v", x, err)
	}

	r = openRoom(t, roomDB, r.addr, room.Config{})
	waitStatus(t, r, outboxes(map[string]int{"alice": 2}))
	if err := ha.Close(); err != nil {
		t.Fatal(err)
	}

	// Forget the cursor: everything is sent again, and the room, which has
	// it by (participant, execution, seq), counts nothing twice.
	db, err := store.Open(aliceDB, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *store.Tx) error {
		var keys [][]byte
		if err := tx.Scan(room.BucketMirror, nil, false, func(k, _ []byte) bool { keys = append(keys, bytes.Clone(k)); return true }); err != nil {
			return err
		}
		if len(keys) == 0 {
			return errors.New("no cursor was kept")
		}
		for _, k := range keys {
			if err := tx.Delete(room.BucketMirror, k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var before json.RawMessage
	c := room.Client{URL: r.url, Token: teacherToken}
	st, _ := c.Status(context.Background())
	before, _ = json.Marshal(st)
	ha = openParticipant(t, aliceDB)
	if err := ha.Close(); err != nil { // the drain pushes everything again
		t.Fatal(err)
	}
	st, _ = c.Status(context.Background())
	after, _ := json.Marshal(st)
	if !bytes.Equal(before, after) {
		t.Errorf("a resend changed the room:\nbefore %s\nafter  %s", before, after)
	}
}

// A participant's lessons: their predictions reach the room, their runs
// under "lesson:"; after the participant's reset the scenario run again
// replaces its old run in the room; the room's own reset keeps the room.
func TestLessonsResetsAndTheRoomsReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	aliceDB := filepath.Join(dir, "alice.db")
	alice := join(t, r, aliceDB, "alice")
	opts := fastMirror
	opts.Namespace = "lesson"
	ha := openParticipantWith(t, aliceDB, opts)
	runScenario(t, ha, "naive")
	waitStatus(t, r, outboxes(map[string]int{"alice": 2}))

	st := lesson.State{Done: []lesson.Answer{
		{Scenario: "naive", Predicted: 1, Actual: 2},
		{Scenario: "safe", Predicted: 1, Actual: 1, Correct: true},
	}}
	if err := lesson.SaveProgress(ha, st); err != nil {
		t.Fatal(err)
	}
	seen := waitStatus(t, r, func(got map[string]room.ParticipantStatus) bool {
		return got["alice"].Predictions == room.Predictions{Right: 1, Asked: 2}
	})
	if seen["alice"].Lesson != "safe" {
		t.Errorf("alice's lesson: %q, want safe (her last answer)", seen["alice"].Lesson)
	}
	// Each answer reaches the room: the class tally is made of them.
	full, err := (&room.Client{URL: r.url, Token: teacherToken}).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantLessons := []room.LessonTally{
		{Lesson: "naive", Asked: 1, Right: 0, Answers: map[string]int{"1": 1}, Actual: 2},
		{Lesson: "safe", Asked: 1, Right: 1, Answers: map[string]int{"1": 1}, Actual: 1},
	}
	if gj, wj := mustJSON(t, full.Lessons), mustJSON(t, wantLessons); gj != wj {
		t.Errorf("the room's lessons:\ngot  %s\nwant %s", gj, wj)
	}

	// Reset and run naive again: the room holds the new run's events only.
	if err := ha.Reset(lesson.Bucket); err != nil {
		t.Fatal(err)
	}
	runScenario(t, ha, "naive")
	local, err := ha.Events("exec_7K2Q", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Events []json.RawMessage `json:"events"`
	}
	for i := 0; ; i++ {
		code, body := request(t, http.MethodGet, r.url+"/v1/room/events?execution=lesson:exec_7K2Q", alice.Token, nil)
		if code != http.StatusOK {
			t.Fatalf("alice's events: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Events) == len(local) || i == 500 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var first struct {
		Time time.Time `json:"time"`
	}
	if len(got.Events) != len(local) || json.Unmarshal(got.Events[0], &first) != nil || !first.Time.Equal(local[0].Time) {
		t.Fatalf("after the reset the room has %d events (first at %v), alice %d (first at %v)", len(got.Events), first.Time, len(local), local[0].Time)
	}
	if a := waitStatus(t, r, outboxes(map[string]int{"alice": 2}))["alice"]; a.Executions != 1 {
		t.Errorf("alice after her reset: %+v, want one execution", a)
	}

	// The teacher resets the room's world: the room stays.
	if err := r.host.Reset(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, outboxes(map[string]int{"alice": 2}))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
