package engine

import (
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/retrylab/retrylab/store"
)

// noJournal answers for one execution only, whichever executions' records
// sit beside its own in the journals' key order.
func TestNoJournal(t *testing.T) {
	t.Parallel()
	h, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "retrylab.db"), Scenarios: fstest.MapFS{},
		Executable: "/nonexistent/worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	put := func(exec, step string) {
		t.Helper()
		if err := h.db.Update(func(tx *store.Tx) error { return tx.PutJournal(exec, step, []byte(`{}`)) }); err != nil {
			t.Fatal(err)
		}
	}
	want := func(exec string, none bool) {
		t.Helper()
		got, err := h.noJournal(exec)
		if err != nil || got != none {
			t.Errorf("noJournal(%s) = %v, %v; want %v", exec, got, err, none)
		}
	}
	want("exec_b", true) // no journal at all
	put("exec_c", "step-1")
	put("exec_c", "step-2")
	put("exec_d", "step-1")
	want("exec_a", true) // before every execution with records
	want("exec_b", true)
	want("exec_c", false)
	want("exec_cc", true) // between two that have records
	want("exec_d", false)
	want("exec_e", true) // after them all
	put("exec_b", "step-1#args")
	want("exec_b", false)
}
