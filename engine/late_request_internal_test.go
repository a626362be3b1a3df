package engine

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// A worker killed just after writing its request still has it delivered,
// and the run that resumes the execution may start before the world reads
// it. The late request must meet the server-side faults its attempt was
// given (here a 500 before any effect), not take effect unfaulted: the
// chaos check once found such an effect of a "server-error" attempt.
func TestPlannedServerFaultsWaitForTheirRequestAcrossRuns(t *testing.T) {
	t.Parallel()
	h, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r, err := h.Start("naive", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	id := r.Execution

	// The run's worker was granted attempt 9 of send with a server error
	// and died before the world read the request.
	h.mu.Lock()
	h.execs[id].server[attemptKey{"send", 9}] = []fault.Point{fault.ServerError}
	st, err := h.reserve(id, h.execs[id].scn, h.execs[id].policy, 0)
	h.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rebuild(id, st, 2); err != nil {
		t.Fatal(err)
	}
	if got := h.Faults().ServerFaults(id, "send", 9); !slices.Equal(got, []fault.Point{fault.ServerError}) {
		t.Fatalf("the late request of attempt 9 meets %v, want [server-error]", got)
	}
	if got := h.Faults().ServerFaults(id, "send", 9); got != nil {
		t.Fatalf("a second request of attempt 9 meets %v, want nothing: a fault is carried out once", got)
	}

	// A live worker still refuses a second reservation.
	h.mu.Lock()
	_, err = h.reserve(id, st.scn, st.policy, 0)
	h.mu.Unlock()
	if err == nil {
		t.Fatal("reserve of an execution with a live worker: no error, want ErrBusy")
	}
}
