package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/retrylab/retrylab/store"
)

// Reasons an Idempotency-Key header is refused, wrapped by parseIdempotencyKey.
var (
	errKeyRepeated = errors.New("more than one Idempotency-Key header field")
	errKeyEmpty    = errors.New("empty Idempotency-Key")
	errKeyTooLong  = fmt.Errorf("an Idempotency-Key longer than %d characters", MaxIdempotencyKeyLen)
	errKeyChar     = errors.New("a control or non-ASCII character in Idempotency-Key")
	errKeyQuoting  = errors.New("a malformed quoted Idempotency-Key")
)

// parseIdempotencyKey reads the Idempotency-Key field values of one request.
// It reports present=false when there is no field. A value may be a bare
// token, as Stripe takes it, or an RFC 8941 sf-string ("..."), as the IETF
// draft writes it; both name the same key. The key must be 1 to 255
// characters of printable ASCII (space allowed inside).
func parseIdempotencyKey(values []string) (key string, present bool, err error) {
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, errKeyRepeated
	}
	v := strings.Trim(values[0], " \t")
	if strings.HasPrefix(v, `"`) {
		v, err = unquoteSFString(v)
		if err != nil {
			return "", true, err
		}
	}
	if v == "" {
		return "", true, errKeyEmpty
	}
	if len(v) > MaxIdempotencyKeyLen {
		return "", true, errKeyTooLong
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f {
			return "", true, errKeyChar
		}
	}
	return v, true, nil
}

// unquoteSFString parses an RFC 8941 sf-string: DQUOTE *chr DQUOTE, where chr
// is printable ASCII other than DQUOTE and backslash, or \" or \\.
func unquoteSFString(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' {
		return "", errKeyQuoting
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", errKeyQuoting
			}
			b.WriteByte(s[i])
		case c == '"':
			if i != len(s)-1 {
				return "", errKeyQuoting
			}
			return b.String(), nil
		case c < 0x20 || c >= 0x7f:
			return "", errKeyChar
		default:
			b.WriteByte(c)
		}
	}
	return "", errKeyQuoting // no closing quote
}

// fingerprint identifies a request's intent: method, path and canonical body.
func fingerprint(method, path string, canonicalBody []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(canonicalBody)
	return hex.EncodeToString(h.Sum(nil))
}

// keyRecord is what the key store holds under an idempotency key.
type keyRecord struct {
	Fingerprint string          `json:"fingerprint"`
	Endpoint    string          `json:"endpoint"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	Ref         string          `json:"ref,omitempty"` // message or record id of the effect
	Created     time.Time       `json:"created"`
	// Retention is how long this key is remembered; zero means the world's
	// default. It is fixed when the key is stored.
	Retention   time.Duration `json:"retention,omitempty"`
	InFlight    bool          `json:"in_flight,omitempty"`
	Token       string        `json:"token,omitempty"` // the claiming request's, while in flight
	Attribution Attribution   `json:"attribution"`
}

// expired reports whether a record is older than the retention window by
// the world clock, and so forgotten.
func (w *World) expired(rec keyRecord, now time.Time) bool {
	return now.Sub(rec.Created) > w.retentionOf(rec)
}

// retentionOf is how long a stored key lives.
func (w *World) retentionOf(rec keyRecord) time.Duration {
	if rec.Retention > 0 {
		return rec.Retention
	}
	return w.retention
}

// claimOutcome is what the key store says about a keyed request on arrival.
type claimOutcome int

const (
	claimNew      claimOutcome = iota // key absent or forgotten: now in flight for us
	claimReplay                       // completed with the same fingerprint
	claimInUse                        // in flight for another request
	claimMismatch                     // stored for another payload or endpoint
)

// claim is a keyed request's hold on its key while it executes.
type claim struct {
	key, endpoint, fp, token string
	created                  time.Time
	retention                time.Duration
	attr                     Attribution
}

// claimKey checks and inserts the key in one transaction. On claimNew the
// key is recorded as in flight for c.token; otherwise the existing live
// record is returned.
func (w *World) claimKey(c *claim) (claimOutcome, keyRecord, error) {
	// Most repeats find a completed key: answer those from a read
	// transaction, without paying for a commit that writes nothing.
	var out claimOutcome
	var prior keyRecord
	var decided bool
	if err := w.db.View(func(tx *store.Tx) error {
		out, prior, decided = w.existingClaim(tx, c)
		return nil
	}); err != nil {
		return 0, keyRecord{}, fmt.Errorf("claim idempotency key: %w", err)
	}
	if decided && out == claimReplay {
		return out, prior, nil
	}
	err := w.db.Update(func(tx *store.Tx) error {
		if out, prior, decided = w.existingClaim(tx, c); decided {
			return nil
		}
		out, prior = claimNew, keyRecord{}
		data, err := encodeKeyRecord(c.key, keyRecord{Fingerprint: c.fp, Endpoint: c.endpoint, Created: c.created,
			Retention: c.retention, InFlight: true, Token: c.token, Attribution: c.attr})
		if err != nil {
			return err
		}
		if err := tx.Put(BucketKeysInFlight, []byte(c.key), nil); err != nil {
			return err
		}
		return tx.Put(BucketKeys, []byte(c.key), data)
	})
	if err != nil {
		return 0, keyRecord{}, fmt.Errorf("claim idempotency key: %w", err)
	}
	return out, prior, nil
}

// existingClaim looks the key up: decided is false when it is absent or
// forgotten, so the request may claim it.
func (w *World) existingClaim(tx *store.Tx, c *claim) (out claimOutcome, prior keyRecord, decided bool) {
	rec, ok := decodeKeyRecord(c.key, tx.Get(BucketKeys, []byte(c.key)))
	if !ok || w.expired(rec, c.created) {
		return claimNew, keyRecord{}, false
	}
	switch {
	case rec.Endpoint != c.endpoint || rec.Fingerprint != c.fp:
		return claimMismatch, rec, true
	case rec.InFlight:
		return claimInUse, rec, true
	}
	return claimReplay, rec, true
}

// settle runs inside the effect's transaction: a successful response is
// stored under the key; any other outcome releases the claim, so a
// corrected retry executes.
func (c *claim) settle(tx *store.Tx, res *result) error {
	if res.status >= 200 && res.status < 300 {
		data, err := encodeKeyRecord(c.key, keyRecord{Fingerprint: c.fp, Endpoint: c.endpoint, Status: res.status,
			Body: res.body, Ref: res.ref, Created: c.created, Retention: c.retention, Attribution: c.attr})
		if err != nil {
			return err
		}
		if err := tx.Delete(BucketKeysInFlight, []byte(c.key)); err != nil {
			return err
		}
		return tx.Put(BucketKeys, []byte(c.key), data)
	}
	return c.releaseIn(tx)
}

// releaseIn deletes the key record if it is still this claim's.
func (c *claim) releaseIn(tx *store.Tx) error {
	if rec, ok := decodeKeyRecord(c.key, tx.Get(BucketKeys, []byte(c.key))); ok && rec.InFlight && rec.Token == c.token {
		if err := tx.Delete(BucketKeysInFlight, []byte(c.key)); err != nil {
			return err
		}
		return tx.Delete(BucketKeys, []byte(c.key))
	}
	return nil
}

// release gives a claim up without an effect.
func (w *World) release(c *claim) error {
	if err := w.db.Update(c.releaseIn); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// newToken names one claim uniquely within this process.
func (w *World) newToken() string {
	return fmt.Sprintf("%s-%d", w.tokenNonce, w.tokenSeq.Add(1))
}

// dropInFlight deletes the in-flight key records a previous process left.
func (w *World) dropInFlight() error {
	// The usual case, nothing was in flight, must not cost a commit: on a
	// large database every commit writes the free-page list.
	var clean bool
	if err := w.db.View(func(tx *store.Tx) error {
		clean = tx.Meta(inFlightIndexBuilt) != nil && tx.Count(BucketKeysInFlight) == 0
		return nil
	}); err != nil {
		return fmt.Errorf("drop in-flight idempotency keys: %w", err)
	}
	if clean {
		return nil
	}
	err := w.db.Update(func(tx *store.Tx) error {
		var stale [][]byte
		collect := func(k, v []byte) bool {
			if rec, ok := decodeKeyRecord(string(k), v); ok && rec.InFlight {
				stale = append(stale, k)
			}
			return true
		}
		var err error
		if tx.Meta(inFlightIndexBuilt) != nil {
			// The index names every in-flight key: look at those only.
			err = tx.Scan(BucketKeysInFlight, nil, false, func(k, _ []byte) bool {
				return collect(k, tx.Get(BucketKeys, k))
			})
		} else {
			// A database from before the index: one walk of every key.
			err = tx.Scan(BucketKeys, nil, false, collect)
		}
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := tx.Delete(BucketKeys, k); err != nil {
				return err
			}
		}
		if err := tx.Clear(BucketKeysInFlight); err != nil {
			return err
		}
		return tx.SetMeta(inFlightIndexBuilt, []byte{1})
	})
	if err != nil {
		return fmt.Errorf("drop in-flight idempotency keys: %w", err)
	}
	return nil
}

// inFlightIndexBuilt is the store Meta key that says BucketKeysInFlight
// names every in-flight key. Resets empty both, so it stays true.
const inFlightIndexBuilt = "world_in_flight_index"

// markReplayed returns a stored response body with "deduplicated" set true.
func markReplayed(body []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return body
	}
	obj["deduplicated"] = json.RawMessage("true")
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}
