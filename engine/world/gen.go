package world

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/store"
)

// Call is one write request to the world's services, applied by Apply
// straight to the state inside a caller's transaction instead of over HTTP.
type Call struct {
	// Service is ServiceMail or ServiceCRM.
	Service string
	// Method and Path name the endpoint: POST /v1/send, POST /v1/records or
	// PUT /v1/records/{id}.
	Method, Path string
	// Body is the request's JSON object.
	Body []byte
	// Key is the Idempotency-Key, "" for none.
	Key string
	// Dedupe says whether key handling is on for the request (see
	// World.SetDedupe); with it off, a keyed request executes every time.
	Dedupe bool
	// Retention is how long a key stored by this request is remembered;
	// zero means DefaultRetention.
	Retention time.Duration
	// Attribution names the request's execution, step, attempt and run; its
	// Key is filled from Key.
	Attribution Attribution
	// Now is the world clock at the request.
	Now time.Time
}

// Reply is what a Call was answered.
type Reply struct {
	Status int
	Body   json.RawMessage
	// Replayed is set when the key store answered: the Idempotent-Replayed
	// header, and no effect.
	Replayed bool
	// Ref is the message or record id the call produced or replayed.
	Ref string
}

// Apply performs a write call in tx exactly as the HTTP service would, minus
// the network and the fault points: the same validation, key store checks
// (replay, 422 on another payload, 409 while in flight), effect (outbox
// message and its per-execution index, CRM row and write log) and stored
// response. It is how synthetic histories (engine/gen) fill a database with
// the ledger real requests would have left, in large transactions.
func Apply(tx *store.Tx, c Call) (Reply, error) {
	ep, id, err := route(c.Service, c.Method, c.Path)
	if err != nil {
		return Reply{}, err
	}
	in := &input{attr: c.Attribution, key: c.Key, raw: c.Body, now: c.Now, id: id}
	in.attr.Key = c.Key
	obj, err := parseObject(c.Body)
	if err != nil {
		return Reply{}, fmt.Errorf("apply %s %s: %w", c.Method, c.Path, err)
	}
	canon, err := idemkey.CanonicalJSON(c.Body)
	if err != nil {
		return Reply{}, fmt.Errorf("apply %s %s: canonicalise body: %w", c.Method, c.Path, err)
	}
	in.obj = obj
	retention := c.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	var cl *claim
	if c.Key != "" && c.Dedupe {
		cl = &claim{key: c.Key, endpoint: ep.service + " " + c.Method + " " + c.Path,
			fp: fingerprint(c.Method, c.Path, canon), created: c.Now, retention: retention, attr: in.attr}
		// The retention of records stored without one is the world default.
		w := &World{retention: DefaultRetention}
		if rec, ok := decodeKeyRecord(c.Key, tx.Get(BucketKeys, []byte(c.Key))); ok && !w.expired(rec, c.Now) {
			switch {
			case rec.Endpoint != cl.endpoint || rec.Fingerprint != cl.fp:
				res := reject(ep.service, in, http.StatusUnprocessableEntity, "idempotency-key-reused", "Unprocessable Content",
					"this Idempotency-Key was used with a different request body")
				return Reply{Status: res.status, Body: res.body}, nil
			case rec.InFlight:
				res := reject(ep.service, in, http.StatusConflict, "idempotency-key-in-use", "Conflict",
					"a request with this Idempotency-Key is still being processed; retry later")
				return Reply{Status: res.status, Body: res.body}, nil
			}
			res := replayResult(ep.service, in, rec)
			return Reply{Status: res.status, Body: res.body, Replayed: true, Ref: rec.Ref}, nil
		}
	}
	res, err := ep.run(tx, in)
	if err != nil {
		return Reply{}, fmt.Errorf("apply %s %s: %w", c.Method, c.Path, err)
	}
	if cl != nil && res.status >= 200 && res.status < 300 {
		if err := cl.settle(tx, res); err != nil {
			return Reply{}, fmt.Errorf("apply %s %s: store key: %w", c.Method, c.Path, err)
		}
	}
	return Reply{Status: res.status, Body: res.body, Ref: res.ref}, nil
}

// route finds the write endpoint of a call and the record id in its path.
func route(service, method, path string) (endpoint, string, error) {
	switch {
	case service == ServiceMail && method == http.MethodPost && path == "/v1/send":
		return endpoint{service: ServiceMail, keyed: true, body: true, write: true, run: runSend}, "", nil
	case service == ServiceCRM && method == http.MethodPost && path == recordsPath:
		return endpoint{service: ServiceCRM, keyed: true, body: true, write: true, run: runCreate}, "", nil
	case service == ServiceCRM && method == http.MethodPut && strings.HasPrefix(path, recordsPath+"/"):
		id := strings.TrimPrefix(path, recordsPath+"/")
		if !validRecordID(id) {
			return endpoint{}, "", fmt.Errorf("apply %s %s: invalid record id", method, path)
		}
		return endpoint{service: ServiceCRM, keyed: true, body: true, write: true, run: runPut}, id, nil
	}
	return endpoint{}, "", fmt.Errorf("apply: no write endpoint %s %s on %s", method, path, service)
}

// ServerErrorReply is the answer the services give a request that meets
// the server-error fault point: 500 before any effect.
func ServerErrorReply() Reply {
	res := problemResult(http.StatusInternalServerError, "server-error", "Internal Server Error",
		"injected fault: the server failed before doing anything")
	return Reply{Status: res.status, Body: res.body}
}
