package world

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
)

func TestStartListensOnLoopback(t *testing.T) {
	db := openDB(t, t.TempDir()+"/retrylab.db")
	w, err := New(Config{DB: db, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	if w.MailURL() != "" {
		t.Errorf("MailURL before Start: %q", w.MailURL())
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{w.MailURL(), w.CRMURL()} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || u.Scheme != "http" || host != "127.0.0.1" || port == "0" {
			t.Errorf("URL %q: not http://127.0.0.1:PORT", raw)
		}
	}
	if w.MailURL() == w.CRMURL() {
		t.Errorf("both services on %s", w.MailURL())
	}
	if err := w.Start(); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v", err)
	}
	r := mustCall(t, http.MethodPost, w.MailURL()+"/v1/send", invoice, hdr("K", 1))
	wantStatus(t, r, 200)
	wantStatus(t, mustCall(t, http.MethodPut, w.CRMURL()+"/v1/records/a", `{"n":1}`, nil), 200)
	if n, _ := w.OutboxCount(); n != 1 {
		t.Errorf("outbox %d", n)
	}
	mailURL := w.MailURL()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	client := &http.Client{Timeout: time.Second}
	if _, err := call(t, client, http.MethodPost, mailURL+"/v1/send", invoice, nil); err == nil {
		t.Error("request after Close succeeded")
	}
}

// Close must not wait for the hold bound of requests held by a fault.
func TestCloseReleasesHeldRequests(t *testing.T) {
	log := &activityLog{}
	db := openDB(t, t.TempDir()+"/retrylab.db")
	w, err := New(Config{DB: db, Clock: newFakeClock(), Observe: log.add,
		Faults: onAttempt(1, fault.TimeoutBeforeEffect, fault.TimeoutAfterEffect)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := call(t, nil, http.MethodPost, w.MailURL()+"/v1/send", invoice, hdr("K", 1))
		if err == nil && r.status != http.StatusServiceUnavailable {
			err = errors.New("unexpected response " + string(r.raw))
		}
		done <- err
	}()
	log.waitFor(t, "fault", func(a Activity) bool { return a.Kind == KindFault })
	start := time.Now()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v", took)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Logf("held client: %v", err) // a closed connection is fine too
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held client still waiting after Close")
	}
	if n, _ := w.OutboxCount(); n != 0 {
		t.Errorf("outbox %d after a lost request", n)
	}
}
