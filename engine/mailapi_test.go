package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/world"
)

// Done-when 6: the mail API driven directly over HTTP, as an external
// client of `retrylab serve` would, through a running host.

type reply struct {
	status  int
	header  http.Header
	body    []byte
	msgID   string
	deduped bool
}

// clients holds each test's HTTP client. A test uses its own transport and
// closes its idle connections before the host closes: a connection that is
// open but unused would hold the world's graceful shutdown for 5 s.
var clients sync.Map // *testing.T -> *http.Client

// openAPIHost opens a host for driving the world over HTTP.
func openAPIHost(t *testing.T) *engine.Host {
	return openAPIHostWith(t, engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db")})
}

// openAPIHostWith is openAPIHost with cfg.
func openAPIHostWith(t *testing.T, cfg engine.Config) *engine.Host {
	h := openHostWith(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	clients.Store(t, &http.Client{Transport: tr})
	t.Cleanup(func() { // runs before the host's cleanup
		tr.CloseIdleConnections()
		clients.Delete(t)
	})
	return h
}

// send POSTs body to the host's mail API with the given Idempotency-Key
// header values (none: no key).
func send(t *testing.T, h *engine.Host, body string, keys ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.Providers().MailURL()+"/v1/send", strings.NewReader(body))
	if err != nil {
		t.Error(err) // not Fatal: send runs on other goroutines too
		return reply{}
	}
	req.Header.Set("Content-Type", "application/json")
	for _, k := range keys {
		req.Header.Add("Idempotency-Key", k)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	c, _ := clients.Load(t)
	resp, err := c.(*http.Client).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", req.Method, req.URL, err)
		return reply{}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read response: %v", err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: data}
	var b struct {
		MessageID    string `json:"message_id"`
		Deduplicated bool   `json:"deduplicated"`
	}
	if json.Unmarshal(data, &b) == nil {
		r.msgID, r.deduped = b.MessageID, b.Deduplicated
	}
	return r
}

func wantProblem(t *testing.T, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%d answered with Content-Type %q, want application/problem+json", status, ct)
	}
	var p struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Status != status || p.Title == "" {
		t.Errorf("problem body %s (%v)", r.body, err)
	}
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a %d carries Idempotent-Replayed", status)
	}
}

func outboxLen(t *testing.T, h *engine.Host) int {
	t.Helper()
	n, err := engine.WorldOf(h).OutboxCount()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const invoice = `{"to": "jordan@acme.dev", "subject": "Your June invoice", "body": "…"}`

func TestMailAPIReplayAndMismatch(t *testing.T) {
	t.Parallel()
	h := openAPIHost(t)
	first := send(t, h, invoice, "k-replay")
	if first.status != 200 || first.deduped || first.msgID == "" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request: %d %s %v", first.status, first.body, first.header)
	}
	// The same payload, keys reordered and spaced differently: the same
	// request after canonicalisation, so the stored response comes back.
	again := send(t, h, `{"body":"…","subject":"Your June invoice",  "to":"jordan@acme.dev"}`, "k-replay")
	if again.status != 200 || !again.deduped || again.msgID != first.msgID {
		t.Fatalf("repeat: %d %s, want the stored response with deduplicated true and %s", again.status, again.body, first.msgID)
	}
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("repeat lacks Idempotent-Replayed: true: %v", again.header)
	}
	if n := outboxLen(t, h); n != 1 {
		t.Fatalf("outbox %d after a replay, want 1", n)
	}
	msgs := outbox(t, h)
	if at := msgs[0].Attribution; at.Execution != "" || at.Key != "k-replay" {
		t.Errorf("an external client's message is attributed to %+v", at)
	}

	// Same key, another payload: 422 and nothing sent.
	wantProblem(t, send(t, h, `{"to": "jordan@acme.dev", "subject": "Your July invoice"}`, "k-replay"), http.StatusUnprocessableEntity)
	// Same key on another endpoint: 422 too.
	req, _ := http.NewRequest(http.MethodPost, h.Providers().CRMURL()+"/v1/records", strings.NewReader(`{"id": "inv_1"}`))
	req.Header.Set("Idempotency-Key", "k-replay")
	wantProblem(t, do(t, req), http.StatusUnprocessableEntity)
	if n := outboxLen(t, h); n != 1 {
		t.Fatalf("outbox %d after mismatches, want 1", n)
	}
	if recs, _ := h.Providers().Records(); len(recs) != 0 {
		t.Errorf("the CRM wrote %+v on a mismatched key", recs)
	}

	// Without a key every request executes: the naive world.
	a, b := send(t, h, invoice), send(t, h, invoice)
	if a.status != 200 || b.status != 200 || a.msgID == b.msgID || a.deduped || b.deduped {
		t.Fatalf("keyless sends: %s / %s", a.body, b.body)
	}
	if n := outboxLen(t, h); n != 3 {
		t.Fatalf("outbox %d, want 3", n)
	}
}

func TestMailAPIBadRequestsAreNotStored(t *testing.T) {
	t.Parallel()
	h := openAPIHost(t)
	// Invalid message: 400, and the key is not stored.
	wantProblem(t, send(t, h, `{"to": "jordan@acme.dev"}`, "k-400"), http.StatusBadRequest)
	if _, ok, err := engine.WorldOf(h).LookupKey("k-400"); err != nil || ok {
		t.Fatalf("a 400 left key k-400 stored (%v)", err)
	}
	// So the corrected retry with the same key executes.
	fixed := send(t, h, invoice, "k-400")
	if fixed.status != 200 || fixed.deduped {
		t.Fatalf("corrected retry: %d %s, want a fresh 200", fixed.status, fixed.body)
	}
	if k, ok, err := engine.WorldOf(h).LookupKey("k-400"); err != nil || !ok || k.Ref != fixed.msgID {
		t.Fatalf("key after corrected retry: %+v %v (%v)", k, ok, err)
	}

	// A malformed body and a key over 255 characters: 400, nothing sent.
	wantProblem(t, send(t, h, `{"to": `, "k-malformed"), http.StatusBadRequest)
	if _, ok, _ := engine.WorldOf(h).LookupKey("k-malformed"); ok {
		t.Errorf("a malformed body left its key stored")
	}
	wantProblem(t, send(t, h, invoice, strings.Repeat("k", 256)), http.StatusBadRequest)
	// Two Idempotency-Key fields: 400.
	wantProblem(t, send(t, h, invoice, "k-a", "k-b"), http.StatusBadRequest)
	// 255 characters are fine.
	if r := send(t, h, invoice, strings.Repeat("k", 255)); r.status != 200 {
		t.Errorf("a 255-character key: %d %s", r.status, r.body)
	}
	if n := outboxLen(t, h); n != 2 {
		t.Fatalf("outbox %d, want 2 (the corrected retry and the 255-character key)", n)
	}
}

func TestMailAPIKeyExpiresWithWorldClock(t *testing.T) {
	t.Parallel()
	h := openAPIHost(t)
	first := send(t, h, invoice, "k-expiry")
	if first.status != 200 || first.deduped {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	if err := h.Providers().AdvanceClock(23 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := send(t, h, invoice, "k-expiry"); !r.deduped || r.msgID != first.msgID {
		t.Fatalf("inside retention: %d %s, want a replay", r.status, r.body)
	}
	// Past the 24 h retention the key is forgotten: the late retry executes.
	if err := h.Providers().AdvanceClock(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if off := h.Providers().WorldOffset(); off < 25*time.Hour-time.Second {
		t.Errorf("world clock offset %v, want 25h", off)
	}
	late := send(t, h, invoice, "k-expiry")
	if late.status != 200 || late.deduped || late.msgID == first.msgID {
		t.Fatalf("after retention: %d %s, want a fresh delivery", late.status, late.body)
	}
	if n := outboxLen(t, h); n != 2 {
		t.Fatalf("outbox %d, want 2", n)
	}
	// The new response is stored in its place.
	if r := send(t, h, invoice, "k-expiry"); !r.deduped || r.msgID != late.msgID {
		t.Errorf("repeat after the late retry: %s, want a replay of %s", r.body, late.msgID)
	}
}

// 50 concurrent requests with one key while the first is in flight: 409s,
// and exactly one delivery.
func TestMailAPIConcurrentSameKey(t *testing.T) {
	t.Parallel()
	// The in-flight window is the slow response's delay: 3 s here, not the
	// world's 50 ms, which a loaded machine (CI's two cores under the race
	// detector) missed in three rounds of 49 requests, seeing only replays.
	// The 49 are sent once the key is claimed, so they all come within it.
	h := openAPIHostWith(t, engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), SlowDelay: 3 * time.Second})
	ch, stop := h.Subscribe(1 << 12)
	defer stop()
	if conflicts := concurrentRound(t, h, ch, "k-race-1", 1); conflicts == 0 {
		t.Fatalf("no request met the key in flight")
	}
}

// concurrentRound sends one slow request with key, then 49 at once while
// it is in flight, checks that exactly one delivered, and returns the
// number of 409s.
func concurrentRound(t *testing.T, h *engine.Host, ch <-chan notice.Notice, key string, round int) int {
	t.Helper()
	const n = 50
	// The next unattributed request answers slowly: its key stays in flight.
	h.Faults().Arm(fault.SlowResponse)
	replies := make([]reply, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		replies[0] = send(t, h, invoice, key)
	}()
	// The world reports the slow-response fault after the key is claimed.
	guard := time.After(time.Minute) // against a hang, not a timing assertion
	for claimed := false; !claimed; {
		var no notice.Notice
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatal("notices closed")
			}
			no = n
		case <-guard:
			t.Fatal("the slow request never claimed its key")
		}
		a := no.Activity
		claimed = a != nil && a.Kind == world.KindFault && a.Detail == string(fault.SlowResponse) && a.Key == key
	}
	release := make(chan struct{})
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			replies[i] = send(t, h, invoice, key)
		}()
	}
	close(release)
	wg.Wait()

	var delivered, conflicts, replays int
	var msgID string
	for i, r := range replies {
		switch {
		case r.status == 200 && !r.deduped:
			delivered++
			msgID = r.msgID
		case r.status == 200 && r.deduped:
			replays++
		case r.status == http.StatusConflict:
			conflicts++
			wantProblem(t, r, http.StatusConflict)
			if r.header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
		default:
			t.Errorf("request %d: %d %s", i, r.status, r.body)
		}
	}
	t.Logf("round %d: %d delivered, %d conflicts, %d replays", round, delivered, conflicts, replays)
	if delivered != 1 || delivered+conflicts+replays != n {
		t.Fatalf("%d delivered, %d conflicts, %d replays: want exactly one delivery", delivered, conflicts, replays)
	}
	if replies[0].status != 200 || replies[0].deduped {
		t.Errorf("the first, slow request answered %d %s", replies[0].status, replies[0].body)
	}
	for _, r := range replies {
		if r.status == 200 && r.msgID != msgID {
			t.Errorf("a replay answered %s, the delivery was %s", r.msgID, msgID)
		}
	}
	msgs := outbox(t, h)
	if len(msgs) != round || msgs[round-1].ID != msgID || msgs[round-1].Attribution.Key != key {
		t.Fatalf("outbox %+v, want one delivery per round, the last %s", msgs, msgID)
	}
	// Afterwards the key replays.
	if r := send(t, h, invoice, key); !r.deduped || r.msgID != msgID {
		t.Errorf("after the race: %s", r.body)
	}
	if got := outboxLen(t, h); got != round {
		t.Errorf("outbox %d, want %d", got, round)
	}
	return conflicts
}
