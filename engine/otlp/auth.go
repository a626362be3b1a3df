package otlp

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized reports whether an Authorization header's value carries the
// bearer token want ("Bearer <token>", the scheme in any case). Both sides
// are hashed before they are compared, in constant time, so neither the
// token's bytes nor its length show in how long a refusal takes.
func authorized(want, header string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		token = "" // hashed all the same: a missing token takes as long
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	exp := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(got[:], exp[:]) == 1 && ok && token != ""
}

// requireToken answers 401, with a google.rpc.Status of code
// UNAUTHENTICATED, a request to h that does not carry the receiver's
// token; with no token set, h answers every request.
func (rc *Receiver) requireToken(h http.Handler) http.Handler {
	if rc.Token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(rc.Token, r.Header.Get("Authorization")) {
			enc := encProto
			if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				enc = encJSON
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="retrylab"`)
			writeStatus(w, enc, http.StatusUnauthorized, "send the receiver's token: Authorization: Bearer <token>")
			return
		}
		h.ServeHTTP(w, r)
	})
}
