package engine_test

import (
	"fmt"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/history"
)

// listReader is a Reader whose list is execs, newest first; the rest of
// Reader is not called.
type listReader struct {
	engine.Reader
	execs []history.Execution
}

func (r listReader) Executions(skip, limit int) ([]history.Execution, int, error) {
	all := r.execs[min(skip, len(r.execs)):]
	return all[:min(limit, len(all))], len(r.execs), nil
}

func imported(n int) []history.Execution {
	out := make([]history.Execution, n)
	for i := range out {
		out[i] = history.Execution{ID: fmt.Sprintf("otlp-%d", i), Imported: "otlp"}
	}
	return out
}

// OnlyImported: a database of imports only (over several pages) is; one
// with a run of retrylab's anywhere in its list is not; an empty one is
// not (runs may start there).
func TestOnlyImported(t *testing.T) {
	withRun := imported(1500)
	withRun[1200].Imported = ""
	for _, c := range []struct {
		name  string
		execs []history.Execution
		want  bool
	}{
		{"imports only", imported(1500), true},
		{"a run far down", withRun, false},
		{"empty", nil, false},
	} {
		got, err := engine.OnlyImported(listReader{execs: c.execs})
		if err != nil || got != c.want {
			t.Errorf("%s: OnlyImported = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// ReadOnly hides every role but the reads, whatever the source can do.
func TestReadOnlyHidesTheRoles(t *testing.T) {
	var l *engine.Local
	ro := engine.ReadOnly(l)
	if _, ok := ro.(engine.Runner); ok {
		t.Error("ReadOnly is a Runner")
	}
	if _, ok := ro.(engine.FaultInjector); ok {
		t.Error("ReadOnly is a FaultInjector")
	}
	if _, ok := ro.(engine.WorldControl); ok {
		t.Error("ReadOnly has WorldControl")
	}
	if _, ok := ro.(interface{ Reset() error }); ok {
		t.Error("ReadOnly can be erased")
	}
}
