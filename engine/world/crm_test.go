package world

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/fault"
)

func (e *env) crmCall(method, path, body string, h http.Header) response {
	e.t.Helper()
	return mustCall(e.t, method, e.crm.URL+path, body, h)
}

func (e *env) records() []Record {
	e.t.Helper()
	recs, err := e.w.Records()
	if err != nil {
		e.t.Fatalf("Records: %v", err)
	}
	return recs
}

func (e *env) writes() []CRMWrite {
	e.t.Helper()
	ws, err := e.w.CRMWrites(0, 0)
	if err != nil {
		e.t.Fatalf("CRMWrites: %v", err)
	}
	return ws
}

func TestCRMUpsertTwiceOneRowTwoWrites(t *testing.T) {
	e := newEnv(t, nil, nil)
	first := e.crmCall(http.MethodPut, "/v1/records/cust-42", `{"name":"Acme","status":"paid","seats":3}`, hdr("", 1))
	wantStatus(t, first, 200)
	if first.body["created"] != true || first.str("id") != "cust-42" || first.body["version"] != float64(1) {
		t.Errorf("first upsert %s", first.raw)
	}
	// Same fields, other order and an "id" member equal to the path.
	second := e.crmCall(http.MethodPut, "/v1/records/cust-42", `{"seats":3, "status":"paid","name":"Acme","id":"cust-42"}`, hdr("", 2))
	wantStatus(t, second, 200)
	if second.body["created"] != false || second.body["version"] != float64(1) {
		t.Errorf("second upsert %s", second.raw)
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].Version != 1 || recs[0].Fields["name"] != "Acme" || recs[0].Fields["seats"] != json.Number("3") {
		t.Fatalf("records %+v", recs)
	}
	if _, ok := recs[0].Fields["id"]; ok {
		t.Errorf("id stored as a field: %+v", recs[0].Fields)
	}
	ws := e.writes()
	if len(ws) != 2 || !ws[0].Created || ws[1].Created || ws[0].Op != OpUpsert || ws[1].Attribution.Attempt != 2 || ws[1].Seq != 2 {
		t.Fatalf("writes %+v", ws)
	}
	changed := e.crmCall(http.MethodPut, "/v1/records/cust-42", `{"name":"Acme","status":"void","seats":3}`, nil)
	if changed.body["version"] != float64(2) || changed.body["created"] != false {
		t.Errorf("changed upsert %s", changed.raw)
	}
	if recs := e.records(); len(recs) != 1 || recs[0].Version != 2 || recs[0].Fields["status"] != "void" {
		t.Errorf("after change %+v", recs)
	}
	if len(e.writes()) != 3 || e.log.count(KindCRMWrite) != 3 {
		t.Errorf("writes %d, activities %d", len(e.writes()), e.log.count(KindCRMWrite))
	}
	wantProblem(t, e.crmCall(http.MethodPut, "/v1/records/cust-42", `{"id":"other"}`, nil), http.StatusBadRequest)
	wantProblem(t, e.crmCall(http.MethodPut, "/v1/records/cust-42", `[1]`, nil), http.StatusBadRequest)
	if len(e.writes()) != 3 {
		t.Errorf("a rejected write was logged")
	}
}

func TestCRMCreateWithoutIDTwiceTwoRows(t *testing.T) {
	e := newEnv(t, nil, nil)
	a := e.crmCall(http.MethodPost, "/v1/records", `{"name":"Acme"}`, hdr("", 1))
	b := e.crmCall(http.MethodPost, "/v1/records", `{"name":"Acme"}`, hdr("", 2))
	wantStatus(t, a, http.StatusCreated)
	wantStatus(t, b, http.StatusCreated)
	if a.str("id") == b.str("id") || !strings.HasPrefix(a.str("id"), "rec_") || a.body["created"] != true {
		t.Errorf("ids %q %q (%s)", a.str("id"), b.str("id"), a.raw)
	}
	if recs := e.records(); len(recs) != 2 {
		t.Errorf("records %+v", recs)
	}
	ws := e.writes()
	if len(ws) != 2 || ws[0].Op != OpCreate || !ws[0].Created || ws[0].RecordID != a.str("id") {
		t.Errorf("writes %+v", ws)
	}
}

func TestCRMCreateWithClientID(t *testing.T) {
	e := newEnv(t, nil, nil)
	body := `{"id":"inv-1042","amount":120,"currency":"EUR"}`
	first := e.crmCall(http.MethodPost, "/v1/records", body, hdr("", 1))
	wantStatus(t, first, http.StatusCreated)
	second := e.crmCall(http.MethodPost, "/v1/records", `{"currency":"EUR","amount":120,"id":"inv-1042"}`, hdr("", 2))
	wantStatus(t, second, http.StatusOK)
	if second.body["existing"] != true || second.body["created"] != false || second.str("id") != "inv-1042" {
		t.Errorf("second create %s", second.raw)
	}
	if recs := e.records(); len(recs) != 1 || recs[0].Version != 1 {
		t.Errorf("records %+v", recs)
	}
	conflict := e.crmCall(http.MethodPost, "/v1/records", `{"id":"inv-1042","amount":999,"currency":"EUR"}`, hdr("", 3))
	wantProblem(t, conflict, http.StatusConflict)
	ws := e.writes()
	if len(ws) != 2 || ws[0].Op != OpCreate || ws[1].Op != OpCreateExisting || ws[1].Created {
		t.Errorf("writes %+v", ws)
	}
	if e.log.count(KindConflict) != 1 {
		t.Errorf("conflict activities %+v", e.log.all())
	}
	wantProblem(t, e.crmCall(http.MethodPost, "/v1/records", `{"id":42}`, nil), http.StatusBadRequest)
	wantProblem(t, e.crmCall(http.MethodPost, "/v1/records", `{"id":"a/b"}`, nil), http.StatusBadRequest)
}

func TestCRMCreateWithKeyReplays(t *testing.T) {
	e := newEnv(t, nil, nil)
	a := e.crmCall(http.MethodPost, "/v1/records", `{"name":"Acme"}`, hdr("K", 1))
	b := e.crmCall(http.MethodPost, "/v1/records", `{"name":"Acme"}`, hdr("K", 2))
	wantStatus(t, a, http.StatusCreated)
	wantStatus(t, b, http.StatusCreated)
	if b.header.Get(HeaderIdempotentReplayed) != "true" || b.body["deduplicated"] != true || b.str("id") != a.str("id") {
		t.Errorf("replay %s", b.raw)
	}
	if len(e.records()) != 1 || len(e.writes()) != 1 {
		t.Errorf("records %d writes %d", len(e.records()), len(e.writes()))
	}
	// A 409 is not stored under the key: a corrected retry executes.
	wantStatus(t, e.crmCall(http.MethodPost, "/v1/records", `{"id":"x","v":1}`, nil), http.StatusCreated)
	wantProblem(t, e.crmCall(http.MethodPost, "/v1/records", `{"id":"x","v":2}`, hdr("K9", 1)), http.StatusConflict)
	if _, ok, _ := e.w.LookupKey("K9"); ok {
		t.Error("409 stored under the key")
	}
	wantStatus(t, e.crmCall(http.MethodPost, "/v1/records", `{"id":"y","v":2}`, hdr("K9", 2)), http.StatusCreated)
}

func TestCRMReads(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.crmCall(http.MethodPut, "/v1/records/b", `{"n":2}`, nil)
	e.crmCall(http.MethodPut, "/v1/records/a", `{"n":1,"tags":["x"]}`, nil)
	r := e.crmCall(http.MethodGet, "/v1/records/a", "", hdr("", 1))
	wantStatus(t, r, 200)
	fields, _ := r.body["fields"].(map[string]any)
	if r.str("id") != "a" || fields["n"] != float64(1) || r.body["version"] != float64(1) {
		t.Errorf("get %s", r.raw)
	}
	wantProblem(t, e.crmCall(http.MethodGet, "/v1/records/missing", "", nil), http.StatusNotFound)
	list := e.crmCall(http.MethodGet, "/v1/records", "", nil)
	recs, _ := list.body["records"].([]any)
	if len(recs) != 2 || recs[0].(map[string]any)["id"] != "a" {
		t.Errorf("list %s", list.raw)
	}
	if e.log.count(KindCRMRead) != 3 {
		t.Errorf("read activities %+v", e.log.all())
	}
	if rec, ok, err := e.w.Record("a"); err != nil || !ok || rec.Fields["tags"].([]any)[0] != "x" {
		t.Errorf("Record: %+v %v %v", rec, ok, err)
	}
	if _, ok, err := e.w.Record("zzz"); ok || err != nil {
		t.Errorf("Record(missing): %v %v", ok, err)
	}
	if ws, err := e.w.CRMWrites(2, 5); err != nil || len(ws) != 1 || ws[0].RecordID != "a" {
		t.Errorf("CRMWrites(2,5): %+v %v", ws, err)
	}
}

// An unsafe create whose response is lost: the retry makes a second row.
func TestCRMTimeoutAfterEffect(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.TimeoutAfterEffect) }, nil)
	client := &http.Client{Timeout: 100 * time.Millisecond}
	if _, err := call(t, client, http.MethodPost, e.crm.URL+"/v1/records", `{"name":"Acme"}`, hdr("", 1)); !isTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
	e.log.waitFor(t, "fault", func(a Activity) bool { return a.Kind == KindFault && a.Service == ServiceCRM })
	if len(e.records()) != 1 {
		t.Fatalf("records %+v", e.records())
	}
	wantStatus(t, e.crmCall(http.MethodPost, "/v1/records", `{"name":"Acme"}`, hdr("", 2)), http.StatusCreated)
	if len(e.records()) != 2 {
		t.Errorf("records %+v", e.records())
	}
}

func TestCRMServerErrorNoWrite(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Faults = onAttempt(1, fault.ServerError) }, nil)
	wantProblem(t, e.crmCall(http.MethodPut, "/v1/records/a", `{"n":1}`, hdr("", 1)), http.StatusInternalServerError)
	if len(e.records()) != 0 || len(e.writes()) != 0 {
		t.Error("a 500 wrote something")
	}
}

func TestCRMBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBody = 64 }, nil)
	wantProblem(t, e.crmCall(http.MethodPut, "/v1/records/a", `{"n":"`+strings.Repeat("x", 100)+`"}`, nil), http.StatusRequestEntityTooLarge)
	wantProblem(t, e.crmCall(http.MethodPost, "/v1/records", `{"n":`, nil), http.StatusBadRequest)
}
