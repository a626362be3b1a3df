package world

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/store"
)

var messageIDPattern = regexp.MustCompile(`^msg_[0-9a-f]{6}$`)

func TestFirstRequestWithKeyDelivers(t *testing.T) {
	e := newEnv(t, nil, nil)
	r := e.send(invoice, hdr("ik_a94a0b1d", 1))
	wantStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if r.str("status") != "sent" || r.body["deduplicated"] != false || r.str("idempotency_key") != "ik_a94a0b1d" {
		t.Errorf("body %s", r.raw)
	}
	if !messageIDPattern.MatchString(r.str("message_id")) {
		t.Errorf("message_id %q", r.str("message_id"))
	}
	if r.header.Get(HeaderIdempotentReplayed) != "" {
		t.Errorf("first response carries %s", HeaderIdempotentReplayed)
	}
	e.wantOutbox(1)
	msgs, err := e.w.Outbox(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := msgs[0]
	if m.Seq != 1 || m.ID != r.str("message_id") || m.To != "billing@acme.example" || m.Subject != "Invoice INV-1042" ||
		m.Body != "Your invoice is attached." || !m.Time.Equal(e.clock.Now()) {
		t.Errorf("message %+v", m)
	}
	want := Attribution{Execution: "exec_01H8", Step: "step-4", Key: "ik_a94a0b1d", Attempt: 1, Run: 1}
	if m.Attribution != want {
		t.Errorf("attribution %+v, want %+v", m.Attribution, want)
	}
	k, ok, err := e.w.LookupKey("ik_a94a0b1d")
	if err != nil || !ok {
		t.Fatalf("LookupKey: %v %v", ok, err)
	}
	if k.InFlight || k.Status != 200 || k.Endpoint != "mail POST /v1/send" || len(k.Fingerprint) != 64 ||
		k.Ref != m.ID || !k.Created.Equal(e.clock.Now()) || k.Expired || !k.Expires.Equal(k.Created.Add(DefaultRetention)) {
		t.Errorf("stored key %+v", k)
	}
	if !json.Valid(k.Body) || !strings.Contains(string(k.Body), `"deduplicated":false`) {
		t.Errorf("stored body %s", k.Body)
	}
	a := e.log.waitFor(t, "delivered", func(a Activity) bool { return a.Kind == KindDelivered })
	if a.MessageID != m.ID || a.To != m.To || a.Subject != m.Subject || a.Key != "ik_a94a0b1d" || a.Service != ServiceMail || a.Status != 200 {
		t.Errorf("activity %+v", a)
	}
}

func TestReplaySameKeySamePayload(t *testing.T) {
	e := newEnv(t, nil, nil)
	first := e.send(invoice, hdr("K1", 1))
	wantStatus(t, first, 200)
	// Same payload, other key order and whitespace: canonical JSON matches.
	reordered := "{ \"body\" : \"Your invoice is attached.\",\n\t\"subject\":\"Invoice INV-1042\", \"to\":\"billing@acme.example\" }"
	again := e.send(reordered, hdr("K1", 2))
	wantStatus(t, again, 200)
	if again.header.Get(HeaderIdempotentReplayed) != "true" {
		t.Errorf("replay header %q", again.header.Get(HeaderIdempotentReplayed))
	}
	if again.body["deduplicated"] != true || again.str("message_id") != first.str("message_id") ||
		again.str("status") != "sent" || again.str("idempotency_key") != "K1" {
		t.Errorf("replayed body %s (first %s)", again.raw, first.raw)
	}
	if got := strings.Replace(string(again.raw), `"deduplicated":true`, `"deduplicated":false`, 1); got != string(first.raw) {
		t.Errorf("replay differs beyond the flag:\n%s\n%s", again.raw, first.raw)
	}
	e.wantOutbox(1)
	if e.log.count(KindReplayed) != 1 || e.log.count(KindDelivered) != 1 {
		t.Errorf("activities %+v", e.log.all())
	}
	// The bare and the sf-string (quoted) form name the same key.
	quoted := e.send(invoice, http.Header{HeaderIdempotencyKey: {`"K1"`}})
	if quoted.status != 200 || quoted.body["deduplicated"] != true {
		t.Errorf("quoted key: %d %s", quoted.status, quoted.raw)
	}
	e.wantOutbox(1)
}

func TestMismatchPayload422(t *testing.T) {
	e := newEnv(t, nil, nil)
	wantStatus(t, e.send(invoice, hdr("K", 1)), 200)
	other := strings.Replace(invoice, "INV-1042", "INV-1043", 1)
	r := e.send(other, hdr("K", 2))
	wantProblem(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(r.str("detail"), "different request body") {
		t.Errorf("detail %q", r.str("detail"))
	}
	e.wantOutbox(1)
	if e.log.count(KindMismatch) != 1 {
		t.Errorf("mismatch activities: %+v", e.log.all())
	}
}

func TestMismatchEndpoint422(t *testing.T) {
	e := newEnv(t, nil, nil)
	wantStatus(t, e.send(invoice, hdr("K", 1)), 200)
	// The same key on the CRM's create endpoint, same body.
	r := mustCall(t, http.MethodPost, e.crm.URL+"/v1/records", invoice, hdr("K", 1))
	wantProblem(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(r.str("detail"), "another endpoint") {
		t.Errorf("detail %q", r.str("detail"))
	}
	if recs, _ := e.w.Records(); len(recs) != 0 {
		t.Errorf("records %+v", recs)
	}
	// And the other way round: a key stored by a CRM upsert.
	wantStatus(t, mustCall(t, http.MethodPut, e.crm.URL+"/v1/records/cust-1", `{"name":"Acme"}`, hdr("K2", 1)), 200)
	wantProblem(t, e.send(`{"name":"Acme"}`, hdr("K2", 1)), http.StatusUnprocessableEntity)
	e.wantOutbox(1)
}

// TestConcurrentSameKeyWhileInFlight holds the first request after it
// claimed its key, sends 49 more with the key, then lets it finish.
func TestConcurrentSameKeyWhileInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var claims atomic.Int32
	e := newEnv(t, nil, func(w *World) {
		w.afterClaim = func(string) {
			if claims.Add(1) == 1 {
				close(entered)
				<-release
			}
		}
	})
	firstDone := make(chan response, 1)
	go func() {
		r, err := call(t, nil, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", 1))
		if err != nil {
			t.Errorf("first: %v", err)
		}
		firstDone <- r
	}()
	<-entered
	k, ok, err := e.w.LookupKey("K")
	if err != nil || !ok || !k.InFlight || k.Status != 0 {
		t.Fatalf("key while held: %+v %v %v", k, ok, err)
	}
	var wg sync.WaitGroup
	results := make([]response, 49)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := call(t, nil, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", i+2))
			if err != nil {
				t.Errorf("request %d: %v", i+2, err)
			}
			results[i] = r
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		wantProblem(t, r, http.StatusConflict)
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("request %d: Retry-After %q", i+2, r.header.Get("Retry-After"))
		}
	}
	e.wantOutbox(0)
	close(release)
	first := <-firstDone
	wantStatus(t, first, 200)
	if first.body["deduplicated"] != false {
		t.Errorf("first body %s", first.raw)
	}
	after := e.send(invoice, hdr("K", 51))
	if after.status != 200 || after.body["deduplicated"] != true {
		t.Errorf("after completion: %d %s", after.status, after.raw)
	}
	e.wantOutbox(1)
	if n := claims.Load(); n != 1 {
		t.Errorf("%d requests claimed the key, want 1", n)
	}
	if n := e.log.count(KindConflict); n != 49 {
		t.Errorf("%d conflict activities, want 49", n)
	}
}

// TestConcurrentSameKeySlow fires 50 requests at once, each slowed by the
// SlowResponse fault: one delivers, the rest see 409 or a replay.
func TestConcurrentSameKeySlow(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.SlowDelay = 100 * time.Millisecond
		c.Faults = faultFunc(func(string, string, int) []fault.Point { return []fault.Point{fault.SlowResponse} })
	}, nil)
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]response, 50)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			r, err := call(t, nil, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", i+1))
			if err != nil {
				t.Errorf("request %d: %v", i+1, err)
			}
			results[i] = r
		}(i)
	}
	close(start)
	wg.Wait()
	delivered, conflicts, replays := 0, 0, 0
	for _, r := range results {
		switch {
		case r.status == 200 && r.body["deduplicated"] == false:
			delivered++
		case r.status == 200 && r.body["deduplicated"] == true && r.header.Get(HeaderIdempotentReplayed) == "true":
			replays++
		case r.status == 409:
			conflicts++
		default:
			t.Errorf("unexpected response %d %s", r.status, r.raw)
		}
	}
	if delivered != 1 || delivered+conflicts+replays != 50 {
		t.Errorf("delivered %d, conflicts %d, replays %d", delivered, conflicts, replays)
	}
	e.wantOutbox(1)
}

func TestValidationFailureNotStored(t *testing.T) {
	e := newEnv(t, nil, nil)
	for name, body := range map[string]string{
		"no to":           `{"subject":"s","body":"b"}`,
		"to without @":    `{"to":"billing","subject":"s"}`,
		"to not a string": `{"to":42,"subject":"s"}`,
		"no subject":      `{"to":"a@b.example"}`,
		"empty subject":   `{"to":"a@b.example","subject":"  "}`,
		"body not string": `{"to":"a@b.example","subject":"s","body":{"x":1}}`,
	} {
		r := e.send(body, hdr("K", 1))
		wantProblem(t, r, http.StatusBadRequest)
		if _, ok, err := e.w.LookupKey("K"); ok || err != nil {
			t.Fatalf("%s: key stored after a 400 (%v)", name, err)
		}
	}
	e.wantOutbox(0)
	r := e.send(invoice, hdr("K", 2))
	wantStatus(t, r, 200)
	if r.body["deduplicated"] != false {
		t.Errorf("corrected retry: %s", r.raw)
	}
	e.wantOutbox(1)
	if e.log.count(KindRejected) != 6 {
		t.Errorf("rejected activities: %d", e.log.count(KindRejected))
	}
}

func TestInvalidIdempotencyKeyHeader(t *testing.T) {
	e := newEnv(t, nil, nil)
	long := strings.Repeat("k", MaxIdempotencyKeyLen+1)
	cases := map[string]http.Header{
		"too long":     {HeaderIdempotencyKey: {long}},
		"empty":        {HeaderIdempotencyKey: {""}},
		"two fields":   {HeaderIdempotencyKey: {"a", "b"}},
		"tab":          {HeaderIdempotencyKey: {"a\tb"}},
		"non-ASCII":    {HeaderIdempotencyKey: {"clé"}},
		"bad quoting":  {HeaderIdempotencyKey: {`"abc`}},
		"empty quoted": {HeaderIdempotencyKey: {`""`}},
	}
	for name, h := range cases {
		r := e.send(invoice, h)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (%s)", name, r.status, r.raw)
			continue
		}
		wantProblem(t, r, http.StatusBadRequest)
	}
	// Control characters cannot pass Go's client; call the handler directly.
	for _, key := range []string{"a\x01b", "a\x7fb", "a\nb", "\x00"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/send", strings.NewReader(invoice))
		req.Header[HeaderIdempotencyKey] = []string{key}
		rec := httptest.NewRecorder()
		e.w.MailHandler().ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("key %q: status %d", key, rec.Code)
		}
	}
	e.wantOutbox(0)
	if keys, _ := e.w.Keys(0); len(keys) != 0 {
		t.Errorf("keys stored: %+v", keys)
	}
	// 255 characters is fine.
	wantStatus(t, e.send(invoice, http.Header{HeaderIdempotencyKey: {long[:MaxIdempotencyKeyLen]}}), 200)
	e.wantOutbox(1)
}

func TestKeyExpiresAfterRetention(t *testing.T) {
	e := newEnv(t, nil, nil)
	first := e.send(invoice, hdr("K", 1))
	wantStatus(t, first, 200)
	if err := e.w.Advance(23 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := e.send(invoice, hdr("K", 2)); r.body["deduplicated"] != true {
		t.Fatalf("inside retention: %s", r.raw)
	}
	if err := e.w.Advance(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if k, _, _ := e.w.LookupKey("K"); !k.Expired {
		t.Errorf("key not marked expired: %+v", k)
	}
	late := e.send(invoice, hdr("K", 3))
	wantStatus(t, late, 200)
	if late.body["deduplicated"] != false || late.str("message_id") == first.str("message_id") {
		t.Errorf("late retry: %s", late.raw)
	}
	e.wantOutbox(2)
	k, _, _ := e.w.LookupKey("K")
	if !k.Created.Equal(e.clock.Now().Add(25*time.Hour)) || k.Expired || k.Ref != late.str("message_id") {
		t.Errorf("key after overwrite: %+v", k)
	}
	if r := e.send(invoice, hdr("K", 4)); r.body["deduplicated"] != true || r.str("message_id") != late.str("message_id") {
		t.Errorf("retry after overwrite: %s", r.raw)
	}
	e.wantOutbox(2)
}

func TestCustomRetention(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Retention = time.Hour }, nil)
	wantStatus(t, e.send(invoice, hdr("K", 1)), 200)
	if err := e.w.Advance(61 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := e.send(invoice, hdr("K", 2)); r.body["deduplicated"] != false {
		t.Errorf("after 61m with 1h retention: %s", r.raw)
	}
	e.wantOutbox(2)
}

func TestNoKeyExecutesEveryTime(t *testing.T) {
	e := newEnv(t, nil, nil)
	a, b := e.send(invoice, hdr("", 1)), e.send(invoice, hdr("", 2))
	wantStatus(t, a, 200)
	wantStatus(t, b, 200)
	if a.str("message_id") == b.str("message_id") {
		t.Errorf("same message id %q", a.str("message_id"))
	}
	if _, ok := a.body["idempotency_key"]; ok {
		t.Errorf("idempotency_key in a keyless response: %s", a.raw)
	}
	e.wantOutbox(2)
}

func TestDedupeOff(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.w.SetDedupe("exec_01H8", false)
	if e.w.Dedupe("exec_01H8") || !e.w.Dedupe("other") {
		t.Fatal("Dedupe does not reflect SetDedupe")
	}
	for attempt := 1; attempt <= 2; attempt++ {
		r := e.send(invoice, hdr("K", attempt))
		wantStatus(t, r, 200)
		if r.body["deduplicated"] != false || r.str("idempotency_key") != "K" || r.header.Get(HeaderIdempotentReplayed) != "" {
			t.Errorf("attempt %d: %s", attempt, r.raw)
		}
	}
	e.wantOutbox(2)
	if _, ok, _ := e.w.LookupKey("K"); ok {
		t.Error("key stored with dedupe off")
	}
	// Unattributed requests follow the default, which is still on.
	wantStatus(t, e.send(invoice, hdr("K", 0)), 200)
	if r := e.send(invoice, hdr("K", 0)); r.body["deduplicated"] != true {
		t.Errorf("default on: %s", r.raw)
	}
	e.wantOutbox(3)
	// Clearing the override brings the execution back to the default.
	e.w.ClearDedupe("exec_01H8")
	if r := e.send(invoice, hdr("K", 3)); r.body["deduplicated"] != true {
		t.Errorf("after ClearDedupe: %s", r.raw)
	}
	// The default can be switched off, and restored.
	e.w.SetDedupe("", false)
	wantStatus(t, e.send(invoice, hdr("K", 0)), 200)
	e.wantOutbox(4)
	e.w.ClearDedupe("")
	if !e.w.Dedupe("") {
		t.Error("ClearDedupe(\"\") did not restore the default")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestTimeoutAfterEffect(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.TimeoutAfterEffect) }, nil)
	client := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := call(t, client, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", 1))
	if !isTimeout(err) {
		t.Fatalf("first attempt: want a timeout, got %v", err)
	}
	e.log.waitFor(t, "fault", func(a Activity) bool { return a.Kind == KindFault && a.Detail == string(fault.TimeoutAfterEffect) })
	e.wantOutbox(1) // the provider delivered although the caller saw a timeout
	r := e.send(invoice, hdr("K", 2))
	wantStatus(t, r, 200)
	if r.body["deduplicated"] != true || r.header.Get(HeaderIdempotentReplayed) != "true" {
		t.Errorf("retry with key: %s", r.raw)
	}
	e.wantOutbox(1)

	// Without a key the same retry sends a second copy: the article's duplicate.
	_, err = call(t, client, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("", 1))
	if !isTimeout(err) {
		t.Fatalf("keyless first attempt: want a timeout, got %v", err)
	}
	e.log.waitFor(t, "second fault", func(a Activity) bool {
		return a.Kind == KindFault && a.Detail == string(fault.TimeoutAfterEffect) && a.Key == ""
	})
	wantStatus(t, e.send(invoice, hdr("", 2)), 200)
	e.wantOutbox(3)
}

func TestTimeoutBeforeEffect(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.TimeoutBeforeEffect) }, nil)
	client := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := call(t, client, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", 1))
	if !isTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
	e.log.waitFor(t, "fault", func(a Activity) bool { return a.Kind == KindFault && a.Detail == string(fault.TimeoutBeforeEffect) })
	e.wantOutbox(0)
	if _, ok, _ := e.w.LookupKey("K"); ok {
		t.Error("key stored for a lost request")
	}
	r := e.send(invoice, hdr("K", 2))
	if r.status != 200 || r.body["deduplicated"] != false {
		t.Errorf("retry: %d %s", r.status, r.raw)
	}
	e.wantOutbox(1)
}

func TestServerError(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.ServerError) }, nil)
	wantProblem(t, e.send(invoice, hdr("K", 1)), http.StatusInternalServerError)
	e.wantOutbox(0)
	if _, ok, _ := e.w.LookupKey("K"); ok {
		t.Error("key stored for a 500")
	}
	if r := e.send(invoice, hdr("K", 2)); r.status != 200 || r.body["deduplicated"] != false {
		t.Errorf("retry: %d %s", r.status, r.raw)
	}
	e.wantOutbox(1)
	if e.log.count(KindFault) != 1 {
		t.Errorf("fault activities %+v", e.log.all())
	}
}

func TestSlowResponse(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.SlowDelay = 80 * time.Millisecond
		c.Faults = onAttempt(1, fault.SlowResponse)
	}, nil)
	start := time.Now()
	r := e.send(invoice, hdr("K", 1))
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("answered in %v, want at least the slow delay", took)
	}
	wantStatus(t, r, 200)
	e.wantOutbox(1)
	a := e.log.waitFor(t, "fault", func(a Activity) bool { return a.Kind == KindFault })
	if a.Detail != string(fault.SlowResponse) || a.Attribution.Attempt != 1 {
		t.Errorf("fault activity %+v", a)
	}
}

// A slow response the client gives up on is abandoned: no effect, and the
// key is released so the retry executes.
func TestSlowResponseAbandoned(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.SlowDelay = 2 * time.Second
		c.Faults = onAttempt(1, fault.SlowResponse)
	}, nil)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := call(t, client, http.MethodPost, e.mail.URL+"/v1/send", invoice, hdr("K", 1)); !isTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok, _ := e.w.LookupKey("K"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("claim not released after the client gave up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.wantOutbox(0)
	wantStatus(t, e.send(invoice, hdr("K", 2)), 200)
	e.wantOutbox(1)
}

func TestBodyErrors(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBody = 1024 }, nil)
	huge := `{"to":"a@b.example","subject":"s","body":"` + strings.Repeat("x", 4096) + `"}`
	wantProblem(t, e.send(huge, hdr("K", 1)), http.StatusRequestEntityTooLarge)
	for name, body := range map[string]string{
		"malformed": `{"to":`,
		"not JSON":  `to=a@b.example`,
		"array":     `[1,2]`,
		"string":    `"hello"`,
		"null":      `null`,
		"empty":     ``,
		"two":       `{"to":"a@b.example","subject":"s"} {}`,
		"bad UTF-8": "{\"to\":\"a@b.example\",\"subject\":\"\xff\"}",
		"huge num":  `{"to":"a@b.example","subject":"s","n":1e999}`,
	} {
		for _, key := range []string{"K", ""} {
			r := e.send(body, hdr(key, 1))
			if r.status != http.StatusBadRequest {
				t.Errorf("%s (key %q): status %d", name, key, r.status)
				continue
			}
			wantProblem(t, r, http.StatusBadRequest)
		}
	}
	e.wantOutbox(0)
	if keys, _ := e.w.Keys(0); len(keys) != 0 {
		t.Errorf("keys stored: %+v", keys)
	}
}

func TestMethodAndPath(t *testing.T) {
	e := newEnv(t, nil, nil)
	r := mustCall(t, http.MethodGet, e.mail.URL+"/v1/send", "", nil)
	wantProblem(t, r, http.StatusMethodNotAllowed)
	if r.header.Get("Allow") != "POST" {
		t.Errorf("Allow %q", r.header.Get("Allow"))
	}
	wantProblem(t, mustCall(t, http.MethodPost, e.mail.URL+"/v2/send", invoice, nil), http.StatusNotFound)
	wantProblem(t, mustCall(t, http.MethodPost, e.mail.URL+"/", invoice, nil), http.StatusNotFound)
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/v1/records/x", "GET, PUT"},
		{http.MethodPatch, "/v1/records", "GET, POST"},
	} {
		r := mustCall(t, c.method, e.crm.URL+c.path, "", nil)
		wantProblem(t, r, http.StatusMethodNotAllowed)
		if r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q", c.method, c.path, r.header.Get("Allow"))
		}
	}
	for _, p := range []string{"/v1/records/a/b", "/v1/records/", "/v1/record", "/v1/records/a%20b"} {
		wantProblem(t, mustCall(t, http.MethodGet, e.crm.URL+p, "", nil), http.StatusNotFound)
	}
	e.wantOutbox(0)
}

func TestAdvancePersistsAcrossReopen(t *testing.T) {
	path := t.TempDir() + "/retrylab.db"
	clock := newFakeClock()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{DB: db, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Advance(5 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := w.Advance(30 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.Advance(-time.Minute); err == nil {
		t.Error("negative Advance accepted")
	}
	if !w.Now().Equal(clock.Now().Add(5*time.Hour + 30*time.Minute)) {
		t.Errorf("Now %v", w.Now())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2 := openDB(t, path)
	w2, err := New(Config{DB: db2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got, want := w2.Now(), clock.Now().Add(5*time.Hour+30*time.Minute); !got.Equal(want) {
		t.Errorf("after reopen Now = %v, want %v", got, want)
	}
	if w2.Offset() != 5*time.Hour+30*time.Minute {
		t.Errorf("Offset %v", w2.Offset())
	}
}

func TestInFlightCleanupOnNew(t *testing.T) {
	db := openDB(t, t.TempDir()+"/retrylab.db")
	clock := newFakeClock()
	put := func(key string, rec keyRecord) {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *store.Tx) error { return tx.Put(BucketKeys, []byte(key), data) }); err != nil {
			t.Fatal(err)
		}
	}
	// A previous host died while "stuck" was in flight; "done" completed.
	put("stuck", keyRecord{Fingerprint: "f", Endpoint: "mail POST /v1/send", Created: clock.Now(), InFlight: true, Token: "old-1"})
	put("done", keyRecord{Fingerprint: "f", Endpoint: "mail POST /v1/send", Status: 200, Body: json.RawMessage(`{"status":"sent"}`), Created: clock.Now()})
	w, err := New(Config{DB: db, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok, _ := w.LookupKey("stuck"); ok {
		t.Error("in-flight record survived New")
	}
	if k, ok, _ := w.LookupKey("done"); !ok || k.Status != 200 {
		t.Errorf("completed record lost: %+v %v", k, ok)
	}
	srv := httptest.NewServer(w.MailHandler())
	defer srv.Close()
	r := mustCall(t, http.MethodPost, srv.URL+"/v1/send", invoice, hdr("stuck", 1))
	if r.status != 200 || r.body["deduplicated"] != false {
		t.Errorf("request with the stale key: %d %s", r.status, r.raw)
	}
}

func TestResetAndDeterministicIDs(t *testing.T) {
	e := newEnv(t, nil, nil)
	first := e.send(invoice, hdr("K", 1))
	wantStatus(t, mustCall(t, http.MethodPost, e.crm.URL+"/v1/records", `{"name":"Acme"}`, nil), 201)
	if err := e.w.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Reset(); err != nil {
		t.Fatal(err)
	}
	e.wantOutbox(0)
	if keys, _ := e.w.Keys(0); len(keys) != 0 {
		t.Errorf("keys after reset: %+v", keys)
	}
	if recs, _ := e.w.Records(); len(recs) != 0 {
		t.Errorf("records after reset: %+v", recs)
	}
	if ws, _ := e.w.CRMWrites(0, 0); len(ws) != 0 {
		t.Errorf("writes after reset: %+v", ws)
	}
	if !e.w.Now().Equal(e.clock.Now()) {
		t.Errorf("offset survived reset: %v", e.w.Offset())
	}
	again := e.send(invoice, hdr("K", 1))
	if again.body["deduplicated"] != false || again.str("message_id") != first.str("message_id") {
		t.Errorf("after reset: %s, before: %s", again.raw, first.raw)
	}
	rec := mustCall(t, http.MethodPost, e.crm.URL+"/v1/records", `{"name":"Acme"}`, nil)
	if rec.str("id") != recordID(1) {
		t.Errorf("record id after reset %q, want %q", rec.str("id"), recordID(1))
	}
}

func TestOutboxPaging(t *testing.T) {
	e := newEnv(t, nil, nil)
	for i := 0; i < 5; i++ {
		wantStatus(t, e.send(invoice, nil), 200)
	}
	page, err := e.w.Outbox(0, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 1 || page[1].Seq != 2 {
		t.Fatalf("first page %+v %v", page, err)
	}
	rest, err := e.w.Outbox(page[1].Seq+1, 0)
	if err != nil || len(rest) != 3 || rest[0].Seq != 3 || rest[2].Seq != 5 {
		t.Fatalf("rest %+v %v", rest, err)
	}
	if rest[0].Attribution != (Attribution{}) {
		t.Errorf("unattributed message has attribution %+v", rest[0].Attribution)
	}
	seen := map[string]bool{}
	for _, m := range append(page, rest...) {
		if seen[m.ID] || !messageIDPattern.MatchString(m.ID) {
			t.Errorf("bad or repeated id %q", m.ID)
		}
		seen[m.ID] = true
	}
	if keys, err := e.w.Keys(1); err != nil || len(keys) != 0 {
		t.Errorf("Keys: %+v %v", keys, err)
	}
}

func TestExtraFieldsKept(t *testing.T) {
	e := newEnv(t, nil, nil)
	wantStatus(t, e.send(`{"to":"a@b.example","subject":"s","cc":["c@d.example"],"priority":2}`, nil), 200)
	msgs, _ := e.w.Outbox(0, 0)
	if len(msgs) != 1 || string(msgs[0].Extra["priority"]) != "2" || string(msgs[0].Extra["cc"]) != `["c@d.example"]` {
		t.Errorf("extra fields %+v", msgs)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	db := openDB(t, t.TempDir()+"/retrylab.db")
	for name, cfg := range map[string]Config{
		"no db":    {Clock: newFakeClock()},
		"no clock": {DB: db},
		"negative": {DB: db, Clock: newFakeClock(), Retention: -time.Second},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// A withheld response is released with 504 once the hold bound passes, even
// if the client keeps waiting.
func TestHoldBound(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.TimeoutAfterEffect) },
		func(w *World) { w.holdBound = 50 * time.Millisecond })
	r := e.send(invoice, hdr("K", 1))
	wantProblem(t, r, http.StatusGatewayTimeout)
	e.wantOutbox(1)
	if r := e.send(invoice, hdr("K", 2)); r.body["deduplicated"] != true {
		t.Errorf("retry: %s", r.raw)
	}
}

func TestMessagesForAndRecent(t *testing.T) {
	e := newEnv(t, nil, nil)
	other := http.Header{HeaderExecution: {"exec_other"}}
	wantStatus(t, e.send(invoice, hdr("", 1)), 200)  // seq 1, exec_01H8
	wantStatus(t, e.send(invoice, other), 200)       // seq 2, exec_other
	wantStatus(t, e.send(invoice, nil), 200)         // seq 3, unattributed
	wantStatus(t, e.send(invoice, hdr("", 2)), 200)  // seq 4, exec_01H8
	wantStatus(t, e.send(invoice, hdr("K", 3)), 200) // seq 5, exec_01H8
	wantStatus(t, e.send(invoice, hdr("K", 4)), 200) // replay: no message
	mine, err := e.w.MessagesFor("exec_01H8")
	if err != nil || len(mine) != 3 || mine[0].Seq != 1 || mine[1].Seq != 4 || mine[2].Seq != 5 {
		t.Fatalf("MessagesFor: %+v %v", mine, err)
	}
	if ms, _ := e.w.MessagesFor("exec_other"); len(ms) != 1 || ms[0].Seq != 2 {
		t.Errorf("exec_other: %+v", ms)
	}
	if ms, _ := e.w.MessagesFor(""); len(ms) != 1 || ms[0].Seq != 3 {
		t.Errorf("unattributed: %+v", ms)
	}
	if ms, _ := e.w.MessagesFor("exec_01"); len(ms) != 0 {
		t.Errorf("prefix of an execution matched: %+v", ms)
	}
	recent, total, err := e.w.Recent(2)
	if err != nil || total != 5 || len(recent) != 2 || recent[0].Seq != 4 || recent[1].Seq != 5 {
		t.Fatalf("Recent(2): %+v %d %v", recent, total, err)
	}
	if all, total, _ := e.w.Recent(100); len(all) != 5 || total != 5 || all[0].Seq != 1 {
		t.Errorf("Recent(100): %d messages, total %d", len(all), total)
	}
	if none, total, _ := e.w.Recent(0); len(none) != 0 || total != 5 {
		t.Errorf("Recent(0): %d messages, total %d", len(none), total)
	}
	if err := e.w.Reset(); err != nil {
		t.Fatal(err)
	}
	if ms, _ := e.w.MessagesFor("exec_01H8"); len(ms) != 0 {
		t.Errorf("index survived Reset: %+v", ms)
	}
}

func TestPerExecutionRetention(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.w.SetRetention("exec_long", 72*time.Hour)
	send := func(exec string) response {
		t.Helper()
		h := http.Header{"Idempotency-Key": {"k-" + exec}, HeaderExecution: {exec}}
		r, err := call(t, e.mail.Client(), http.MethodPost, e.mail.URL+"/v1/send", `{"to":"a@b.c","subject":"s"}`, h)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	send("exec_long")
	send("exec_short")
	if err := e.w.Advance(25 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := send("exec_long"); r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a 72h key was forgotten after 25h")
	}
	if r := send("exec_short"); r.header.Get("Idempotent-Replayed") == "true" {
		t.Errorf("a 24h key was still remembered after 25h")
	}
	if n, _ := e.w.OutboxCount(); n != 3 {
		t.Errorf("outbox = %d, want 3 (two first sends and the late retry of the 24h key)", n)
	}
}
