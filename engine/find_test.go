package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/execindex"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// scanFind is the filter's rule applied to every record, newest first.
func scanFind(t *testing.T, h *engine.Host, query string) ([]string, int) {
	t.Helper()
	all, _, err := h.Executions(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	q := execindex.Parse(query)
	var ids []string
	for _, x := range all {
		if q.Match(x) {
			ids = append(ids, x.ID)
		}
	}
	return ids, len(ids)
}

func findIDs(t *testing.T, h *engine.Host, query string, skip, limit int) ([]string, int) {
	t.Helper()
	list, total, err := h.FindExecutions(query, skip, limit)
	if err != nil {
		t.Fatalf("find %q: %v", query, err)
	}
	ids := make([]string, len(list))
	for i, x := range list {
		ids[i] = x.ID
	}
	return ids, total
}

// TestFindExecutionsFollowsTheStore: the host's index answers filters as
// the rule does over the records, on a generated database and after runs
// and a reset change the records.
func TestFindExecutionsFollowsTheStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "retrylab.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(context.Background(), db, gen.Options{Executions: 200, AttemptsPerStep: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	h := openHostAt(t, path, nil)
	h.IndexExecutions()
	queries := []string{"gen-", "naive", "keys", "none", "complet", "escal", "exec", "0", "dup", "⚠", "✓", "✖", "⚑", "nothing-like-it"}
	agree := func(when string) {
		t.Helper()
		for _, q := range queries {
			want, wantTotal := scanFind(t, h, q)
			got, total := findIDs(t, h, q, 0, 0)
			if total != wantTotal || !slices.Equal(got, want) {
				t.Fatalf("%s: %q: index %d %v, records %d %v", when, q, total, got, wantTotal, want)
			}
			if wantTotal > 3 {
				page, _ := findIDs(t, h, q, 2, 2)
				if !slices.Equal(page, want[2:4]) {
					t.Fatalf("%s: %q page 2+2: %v, want %v", when, q, page, want[2:4])
				}
			}
		}
	}
	agree("generated")

	// A second process's explorer asks the host over the control API.
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.IndexExecutions() // built already: nothing to do
	for _, q := range []string{"keys", "⚠", ""} {
		want, wantTotal := findIDs(t, h, q, 3, 5)
		list, total, err := c.FindExecutions(q, 3, 5)
		if err != nil {
			t.Fatalf("client find %q: %v", q, err)
		}
		got := make([]string, len(list))
		for i, x := range list {
			got[i] = x.ID
		}
		if total != wantTotal || !slices.Equal(got, want) {
			t.Fatalf("client %q: %d %v, host %d %v", q, total, got, wantTotal, want)
		}
	}

	p := start(t, h, "naive")
	id := p.run.Execution
	agree("after a run")
	if got, total := findIDs(t, h, id, 0, 0); total != 1 || got[0] != id {
		t.Fatalf("the new execution by its id: %d %v", total, got)
	}
	x, err := h.Execution(id)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := findIDs(t, h, string(x.Status), 0, 1); len(got) != 1 || got[0] != id {
		t.Fatalf("the newest %s execution is the run's: %v", x.Status, got)
	}
	if x.Status != history.StatusCompleted {
		t.Fatalf("naive ends %s", x.Status)
	}

	// Newer runs, then naive's execution run again: it is listed first,
	// by the index as by the store (the list is by last activity).
	start(t, h, "safe")
	if again := restart(t, h, "naive").run.Execution; again != id {
		t.Fatalf("naive ran again as %s, not %s", again, id)
	}
	agree("after naive ran again")
	if got, _ := findIDs(t, h, "", 0, 1); len(got) != 1 || got[0] != id {
		t.Fatalf("the list's first after naive ran again: %v, want %s", got, id)
	}

	if err := h.Reset(); err != nil {
		t.Fatal(err)
	}
	if got, total := findIDs(t, h, "e", 0, 0); total != 0 {
		t.Fatalf("after a reset: %d %v", total, got)
	}
}
