package world

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/retrylab/retrylab/engine/attrib"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

// endpoint describes one route to the request pipeline.
type endpoint struct {
	service string
	keyed   bool // honours Idempotency-Key
	body    bool // takes a JSON object body
	write   bool // runs in an Update; otherwise in a View
	// run performs the request inside one transaction. It must touch only
	// the transaction and its own result (group commit may run it twice),
	// must not change in, and must write nothing when it returns a non-2xx
	// result. An error means the store failed.
	run func(tx *store.Tx, in *input) (*result, error)
}

// input is a parsed request.
type input struct {
	attr Attribution
	key  string // the Idempotency-Key, "" if none
	raw  []byte
	obj  map[string]json.RawMessage
	now  time.Time // world clock
	id   string    // record id from the path
}

// result is a response and what to report about it.
type result struct {
	status  int
	body    []byte
	problem bool
	header  [][2]string
	ref     string // message or record id the effect produced
	acts    []Activity
}

// problemDoc is an RFC 9457 problem details object.
type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

func problemResult(status int, slug, title, detail string) *result {
	body, err := json.Marshal(problemDoc{Type: "urn:retrylab:problem:" + slug, Title: title, Status: status, Detail: detail})
	if err != nil { // cannot happen for strings and ints
		body = []byte(`{"type":"about:blank","status":` + strconv.Itoa(status) + `}`)
	}
	return &result{status: status, body: body, problem: true}
}

func jsonResult(status int, v any) (*result, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return &result{status: status, body: body}, nil
}

// reject is a 4xx problem reported as a "rejected" activity.
func reject(service string, in *input, status int, slug, title, detail string) *result {
	res := problemResult(status, slug, title, detail)
	res.acts = []Activity{{Kind: KindRejected, Service: service, Time: in.now, Attribution: in.attr,
		Key: in.key, RecordID: in.id, Detail: detail, Status: status}}
	return res
}

func writeResult(rw http.ResponseWriter, res *result) {
	h := rw.Header()
	if res.problem {
		h.Set("Content-Type", "application/problem+json")
	} else {
		h.Set("Content-Type", "application/json")
	}
	for _, kv := range res.header {
		h.Set(kv[0], kv[1])
	}
	rw.WriteHeader(res.status)
	_, _ = rw.Write(res.body)
}

// notFound answers an unknown path.
func (w *World) notFound(rw http.ResponseWriter, r *http.Request, service string) {
	in := &input{attr: attrib.FromHeader(r.Header), now: w.Now()}
	res := reject(service, in, http.StatusNotFound, "not-found", "Not Found", "no such resource: "+r.URL.Path)
	w.emit(res.acts...)
	writeResult(rw, res)
}

// notAllowed answers a known path with the wrong method.
func (w *World) notAllowed(rw http.ResponseWriter, r *http.Request, service, allow string) {
	in := &input{attr: attrib.FromHeader(r.Header), now: w.Now()}
	res := reject(service, in, http.StatusMethodNotAllowed, "method-not-allowed", "Method Not Allowed",
		fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
	res.header = append(res.header, [2]string{"Allow", allow})
	w.emit(res.acts...)
	writeResult(rw, res)
}

// serve runs a routed request through the pipeline: key and body checks,
// server-side faults, the key claim, the effect and the response.
func (w *World) serve(rw http.ResponseWriter, r *http.Request, ep endpoint, id string) {
	in := &input{attr: attrib.FromHeader(r.Header), now: w.Now(), id: id}
	reply := func(res *result) {
		w.emit(res.acts...)
		writeResult(rw, res)
	}
	if ep.keyed {
		key, present, err := parseIdempotencyKey(r.Header.Values(HeaderIdempotencyKey))
		if err != nil {
			reply(reject(ep.service, in, http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key", err.Error()))
			return
		}
		if present {
			in.key, in.attr.Key = key, key
		}
	}
	if ep.body {
		// Read the whole body before any fault is applied: net/http
		// notices a client hanging up only once the body is consumed.
		raw, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, w.maxBody))
		if err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				reply(reject(ep.service, in, http.StatusRequestEntityTooLarge, "body-too-large", "Content Too Large",
					fmt.Sprintf("request body exceeds %d bytes", w.maxBody)))
				return
			}
			reply(reject(ep.service, in, http.StatusBadRequest, "unreadable-body", "Bad Request", "could not read request body: "+err.Error()))
			return
		}
		in.raw = raw
	}

	faults := w.serverFaults(in.attr)
	applied := func(p fault.Point) bool {
		if !faults[p] {
			return false
		}
		w.emit(Activity{Kind: KindFault, Service: ep.service, Time: w.Now(), Attribution: in.attr, Key: in.key,
			RecordID: in.id, Detail: string(p)})
		return true
	}
	// finish answers, unless the response is to be lost.
	finish := func(res *result) {
		w.emit(res.acts...)
		if applied(fault.TimeoutAfterEffect) {
			w.withhold(rw, r)
			return
		}
		writeResult(rw, res)
	}

	if applied(fault.TimeoutBeforeEffect) {
		w.withhold(rw, r)
		return
	}
	if applied(fault.ServerError) {
		writeResult(rw, problemResult(http.StatusInternalServerError, "server-error", "Internal Server Error",
			"injected fault: the server failed before doing anything"))
		return
	}
	var canon []byte // canonical body, the fingerprint's input
	if ep.body {
		obj, err := parseObject(in.raw)
		if err == nil {
			// Canonicalise every body, keyed or not, so that what is
			// accepted does not depend on the key.
			if canon, err = idemkey.CanonicalJSON(in.raw); err != nil {
				err = fmt.Errorf("cannot canonicalise body: %w", err)
			}
		}
		if err != nil {
			finish(reject(ep.service, in, http.StatusBadRequest, "malformed-body", "Bad Request", err.Error()))
			return
		}
		in.obj = obj
	}

	var early *result // answered from the key store
	var cl *claim
	if in.key != "" && w.Dedupe(in.attr.Execution) {
		c := &claim{retention: w.RetentionFor(in.attr.Execution), key: in.key, endpoint: ep.service + " " + r.Method + " " + r.URL.Path,
			fp: fingerprint(r.Method, r.URL.Path, canon), token: w.newToken(), created: w.Now(), attr: in.attr}
		out, prior, err := w.claimKey(c)
		if err != nil {
			finish(storageFailure(err))
			return
		}
		switch out {
		case claimNew:
			cl = c
		case claimReplay:
			early = replayResult(ep.service, in, prior)
		case claimInUse:
			early = reject(ep.service, in, http.StatusConflict, "idempotency-key-in-use", "Conflict",
				"a request with this Idempotency-Key is still being processed; retry later")
			early.acts[0].Kind = KindConflict
			early.header = append(early.header, [2]string{"Retry-After", "1"})
		case claimMismatch:
			detail := "this Idempotency-Key was used with a different request body"
			if prior.Endpoint != c.endpoint {
				detail = "this Idempotency-Key was used for another endpoint (" + prior.Endpoint + ")"
			}
			early = reject(ep.service, in, http.StatusUnprocessableEntity, "idempotency-key-reused", "Unprocessable Content", detail)
			early.acts[0].Kind = KindMismatch
		}
	}
	if cl != nil && w.afterClaim != nil {
		w.afterClaim(cl.key)
	}
	if applied(fault.SlowResponse) && !w.sleep(r.Context(), w.slowDelay) {
		// The client gave up or the world is closing: abandon the request.
		if cl != nil {
			_ = w.release(cl) // on failure New clears the record at the next start
		}
		writeResult(rw, problemResult(http.StatusServiceUnavailable, "abandoned", "Service Unavailable",
			"the request was abandoned before it took effect"))
		return
	}
	res := early
	if res == nil {
		in.now = w.Now()
		var err error
		if res, err = w.execute(ep, in, cl); err != nil {
			if cl != nil {
				_ = w.release(cl)
			}
			res = storageFailure(err)
		}
	}
	finish(res)
}

func storageFailure(err error) *result {
	return problemResult(http.StatusInternalServerError, "storage-error", "Internal Server Error", err.Error())
}

// replayResult answers a repeated key with the stored response.
func replayResult(service string, in *input, rec keyRecord) *result {
	res := &result{status: rec.Status, body: markReplayed(rec.Body),
		header: [][2]string{{HeaderIdempotentReplayed, "true"}}}
	act := Activity{Kind: KindReplayed, Service: service, Time: in.now, Attribution: in.attr, Key: in.key,
		Status: rec.Status, Detail: "replayed response stored at " + rec.Created.UTC().Format(time.RFC3339)}
	if service == ServiceMail {
		act.MessageID = rec.Ref
	} else {
		act.RecordID = rec.Ref
	}
	res.acts = []Activity{act}
	return res
}

// execute runs the endpoint in one transaction; for a claimed key, the
// stored response (or the claim's release) commits with the effect.
func (w *World) execute(ep endpoint, in *input, cl *claim) (*result, error) {
	var res *result
	fn := func(tx *store.Tx) error {
		res = nil
		r, err := ep.run(tx, in)
		if err != nil {
			return err
		}
		if cl != nil {
			if err := cl.settle(tx, r); err != nil {
				return err
			}
		}
		if w.record != nil && ep.write {
			for i := range r.acts {
				if r.acts[i].Effect() {
					if err := w.record(tx, &r.acts[i]); err != nil {
						return err
					}
				}
			}
		}
		res = r
		return nil
	}
	var err error
	if ep.write {
		err = w.db.Update(fn)
	} else {
		err = w.db.View(fn)
	}
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", ep.service, err)
	}
	return res, nil
}

// serverFaults asks the fault source which server-side faults apply.
func (w *World) serverFaults(a Attribution) map[fault.Point]bool {
	if w.faults == nil {
		return nil
	}
	points := w.faults.ServerFaults(a.Execution, a.Step, a.Attempt)
	if len(points) == 0 {
		return nil
	}
	set := make(map[fault.Point]bool, len(points))
	for _, p := range points {
		if p.ServerSide() {
			set[p] = true
		}
	}
	return set
}

// withhold keeps the response back until the client gives up, the world
// closes or the hold bound passes, then answers for the record (504, or 503
// when closing); a client that gave up never reads it.
func (w *World) withhold(rw http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(w.holdBound)
	defer t.Stop()
	select {
	case <-w.closing:
		writeResult(rw, problemResult(http.StatusServiceUnavailable, "shutting-down", "Service Unavailable",
			"the server shut down while holding the response"))
	case <-r.Context().Done():
		writeResult(rw, problemResult(http.StatusGatewayTimeout, "response-lost", "Gateway Timeout",
			"injected fault: the response was lost"))
	case <-t.C:
		writeResult(rw, problemResult(http.StatusGatewayTimeout, "response-lost", "Gateway Timeout",
			"injected fault: the response was held past the bound"))
	}
}

// sleep waits d; it reports false if ctx ended or the world closed first.
func (w *World) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-w.closing:
		return false
	}
}

// parseObject decodes a body that must be exactly one JSON object.
func parseObject(raw []byte) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("empty body: want a JSON object")
	}
	if trimmed[0] != '{' {
		return nil, errors.New("body is not a JSON object")
	}
	if !utf8.Valid(raw) {
		return nil, errors.New("body is not valid UTF-8")
	}
	if err := jsonlimit.Check(raw); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	return obj, nil
}
