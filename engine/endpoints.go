package engine

import (
	"net/http"
	"time"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/store"
)

// RuntimeAPI is the host's runtime API as other packages see it: where it
// listens, the bearer token it takes, and room for their own routes behind
// that token (engine/control mounts the control API there).
type RuntimeAPI struct{ h *Host }

// Runtime is the host's runtime API.
func (h *Host) Runtime() RuntimeAPI { return RuntimeAPI{h} }

// URL is the runtime API's address (http://127.0.0.1:PORT).
func (r RuntimeAPI) URL() string { return r.h.runtimeURL }

// Socket is the path of the Unix socket of the runtime channel, the way
// the host's workers reach the runtime API during a run ("" if it could not
// listen on one; they use TCP then).
func (r RuntimeAPI) Socket() string { return r.h.runtimeSock }

// Token is the bearer token every request to the runtime API must carry.
func (r RuntimeAPI) Token() string { return r.h.token }

// Handle serves pattern (http.ServeMux's syntax) on the runtime API's
// listener, to requests that carry the token. A pattern that conflicts
// with one already served panics, as http.ServeMux.Handle does.
func (r RuntimeAPI) Handle(pattern string, handler http.Handler) {
	r.h.runtimeMux.Handle(pattern, handler)
}

// BeforeClose has fn run when the host closes, before the runtime API
// stops answering (engine/control withdraws its announcement there).
func (r RuntimeAPI) BeforeClose(fn func()) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.beforeClose = append(r.h.beforeClose, fn)
}

// Store is the host's database, for adapters that keep their own
// collections in it (engine/otlp's receiver of live traces, the lesson
// package's progress): they read and write it in its own transactions.
func (h *Host) Store() *store.DB { return h.db }

// Catalog is the scenario catalogue the host runs from.
func (h *Host) Catalog() *scenario.Catalog { return h.catalog }

// SetPace sets the slow motion the runtime hands, in their plan, the runs
// that start from now on (the explorer's S, lesson --slow): each worker
// waits d before each attempt and records the wait; 0 turns it off. A run's own RunOptions.Pace
// applies when longer. The scenario's deadlines are never changed.
func (r RuntimeAPI) SetPace(d time.Duration) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.pace = max(d, 0)
}

// Pace is the slow motion SetPace set.
func (r RuntimeAPI) Pace() time.Duration {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.h.pace
}
