package room

// Each participant's CRM: the room's CRM holds every participant's
// records, each under the participant's namespace, and the room's proxy
// shows a participant its own records only, under the ids it chose.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/retrylab/retrylab/engine/attrib"
)

// crmRecords is the CRM's collection path, below the room's /crm prefix.
const crmRecords = "/v1/records"

// CRMNamespace is the prefix of a participant's records in the room's CRM:
// the record a participant's agent names "cust_42" is
// CRMNamespace(participant)+"cust_42" there, and no other participant
// reads or writes it.
func CRMNamespace(participant string) string { return participant + "~" }

// crmRequest is r, a participant's CRM request (its path under the room's
// /crm prefix), with its record ids put in the participant's namespace:
// the one in the path, the body's "id", and, for a create without one, a
// new id in the namespace (derived from the Idempotency-Key when there is
// one, so a keyed retry is the same request). ok is false when the body
// could not be read: the answer is written.
func crmRequest(w http.ResponseWriter, r *http.Request, c caller, prefix string) (*http.Request, bool) {
	ns := CRMNamespace(c.participant.ID)
	rest := strings.TrimPrefix(r.URL.Path, prefix)
	out := r.Clone(r.Context())
	if id, found := strings.CutPrefix(rest, crmRecords+"/"); found && id != "" {
		out.URL.Path = prefix + crmRecords + "/" + ns + id
		out.URL.RawPath = ""
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return out, true
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit))
		} else {
			writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		}
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil && obj != nil {
		var id string
		switch raw, has := obj["id"]; {
		case has && json.Unmarshal(raw, &id) == nil && id != "":
			obj["id"], _ = json.Marshal(ns + id)
		case !has && r.Method == http.MethodPost && rest == crmRecords:
			minted, err := mintCRMID(r.Header.Get(attrib.HeaderIdempotencyKey))
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return nil, false
			}
			obj["id"], _ = json.Marshal(ns + minted)
		}
		if next, err := json.Marshal(obj); err == nil {
			data = next
		}
	}
	// Not a JSON object: the CRM answers it as it answers anyone.
	out.Body = io.NopCloser(bytes.NewReader(data))
	out.ContentLength = int64(len(data))
	out.TransferEncoding = nil
	out.Header.Set("Content-Length", strconv.Itoa(len(data)))
	return out, true
}

// mintCRMID is the id of a record a participant's agent creates without
// one: from its Idempotency-Key when it has one (a retry with the key
// names the same record, as the CRM's own minting would have it replayed),
// else new.
func mintCRMID(key string) (string, error) {
	if key != "" {
		sum := sha256.Sum256([]byte(key))
		return "rec_" + hex.EncodeToString(sum[:8]), nil
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("mint a record id: %w", err)
	}
	return "rec_" + hex.EncodeToString(b), nil
}

// maxCRMAnswer bounds what the room reads of a CRM answer to rewrite it.
const maxCRMAnswer = 16 << 20

// crmResponse shows a participant its own records only, under its own
// ids: a list keeps the participant's records, and the namespace is taken
// out of every id the answer names.
func crmResponse(resp *http.Response) error {
	c, _ := resp.Request.Context().Value(ctxKey{}).(caller)
	ns := CRMNamespace(c.participant.ID)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCRMAnswer))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read the CRM's answer: %w", err)
	}
	if resp.Request.Method == http.MethodGet && strings.HasSuffix(resp.Request.URL.Path, crmRecords) && resp.StatusCode == http.StatusOK {
		var list struct {
			Records []map[string]json.RawMessage `json:"records"`
		}
		if err := json.Unmarshal(data, &list); err == nil {
			own := make([]map[string]json.RawMessage, 0, len(list.Records))
			for _, rec := range list.Records {
				var id string
				if json.Unmarshal(rec["id"], &id) == nil && strings.HasPrefix(id, ns) {
					own = append(own, rec)
				}
			}
			if next, err := json.Marshal(map[string]any{"records": own}); err == nil {
				data = next
			}
		}
	}
	data = bytes.ReplaceAll(data, []byte(ns), nil)
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	return nil
}
