package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/fixtures"
)

// hostedRoom is a 'retrylab room' process and what it printed.
type hostedRoom struct {
	cmd       *exec.Cmd
	url, code string
}

// startRoom starts 'retrylab room' on db with args and waits for the line
// participants type.
func startRoom(t *testing.T, db string, args ...string) *hostedRoom {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db, "room"}, args...)...)
	cmd.Dir, cmd.Env = filepath.Dir(db), cliEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &hostedRoom{cmd: cmd}
	t.Cleanup(r.kill)
	joinLine := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "retrylab join ") {
				joinLine <- l
			}
		}
		close(joinLine)
	}()
	select {
	case l, ok := <-joinLine:
		f := strings.Fields(l) // retrylab join URL --code CODE --name YOUR-NAME
		if !ok || len(f) != 7 || f[3] != "--code" {
			t.Fatalf("room printed no join line (%q); stderr: %s", l, stderr.String())
		}
		r.url, r.code = f[2], f[4]
	case <-time.After(30 * time.Second):
		t.Fatal("room printed no join line in 30s")
	}
	return r
}

// kill is a kill -9 of the room.
func (r *hostedRoom) kill() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

type roomStatus struct {
	Participants []struct {
		Name        string `json:"name"`
		Executions  int    `json:"executions"`
		Scenario    string `json:"scenario"`
		Outcome     string `json:"outcome"`
		Outbox      int    `json:"outbox"`
		Duplicates  int    `json:"duplicates"`
		Predictions struct {
			Right int `json:"right"`
			Asked int `json:"asked"`
		} `json:"predictions"`
	} `json:"participants"`
}

// statusOf reads 'room status --json' on the room's database.
func statusOf(t *testing.T, roomDB string) map[string]string {
	t.Helper()
	r := ok(t, roomDB, "room", "status", "--json")
	var st roomStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("room status --json: %v\n%s", err, r)
	}
	out := map[string]string{}
	for _, p := range st.Participants {
		b, _ := json.Marshal(p)
		out[p.Name] = string(b)
	}
	return out
}

// tokenOf is the agent's token 'join' printed.
func tokenOf(t *testing.T, r ran) string {
	t.Helper()
	for _, l := range strings.Split(r.stdout, "\n") {
		if tok, found := strings.CutPrefix(l, "your agent's token (bearer): "); found {
			return tok
		}
	}
	t.Fatalf("join printed no token\n%s", r)
	return ""
}

// A room on loopback as a workshop uses it: two participants join and run
// naive and safe on their own databases, a wrong code is refused, a
// participant's own agent sends with its token; the room is killed and the
// participant's runs reach it when it is back; a participant killed mid-run
// loses nothing the room acknowledged and the rest follows.
func TestCLIRoom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	roomDB := filepath.Join(dir, "room.db")
	aliceDB, bobDB := filepath.Join(dir, "alice.db"), filepath.Join(dir, "bob.db")
	rm := startRoom(t, roomDB)
	if !strings.HasPrefix(rm.url, "http://127.0.0.1:") {
		t.Fatalf("the room listens on %s, want loopback", rm.url)
	}

	msg := fails(t, 1, filepath.Join(dir, "eve.db"), "join", rm.url, "--code", "WRNG-CODE", "--name", "eve")
	if !strings.Contains(msg, "refused the code") {
		t.Errorf("a wrong code: %q", msg)
	}
	ok(t, aliceDB, "join", rm.url, "--code", rm.code, "--name", "alice")
	bobToken := tokenOf(t, ok(t, bobDB, "join", rm.url, "--code", strings.ToLower(rm.code), "--name", "bob"))

	must(t, 0, aliceDB, "run", "naive")
	must(t, 0, bobDB, "run", "safe")
	st := statusOf(t, roomDB)
	for name, want := range map[string]string{
		"alice": `{"name":"alice","executions":1,"scenario":"naive","outcome":"completed","outbox":2,"duplicates":1,"predictions":{"right":0,"asked":0}}`,
		"bob":   `{"name":"bob","executions":1,"scenario":"safe","outcome":"completed","outbox":1,"duplicates":0,"predictions":{"right":0,"asked":0}}`,
	} {
		if st[name] != want {
			t.Errorf("%s in the room:\n got %s\nwant %s", name, st[name], want)
		}
	}

	// Bob's own agent: plain HTTP with the token 'join' printed.
	req, _ := http.NewRequest(http.MethodPost, rm.url+"/v1/room/mail/v1/send",
		strings.NewReader(`{"to":"jordan@acme.dev","subject":"From bob's agent","body":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+bobToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("bob's agent's send: %s", resp.Status)
	}
	if b := statusOf(t, roomDB)["bob"]; !strings.Contains(b, `"outbox":2`) {
		t.Errorf("bob's agent's send is not in his outbox: %s", b)
	}

	// The teacher resets the room's world from another terminal (the
	// control API, on loopback): the room and its participants stay.
	must(t, 0, roomDB, "reset")
	if st := statusOf(t, roomDB); !strings.Contains(st["alice"], `"outbox":2`) || !strings.Contains(st["bob"], `"outbox":1`) {
		t.Errorf("after the room's reset: %v", st)
	}

	// kill -9 of the room: alice keeps running locally.
	rm.kill()
	must(t, 0, aliceDB, "run", "safe")
	u, _ := url.Parse(rm.url)
	rm = startRoom(t, roomDB, "--listen", u.Host, "--code", rm.code)
	must(t, 0, aliceDB, "run", "one-send") // her next command finds the room back
	if a := statusOf(t, roomDB)["alice"]; !strings.Contains(a, `"executions":3`) || !strings.Contains(a, `"outbox":4`) {
		t.Errorf("alice's runs while the room was down did not reach it: %s", a)
	}

	// kill -9 of bob mid-run, then his next command: the room has all he has.
	if _, killed := runAndKillAfter(t, bobDB, "[fault]", "run", "naive"); !killed {
		t.Fatal("bob's run ended before the kill: naive's lost response alone takes its 1s timeout")
	}
	must(t, 0, bobDB, "run", "one-send")
	h, err := engine.Open(engine.Config{DBPath: bobDB, Scenarios: fixtures.FS})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	xs, _, err := h.Executions(0, 0)
	if err != nil || len(xs) != 3 {
		t.Fatalf("bob's executions: %d, %v", len(xs), err)
	}
	for _, x := range xs {
		local, err := h.Events(x.ID, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, rm.url+"/v1/room/events?execution="+x.ID, nil)
		req.Header.Set("Authorization", "Bearer "+bobToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Events []json.RawMessage `json:"events"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != len(local) {
			t.Errorf("%s (%s): the room has %d events, bob's database %d", x.ID, x.Status, len(got.Events), len(local))
		}
	}
}
