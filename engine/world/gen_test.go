package world

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/store"
)

// dumpWorld lists every entry of the world's collections.
func dumpWorld(t *testing.T, db *store.DB) string {
	t.Helper()
	var buf bytes.Buffer
	for _, b := range Buckets {
		err := db.View(func(tx *store.Tx) error {
			fmt.Fprintf(&buf, "%s seq %d\n", b, tx.Sequence(b))
			return tx.Scan(b, nil, false, func(k, v []byte) bool {
				fmt.Fprintf(&buf, "  %q %s\n", k, v)
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// TestApplyMatchesTheServices plays the same requests over HTTP and through
// Apply on two fresh worlds: the answers and everything stored must be the
// same, byte for byte.
func TestApplyMatchesTheServices(t *testing.T) {
	type req struct {
		service, method, path, body, key string
		attempt, status                  int
		replayed                         bool
	}
	reqs := []req{
		{ServiceMail, "POST", "/v1/send", invoice, "ik_one", 1, 200, false},
		{ServiceMail, "POST", "/v1/send", invoice, "ik_one", 2, 200, true},                             // replayed
		{ServiceMail, "POST", "/v1/send", `{"to":"a@b.c","subject":"Other"}`, "ik_one", 3, 422, false}, // other payload
		{ServiceMail, "POST", "/v1/send", invoice, "", 4, 200, false},                                  // no key: sent again
		{ServiceMail, "POST", "/v1/send", `{"subject":"no recipient"}`, "ik_bad", 5, 400, false},       // not stored
		{ServiceCRM, "PUT", "/v1/records/inv_1", `{"customer":"jordan@acme.dev","invoice":"June"}`, "ik_crm", 1, 200, false},
		{ServiceCRM, "PUT", "/v1/records/inv_1", `{"invoice":"June","customer":"jordan@acme.dev"}`, "", 2, 200, false}, // unchanged
		{ServiceCRM, "POST", "/v1/records", `{"subject":"June invoice sent"}`, "", 1, 201, false},                      // minted id
	}
	e := newEnv(t, nil, nil)
	db := openDB(t, filepath.Join(t.TempDir(), "apply.db"))
	for i, r := range reqs {
		base := e.mail.URL
		if r.service == ServiceCRM {
			base = e.crm.URL
		}
		got := mustCall(t, r.method, base+r.path, r.body, hdr(r.key, r.attempt))
		var reply Reply
		err := db.Update(func(tx *store.Tx) error {
			var err error
			reply, err = Apply(tx, Call{Service: r.service, Method: r.method, Path: r.path, Body: []byte(r.body),
				Key: r.key, Dedupe: true, Now: e.clock.Now(),
				Attribution: Attribution{Execution: "exec_01H8", Step: "step-4", Attempt: r.attempt, Run: 1}})
			return err
		})
		if err != nil {
			t.Fatalf("request %d: Apply: %v", i, err)
		}
		if got.status != r.status || reply.Status != r.status {
			t.Fatalf("request %d: HTTP %d, Apply %d; want %d (%s)", i, got.status, reply.Status, r.status, got.raw)
		}
		if !bytes.Equal(got.raw, reply.Body) {
			t.Errorf("request %d: bodies differ:\nHTTP  %s\nApply %s", i, got.raw, reply.Body)
		}
		if replayed := got.header.Get(HeaderIdempotentReplayed) == "true"; replayed != r.replayed || reply.Replayed != r.replayed {
			t.Errorf("request %d: replayed HTTP %v, Apply %v; want %v", i, replayed, reply.Replayed, r.replayed)
		}
	}
	if a, b := dumpWorld(t, e.db), dumpWorld(t, db); a != b {
		t.Fatalf("stored state differs:\nHTTP:\n%s\nApply:\n%s", a, b)
	}
}

func TestApplyWithoutDedupeAndBadCalls(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "apply.db"))
	clock := newFakeClock()
	err := db.Update(func(tx *store.Tx) error {
		for range 2 {
			r, err := Apply(tx, Call{Service: ServiceMail, Method: "POST", Path: "/v1/send", Body: []byte(invoice),
				Key: "ik_x", Dedupe: false, Now: clock.Now()})
			if err != nil || r.Status != 200 || r.Replayed {
				return fmt.Errorf("send without dedupe: %+v %v", r, err)
			}
		}
		for _, c := range []Call{
			{Service: ServiceMail, Method: "GET", Path: "/v1/send", Body: []byte(invoice)},
			{Service: ServiceCRM, Method: "PUT", Path: "/v1/records/a b", Body: []byte(`{}`)},
			{Service: ServiceMail, Method: "POST", Path: "/v1/send", Body: []byte(`[1]`)},
		} {
			if _, err := Apply(tx, c); err == nil {
				return fmt.Errorf("%s %s %s accepted", c.Service, c.Method, c.Path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	_ = db.View(func(tx *store.Tx) error { n = tx.Sequence(BucketOutbox); return nil })
	if n != 2 {
		t.Fatalf("outbox holds %d messages; with dedupe off both sends go out", n)
	}
}

func TestRecordsPageAndOutboxSize(t *testing.T) {
	e := newEnv(t, nil, nil)
	for i := range 5 {
		r := mustCall(t, http.MethodPut, fmt.Sprintf("%s/v1/records/rec_%d", e.crm.URL, i), `{"n":1}`, nil)
		if r.status != 200 {
			t.Fatalf("put %d: %d %s", i, r.status, r.raw)
		}
		e.send(invoice, nil)
	}
	page, err := e.w.RecordsPage("rec_2", 2)
	if err != nil || len(page) != 2 || page[0].ID != "rec_2" || page[1].ID != "rec_3" {
		t.Fatalf("page from rec_2: %+v, %v", page, err)
	}
	all, err := e.w.RecordsPage("", 0)
	if err != nil || len(all) != 5 {
		t.Fatalf("every record: %d, %v", len(all), err)
	}
	if _, total, err := e.w.Recent(2); err != nil || total != 5 {
		t.Fatalf("outbox size: %d, %v", total, err)
	}
	if err := e.w.Reset(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.w.OutboxCount(); err != nil || n != 0 {
		t.Fatalf("outbox size after reset: %d, %v", n, err)
	}
}
