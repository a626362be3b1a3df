package room_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/room"
)

// crmRequest sends one request to the room's CRM with a participant's
// token (and an Idempotency-Key unless key is "") and decodes its JSON
// answer.
func crmRequest(t *testing.T, r *aRoom, m room.Membership, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, r.url+"/v1/room/crm"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+m.Token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// Each participant's agent has its own CRM through the room: the same
// record id is two records, each reads and lists only its own, under the
// ids it chose; a create without an id is its own too, and a keyed retry
// of it is the same record.
func TestEachParticipantHasItsOwnCRM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRoom(t, filepath.Join(dir, "room.db"), "127.0.0.1:0", room.Config{})
	alice := join(t, r, filepath.Join(dir, "alice.db"), "alice")
	bob := join(t, r, filepath.Join(dir, "bob.db"), "bob")

	if code, got := crmRequest(t, r, alice, http.MethodPut, "/v1/records/cust_42", "", `{"id":"cust_42","name":"Alice's customer"}`); code/100 != 2 || got["id"] != "cust_42" {
		t.Fatalf("alice's upsert: %d %v", code, got)
	}
	if code, got := crmRequest(t, r, bob, http.MethodPut, "/v1/records/cust_42", "", `{"name":"Bob's customer"}`); code/100 != 2 || got["id"] != "cust_42" || got["version"] != 1.0 {
		t.Fatalf("bob's upsert of the same id: %d %v, want a record of his own (version 1)", code, got)
	}
	for _, c := range []struct {
		who  room.Membership
		want string
	}{{alice, "Alice's customer"}, {bob, "Bob's customer"}} {
		code, got := crmRequest(t, r, c.who, http.MethodGet, "/v1/records/cust_42", "", "")
		fields, _ := got["fields"].(map[string]any)
		if code != http.StatusOK || got["id"] != "cust_42" || fields["name"] != c.want {
			t.Errorf("%s reads cust_42: %d %v, want %q", c.who.Name, code, got, c.want)
		}
	}

	// A create without an id, retried with its key: one record, alice's.
	_, first := crmRequest(t, r, alice, http.MethodPost, "/v1/records", "lead-1", `{"name":"Lead"}`)
	_, again := crmRequest(t, r, alice, http.MethodPost, "/v1/records", "lead-1", `{"name":"Lead"}`)
	id, _ := first["id"].(string)
	if !strings.HasPrefix(id, "rec_") || again["id"] != id || strings.Contains(id, "~") {
		t.Fatalf("alice's create and its keyed retry: %v, %v", first, again)
	}
	if code, got := crmRequest(t, r, bob, http.MethodGet, "/v1/records/"+id, "", ""); code != http.StatusNotFound {
		t.Errorf("bob reads alice's %s: %d %v, want 404", id, code, got)
	}
	if code, got := crmRequest(t, r, bob, http.MethodGet, "/v1/records/"+room.CRMNamespace(alice.Participant)+"cust_42", "", ""); code != http.StatusNotFound {
		t.Errorf("bob names alice's record in the room's CRM: %d %v, want 404", code, got)
	}

	list := func(m room.Membership) []string {
		code, got := crmRequest(t, r, m, http.MethodGet, "/v1/records", "", "")
		if code != http.StatusOK {
			t.Fatalf("%s's list: %d %v", m.Name, code, got)
		}
		var ids []string
		recs, _ := got["records"].([]any)
		for _, rec := range recs {
			ids = append(ids, rec.(map[string]any)["id"].(string))
		}
		return ids
	}
	if got := strings.Join(list(alice), " "); got != "cust_42 "+id && got != id+" cust_42" {
		t.Errorf("alice's list: %s, want cust_42 and %s", got, id)
	}
	if got := strings.Join(list(bob), " "); got != "cust_42" {
		t.Errorf("bob's list: %s, want cust_42 only", got)
	}
}
