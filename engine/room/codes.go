package room

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
)

// codeAlphabet is what a join code is made of: capital letters and digits
// without the ones easily misread aloud or on a projector (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// NewCode makes a join code: two groups of four letters and digits, from
// crypto/rand ("K7QX-3M9P").
func NewCode() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make join code: %w", err)
	}
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		// 256 % 31 is small: the bias is below what a workshop notices.
		out = append(out, codeAlphabet[int(c)%len(codeAlphabet)])
	}
	return string(out), nil
}

// normaliseCode is how codes compare: case, spaces and dashes do not count.
func normaliseCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-' || unicode.IsSpace(r):
		default:
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// sameSecret compares two secrets in constant time (for equal lengths; the
// hashes make every length equal).
func sameSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// newToken makes a bearer token: 32 random bytes in hex, with a prefix
// that says what it is.
func newToken(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

// tokenHash is what the room stores of a participant token.
func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// MaxNameLen is the longest participant name, in characters.
const MaxNameLen = 32

// SanitiseName makes a participant's name safe to print on any terminal:
// control characters (escape sequences among them) and other invisible
// runes are dropped, runs of spaces become one, and it is cut to
// MaxNameLen characters. An empty result means the name is refused.
func SanitiseName(s string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		if n >= MaxNameLen {
			break
		}
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case !unicode.IsPrint(r) || r == unicode.ReplacementChar:
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
			if n >= MaxNameLen {
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// NewTeacherToken makes the token of the room's teacher.
func NewTeacherToken() (string, error) { return newToken("rlt_") }
