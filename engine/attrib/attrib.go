// Package attrib is the protocol between a worker and the simulated
// providers it calls: the request headers that attribute an effect to the
// attempt that caused it, and Attribution, what they carry. It is a leaf:
// the worker (engine/agent) writes the headers and the providers
// (engine/world) read them, and neither imports the other for it.
package attrib

import (
	"net/http"
	"strconv"
	"strings"
)

// Request headers that attribute a request to the step that sent it.
// External clients omit them; their effects are unattributed.
const (
	HeaderExecution = "X-Retrylab-Execution"
	HeaderStep      = "X-Retrylab-Step"
	HeaderAttempt   = "X-Retrylab-Attempt"
	HeaderRun       = "X-Retrylab-Run"
)

// Idempotency headers.
const (
	// HeaderIdempotencyKey carries the caller's idempotency key.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderIdempotentReplayed is set to "true" on a replayed response.
	HeaderIdempotentReplayed = "Idempotent-Replayed"
)

// Attribution names the request that caused an effect, as read from the
// X-Retrylab-* and Idempotency-Key request headers. It is zero for external
// clients.
type Attribution struct {
	Execution string `json:"execution,omitempty"`
	Step      string `json:"step,omitempty"`
	Key       string `json:"key,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Run       int    `json:"run,omitempty"`
}

// SetHeader writes a's headers into h: the Idempotency-Key when a has a
// key, and the attribution headers always.
func (a Attribution) SetHeader(h http.Header) {
	if a.Key != "" {
		h.Set(HeaderIdempotencyKey, a.Key)
	}
	h.Set(HeaderExecution, a.Execution)
	h.Set(HeaderStep, a.Step)
	h.Set(HeaderAttempt, strconv.Itoa(a.Attempt))
	h.Set(HeaderRun, strconv.Itoa(a.Run))
}

// FromHeader reads the attribution headers of a request. The key is left
// empty: a provider reads the Idempotency-Key by its own rules.
func FromHeader(h http.Header) Attribution {
	return Attribution{
		Execution: h.Get(HeaderExecution),
		Step:      h.Get(HeaderStep),
		Attempt:   headerInt(h.Get(HeaderAttempt)),
		Run:       headerInt(h.Get(HeaderRun)),
	}
}

// headerInt reads a non-negative decimal header value; anything else is 0.
func headerInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
