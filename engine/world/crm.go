package world

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/idemkey"
	"github.com/retrylab/retrylab/store"
)

// CRM write operations, as recorded in CRMWrite.Op.
const (
	OpUpsert         = "upsert"          // PUT /v1/records/{id}
	OpCreate         = "create"          // POST /v1/records that created a row
	OpCreateExisting = "create-existing" // POST with a client id whose row already has those fields
)

// recordDoc is a CRM row as stored.
type recordDoc struct {
	ID          string                     `json:"id"`
	Fields      map[string]json.RawMessage `json:"fields"`
	Version     int                        `json:"version"`
	Created     time.Time                  `json:"created"`
	Updated     time.Time                  `json:"updated"`
	Attribution Attribution                `json:"attribution"` // of the last change
}

// CRMWrite is one entry of the CRM's write log: every write request that
// was applied, including upserts that changed nothing.
type CRMWrite struct {
	Seq         uint64      `json:"seq"`
	RecordID    string      `json:"record_id"`
	Op          string      `json:"op"` // OpUpsert, OpCreate or OpCreateExisting
	Time        time.Time   `json:"time"`
	Attribution Attribution `json:"attribution"`
	Created     bool        `json:"created"` // the write created the row
	Version     int         `json:"version"` // the row's version after the write
}

const recordsPath = "/v1/records"

// CRMHandler serves the CRM:
//
//	PUT  /v1/records/{id}  upsert (naturally idempotent)
//	POST /v1/records       create; with a client "id", repeating it is safe
//	GET  /v1/records/{id}  read one
//	GET  /v1/records       list
//
// Writes honour Idempotency-Key like the mail API.
func (w *World) CRMHandler() http.Handler {
	list := endpoint{service: ServiceCRM, run: runList}
	get := endpoint{service: ServiceCRM, run: runGet}
	create := endpoint{service: ServiceCRM, keyed: true, body: true, write: true, run: runCreate}
	put := endpoint{service: ServiceCRM, keyed: true, body: true, write: true, run: runPut}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == recordsPath:
			switch r.Method {
			case http.MethodGet:
				w.serve(rw, r, list, "")
			case http.MethodPost:
				w.serve(rw, r, create, "")
			default:
				w.notAllowed(rw, r, ServiceCRM, "GET, POST")
			}
		case strings.HasPrefix(p, recordsPath+"/") && validRecordID(strings.TrimPrefix(p, recordsPath+"/")):
			id := strings.TrimPrefix(p, recordsPath+"/")
			switch r.Method {
			case http.MethodGet:
				w.serve(rw, r, get, id)
			case http.MethodPut:
				w.serve(rw, r, put, id)
			default:
				w.notAllowed(rw, r, ServiceCRM, "GET, PUT")
			}
		default:
			w.notFound(rw, r, ServiceCRM)
		}
	})
}

// validRecordID accepts 1 to 255 printable ASCII characters other than '/'.
func validRecordID(id string) bool {
	if id == "" || len(id) > 255 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f || c == '/' {
			return false
		}
	}
	return true
}

// canonicalFields is the canonical JSON of a field set, for comparisons.
func canonicalFields(fields map[string]json.RawMessage) ([]byte, error) {
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return idemkey.CanonicalJSON(b)
}

// splitID separates the "id" member from a write's fields. It reports a
// problem when "id" is present but not a valid record id.
func splitID(obj map[string]json.RawMessage) (id string, fields map[string]json.RawMessage, problem string) {
	fields = make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if k != "id" {
			fields[k] = v
		}
	}
	raw, ok := obj["id"]
	if !ok || string(raw) == "null" {
		return "", fields, ""
	}
	if json.Unmarshal(raw, &id) != nil || !validRecordID(id) {
		return "", nil, `"id" must be a string of 1 to 255 printable ASCII characters without "/" or spaces`
	}
	return id, fields, ""
}

func loadRecord(tx *store.Tx, id string) (recordDoc, bool, error) {
	v := tx.Get(BucketCRM, []byte(id))
	if v == nil {
		return recordDoc{}, false, nil
	}
	doc, err := decodeRecordDoc(id, v)
	if err != nil {
		return recordDoc{}, false, fmt.Errorf("decode record %q: %w", id, err)
	}
	return doc, true, nil
}

func saveRecord(tx *store.Tx, doc recordDoc) error {
	data, err := encodeRecordDoc(doc)
	if err != nil {
		return fmt.Errorf("encode record %q: %w", doc.ID, err)
	}
	return tx.Put(BucketCRM, []byte(doc.ID), data)
}

func appendWrite(tx *store.Tx, wr CRMWrite) error {
	_, err := tx.Append(BucketCRMWrites, func(seq uint64) ([]byte, error) {
		wr.Seq = seq
		return encodeCRMWrite(wr), nil
	})
	return err
}

// writeResponse is the body of a successful write.
func writeResponse(in *input, doc recordDoc, created bool) map[string]any {
	fields := doc.Fields
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	body := map[string]any{"id": doc.ID, "version": doc.Version, "created": created, "fields": fields,
		"deduplicated": false}
	if in.key != "" {
		body["idempotency_key"] = in.key
	}
	return body
}

func writeActivity(in *input, id string, status int, detail string) Activity {
	return Activity{Kind: KindCRMWrite, Service: ServiceCRM, Time: in.now, Attribution: in.attr, Key: in.key,
		RecordID: id, Status: status, Detail: detail}
}

// runPut upserts a record: the body is its complete field set.
func runPut(tx *store.Tx, in *input) (*result, error) {
	bodyID, fields, problem := splitID(in.obj)
	if problem == "" && bodyID != "" && bodyID != in.id {
		problem = `"id" in the body differs from the id in the path`
	}
	if problem != "" {
		return reject(ServiceCRM, in, http.StatusBadRequest, "invalid-record", "Bad Request", problem), nil
	}
	canon, err := canonicalFields(fields)
	if err != nil {
		return reject(ServiceCRM, in, http.StatusBadRequest, "invalid-record", "Bad Request", "cannot canonicalise fields: "+err.Error()), nil
	}
	doc, exists, err := loadRecord(tx, in.id)
	if err != nil {
		return nil, err
	}
	detail := "upsert: created"
	switch {
	case !exists:
		doc = recordDoc{ID: in.id, Fields: fields, Version: 1, Created: in.now, Updated: in.now, Attribution: in.attr}
	case sameFields(doc.Fields, canon):
		detail = "upsert: unchanged"
	default:
		doc.Fields, doc.Version, doc.Updated, doc.Attribution = fields, doc.Version+1, in.now, in.attr
		detail = fmt.Sprintf("upsert: changed (version %d)", doc.Version)
	}
	if detail != "upsert: unchanged" {
		if err := saveRecord(tx, doc); err != nil {
			return nil, err
		}
	}
	if err := appendWrite(tx, CRMWrite{RecordID: in.id, Op: OpUpsert, Time: in.now, Attribution: in.attr,
		Created: !exists, Version: doc.Version}); err != nil {
		return nil, err
	}
	res, err := jsonResult(http.StatusOK, writeResponse(in, doc, !exists))
	if err != nil {
		return nil, err
	}
	res.ref = in.id
	res.acts = []Activity{writeActivity(in, in.id, http.StatusOK, detail)}
	return res, nil
}

// sameFields compares stored fields with a canonical field set.
func sameFields(stored map[string]json.RawMessage, canon []byte) bool {
	old, err := canonicalFields(stored)
	return err == nil && bytes.Equal(old, canon)
}

// runCreate creates a record. Without a client id it mints one, so each
// request makes a new row; with one, a repeat with the same fields answers
// 200 "existing": true and a repeat with other fields 409.
func runCreate(tx *store.Tx, in *input) (*result, error) {
	id, fields, problem := splitID(in.obj)
	if problem != "" {
		return reject(ServiceCRM, in, http.StatusBadRequest, "invalid-record", "Bad Request", problem), nil
	}
	canon, err := canonicalFields(fields)
	if err != nil {
		return reject(ServiceCRM, in, http.StatusBadRequest, "invalid-record", "Bad Request", "cannot canonicalise fields: "+err.Error()), nil
	}
	if id != "" {
		doc, exists, err := loadRecord(tx, id)
		if err != nil {
			return nil, err
		}
		if exists {
			if !sameFields(doc.Fields, canon) {
				res := reject(ServiceCRM, in, http.StatusConflict, "record-exists", "Conflict",
					fmt.Sprintf("record %q already exists with different fields", id))
				res.acts[0].Kind, res.acts[0].RecordID = KindConflict, id
				return res, nil
			}
			if err := appendWrite(tx, CRMWrite{RecordID: id, Op: OpCreateExisting, Time: in.now,
				Attribution: in.attr, Version: doc.Version}); err != nil {
				return nil, err
			}
			body := writeResponse(in, doc, false)
			body["existing"] = true
			res, err := jsonResult(http.StatusOK, body)
			if err != nil {
				return nil, err
			}
			res.ref = id
			res.acts = []Activity{writeActivity(in, id, http.StatusOK, "create: record exists with the same fields")}
			return res, nil
		}
	} else if id, err = mintRecordID(tx); err != nil {
		return nil, err
	}
	doc := recordDoc{ID: id, Fields: fields, Version: 1, Created: in.now, Updated: in.now, Attribution: in.attr}
	if err := saveRecord(tx, doc); err != nil {
		return nil, err
	}
	if err := appendWrite(tx, CRMWrite{RecordID: id, Op: OpCreate, Time: in.now, Attribution: in.attr,
		Created: true, Version: 1}); err != nil {
		return nil, err
	}
	res, err := jsonResult(http.StatusCreated, writeResponse(in, doc, true))
	if err != nil {
		return nil, err
	}
	res.ref = id
	res.acts = []Activity{writeActivity(in, id, http.StatusCreated, "create")}
	return res, nil
}

// keyRecordSeq holds the counter of minted record ids in BucketMeta.
const keyRecordSeq = "crm_record_seq"

// mintRecordID takes the next free "rec_" id from a counter in the world
// bucket, skipping ids a client already chose.
func mintRecordID(tx *store.Tx) (string, error) {
	n := store.DecodeU64(tx.Get(BucketMeta, []byte(keyRecordSeq)))
	for range 1 << 16 {
		n++
		id := recordID(n)
		if tx.Get(BucketCRM, []byte(id)) == nil {
			return id, tx.Put(BucketMeta, []byte(keyRecordSeq), store.U64(n))
		}
	}
	return "", fmt.Errorf("mint record id: no free id after %d tries", 1<<16)
}

// readBody is a record as GET returns it.
func readBody(doc recordDoc) map[string]any {
	fields := doc.Fields
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	return map[string]any{"id": doc.ID, "version": doc.Version, "fields": fields,
		"created": doc.Created, "updated": doc.Updated}
}

func runGet(tx *store.Tx, in *input) (*result, error) {
	doc, exists, err := loadRecord(tx, in.id)
	if err != nil {
		return nil, err
	}
	act := Activity{Kind: KindCRMRead, Service: ServiceCRM, Time: in.now, Attribution: in.attr, RecordID: in.id}
	if !exists {
		res := problemResult(http.StatusNotFound, "record-not-found", "Not Found", fmt.Sprintf("no record %q", in.id))
		act.Status, act.Detail = http.StatusNotFound, "not found"
		res.acts = []Activity{act}
		return res, nil
	}
	res, err := jsonResult(http.StatusOK, readBody(doc))
	if err != nil {
		return nil, err
	}
	act.Status = http.StatusOK
	res.acts = []Activity{act}
	return res, nil
}

func runList(tx *store.Tx, in *input) (*result, error) {
	records := []map[string]any{}
	var decodeErr error
	if err := tx.Scan(BucketCRM, nil, false, func(k, v []byte) bool {
		var doc recordDoc
		if doc, decodeErr = decodeRecordDoc(string(k), v); decodeErr != nil {
			decodeErr = fmt.Errorf("decode record %q: %w", k, decodeErr)
			return false
		}
		records = append(records, readBody(doc))
		return true
	}); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	res, err := jsonResult(http.StatusOK, map[string]any{"records": records})
	if err != nil {
		return nil, err
	}
	res.acts = []Activity{{Kind: KindCRMRead, Service: ServiceCRM, Time: in.now, Attribution: in.attr,
		Status: http.StatusOK, Detail: fmt.Sprintf("list: %d records", len(records))}}
	return res, nil
}
