package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
)

// TestTimeoutLastsItsDeadline: an attempt that times out records at least
// its deadline, never a little under it (the explorer said "timeout 999ms"
// of a 1s deadline when the worker was preempted between setting the
// deadline and reading the clock).
func TestTimeoutLastsItsDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	w := &worker{tools: srv.Client()}
	const timeout = 5 * time.Millisecond
	for i := 0; i < 20; i++ {
		req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := w.send(context.Background(), req, timeout)
		if r.outcome != history.OutcomeTimeout || r.duration < timeout {
			t.Fatalf("attempt %d: %s after %s, want a timeout of at least %s", i, r.outcome, r.duration, timeout)
		}
	}
}
