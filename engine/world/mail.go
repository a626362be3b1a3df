package world

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/retrylab/retrylab/store"
)

// Message is one message in the mail provider's outbox.
type Message struct {
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body,omitempty"`
	// Extra holds the request's other top-level fields, as sent.
	Extra       map[string]json.RawMessage `json:"extra,omitempty"`
	Time        time.Time                  `json:"time"` // world clock
	Attribution Attribution                `json:"attribution"`
}

// MailHandler serves the mail API: POST /v1/send with a JSON object
// {"to", "subject", "body", ...}, honouring Idempotency-Key.
func (w *World) MailHandler() http.Handler {
	send := endpoint{service: ServiceMail, keyed: true, body: true, write: true, run: runSend}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/send" {
			w.notFound(rw, r, ServiceMail)
			return
		}
		if r.Method != http.MethodPost {
			w.notAllowed(rw, r, ServiceMail, http.MethodPost)
			return
		}
		w.serve(rw, r, send, "")
	})
}

// validateMail checks a send request and returns the message it describes,
// or why it is invalid.
func validateMail(obj map[string]json.RawMessage) (Message, string) {
	var m Message
	str := func(name string, required bool) (string, string) {
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			if required {
				return "", `"` + name + `" is required`
			}
			return "", ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", `"` + name + `" must be a string`
		}
		return s, ""
	}
	var problem string
	if m.To, problem = str("to", true); problem != "" {
		return m, problem
	}
	if !strings.Contains(m.To, "@") {
		return m, `"to" must be an email address`
	}
	if m.Subject, problem = str("subject", true); problem != "" {
		return m, problem
	}
	if strings.TrimSpace(m.Subject) == "" {
		return m, `"subject" must not be empty`
	}
	if m.Body, problem = str("body", false); problem != "" {
		return m, problem
	}
	for k, v := range obj {
		if k == "to" || k == "subject" || k == "body" {
			continue
		}
		if m.Extra == nil {
			m.Extra = make(map[string]json.RawMessage)
		}
		m.Extra[k] = v
	}
	return m, ""
}

// runSend delivers a message: it appends it to the outbox.
func runSend(tx *store.Tx, in *input) (*result, error) {
	m, problem := validateMail(in.obj)
	if problem != "" {
		return reject(ServiceMail, in, http.StatusBadRequest, "invalid-message", "Bad Request", problem), nil
	}
	seq, err := tx.Append(BucketOutbox, func(seq uint64) ([]byte, error) {
		m.Seq, m.ID, m.Time, m.Attribution = seq, messageID(seq), in.now, in.attr
		return encodeMessage(m)
	})
	if err != nil {
		return nil, err
	}
	if err := tx.Put(BucketMeta, execIndexKey(in.attr.Execution, seq), nil); err != nil {
		return nil, err
	}
	body := map[string]any{"status": "sent", "message_id": m.ID, "deduplicated": false}
	if in.key != "" {
		body["idempotency_key"] = in.key
	}
	res, err := jsonResult(http.StatusOK, body)
	if err != nil {
		return nil, err
	}
	res.ref = m.ID
	res.acts = []Activity{{Kind: KindDelivered, Service: ServiceMail, Time: in.now, Attribution: in.attr,
		MessageID: m.ID, To: m.To, Subject: m.Subject, Key: in.key, Status: http.StatusOK}}
	return res, nil
}
