package engine_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// askedFaults is a world.FaultSource that answers server-error for the
// first attempt and remembers what it was asked.
type askedFaults struct {
	mu    sync.Mutex
	asked []string
}

func (f *askedFaults) ServerFaults(execution, step string, attempt int) []fault.Point {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, execution+"/"+step)
	if attempt == 1 {
		return []fault.Point{fault.ServerError}
	}
	return nil
}

// A runner of tool calls outside the host (retrylab-temporal run) takes
// the armed faults and decides the server-side faults of its executions'
// requests; the world's effects are not appended to an imported history.
func TestFaultsOfExecutionsTheHostDoesNotRun(t *testing.T) {
	t.Parallel()
	src := &askedFaults{}
	h, err := engine.Open(engine.Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: testrun.QuickTimeouts(t, fixtures.FS), Faults: src})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	// One armed fault per attempt: the last armed replaces the one before.
	h.Faults().Arm(fault.TimeoutAfterEffect)
	h.Faults().Arm(fault.CrashAfterEffect)
	if got := h.Faults().TakeArmed(); len(got) != 1 || got[0] != fault.CrashAfterEffect {
		t.Fatalf("TakeArmed: %v, want the last armed alone", got)
	}
	if got := h.Faults().Armed(); len(got) != 0 {
		t.Fatalf("armed after TakeArmed: %v", got)
	}

	const exec = "temporal-run1"
	rec, err := history.EncodeExecution(history.Execution{ID: exec, Imported: "temporal", Scenario: "(Temporal workflow)"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Store().Update(func(tx *store.Tx) error { return tx.PutExecution(exec, rec) }); err != nil {
		t.Fatal(err)
	}
	send := func(attempt string) int {
		req, err := http.NewRequest(http.MethodPost, h.Providers().MailURL()+"/v1/send",
			strings.NewReader(`{"to":"jordan@acme.dev","subject":"Your June invoice","body":"…"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(world.HeaderExecution, exec)
		req.Header.Set(world.HeaderStep, "step-4")
		req.Header.Set(world.HeaderAttempt, attempt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("1"); code != http.StatusInternalServerError {
		t.Errorf("attempt 1: HTTP %d, want the source's server error", code)
	}
	if code := send("2"); code/100 != 2 {
		t.Errorf("attempt 2: HTTP %d, want delivered", code)
	}
	if len(src.asked) != 2 || src.asked[0] != exec+"/step-4" {
		t.Errorf("the source was asked %v", src.asked)
	}
	if msgs, err := h.Providers().MessagesFor(exec); err != nil || len(msgs) != 1 {
		t.Errorf("outbox of %s: %v %v", exec, msgs, err)
	}
	if evs, err := h.Events(exec, 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("the imported history gained the host's events: %v %v", evs, err)
	}
	if err := h.Store().Check(); err != nil {
		t.Errorf("database check: %v", err)
	}
}
