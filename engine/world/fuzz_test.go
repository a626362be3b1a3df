package world

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/store"
)

// FuzzIdempotencyKeyHeader feeds header field values, one per line, to the
// key parser: it must never panic, must refuse repeated fields, and must
// only return keys of 1 to 255 printable ASCII characters.
func FuzzIdempotencyKeyHeader(f *testing.F) {
	for _, s := range []string{"ik_a94a0b1d", `"ik_a94a0b1d"`, "", "a\nb", `"a\"b\\c"`, `"unterminated`,
		`"x" trailing`, "clé", "\x7f", " spaced key ", strings.Repeat("k", 256)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		values := strings.Split(in, "\n")
		key, present, err := parseIdempotencyKey(values)
		if !present && (err != nil || key != "") {
			t.Fatalf("absent key with %q, %v", key, err)
		}
		if len(values) > 1 && err == nil {
			t.Fatalf("%d fields accepted", len(values))
		}
		if err != nil {
			if key != "" {
				t.Fatalf("key %q returned with error %v", key, err)
			}
			return
		}
		if len(key) == 0 || len(key) > MaxIdempotencyKeyLen {
			t.Fatalf("key of length %d accepted", len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] >= 0x7f {
				t.Fatalf("key %q has byte %#x", key, key[i])
			}
		}
		// A bare key that is not quoted parses to itself (modulo trimming).
		if v := strings.Trim(values[0], " \t"); !strings.HasPrefix(v, `"`) && key != v {
			t.Fatalf("bare %q parsed as %q", v, key)
		}
	})
}

// FuzzMailBody posts arbitrary bytes to the mail handler, with and without
// a key: it must never panic nor answer 5xx.
func FuzzMailBody(f *testing.F) {
	for _, s := range []string{invoice, `{}`, `[]`, `null`, `{"to":`, `{"to":"a@b","subject":"s","x":{"y":[1,2.5e300,-0]}}`,
		"{\"to\":\"a@b\",\"subject\":\"\xff\xfe\"}", `{"to":"a@b","subject":"s","to":"c"}`, "\x00", strings.Repeat("[", 20000)} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	db, err := store.Open(filepath.Join(f.TempDir(), "fuzz.db"), store.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := db.Check(); err != nil {
			f.Errorf("db check: %v", err)
		}
		db.Close()
	})
	w, err := New(Config{DB: db, Clock: newFakeClock(), MaxBody: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	h := w.MailHandler()
	f.Fuzz(func(t *testing.T, body []byte, keyed bool) {
		req := httptest.NewRequest(http.MethodPost, "/v1/send", bytes.NewReader(body))
		if keyed {
			req.Header.Set(HeaderIdempotencyKey, "fuzz-key")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
	})
}
