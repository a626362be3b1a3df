package execindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
)

var testStatuses = []history.Status{history.StatusRunning, history.StatusCompleted, history.StatusKilled,
	history.StatusFailed, history.StatusEscalated}

func randomExec(rng *rand.Rand, id string) history.Execution {
	scens := []string{"naive", "safe", "gen-crash-resume", "invoice-crm", "Gen-Unsafe"}
	return history.Execution{ID: id, Scenario: scens[rng.IntN(len(scens))],
		Status:     testStatuses[rng.IntN(len(testStatuses))],
		Policy:     history.Policy{Keys: rng.IntN(2) == 0, Journal: rng.IntN(2) == 0},
		Duplicates: rng.IntN(5) == 0,
		Possible:   rng.IntN(6) == 0,
		Imported:   []string{"", "", "", "", "otlp", "temporal"}[rng.IntN(6)]}
}

// brute is the rule applied to every execution, newest first.
func brute(all []history.Execution, q Query, skip, limit int) ([]string, int) {
	var out []string
	total := 0
	for i := len(all) - 1; i >= 0; i-- {
		if q.Match(all[i]) {
			if total >= skip && (limit <= 0 || len(out) < limit) {
				out = append(out, all[i].ID)
			}
			total++
		}
	}
	return out, total
}

var testQueries = []string{"", "  ", "e", "exec_0", "_1", "0", "naive", "NAIVE", "keys", "keys+journal", "none",
	"journal", "comp", "run", "kill", "gen-", "unsafe", "⚠", "!", "dup", "duplicates", "du", "◇", "?", "pos", "Possible", "po", "✓", "●", "☠", "⚑", "✖",
	"zzz", "imported", "otlp", "temporal", "imported · otlp", "\x00", "c_9", "1\x00e", "exec_012", "exec_0123", "exec_01234", "exec_0123"}

// check compares Find with the rule for every test query and a few pages.
func check(t *testing.T, ix *Index, all []history.Execution) {
	t.Helper()
	for _, text := range testQueries {
		q := Parse(text)
		for _, page := range [][2]int{{0, 0}, {0, 10}, {7, 5}, {len(all) - 2, 10}} {
			got, total, err := ix.Find(q, page[0], page[1])
			if err != nil {
				t.Fatal(err)
			}
			want, wantTotal := brute(all, q, page[0], page[1])
			if total != wantTotal || !slices.Equal(got, want) {
				t.Fatalf("query %q page %v: got %d %v, want %d %v", text, page, total, got, wantTotal, want)
			}
		}
	}
}

func TestFindAgreesWithMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ix := New()
	var all []history.Execution
	for i := range 3000 {
		id := fmt.Sprintf("exec_%05d", i)
		x := randomExec(rng, id)
		all = append(all, x)
		if err := ix.Put(x); err != nil {
			t.Fatal(err)
		}
	}
	check(t, ix, all)

	// Updates keep the place; deletions drop it (and compact past 1024).
	for range 500 {
		i := rng.IntN(len(all))
		all[i] = randomExec(rng, all[i].ID)
		if err := ix.Put(all[i]); err != nil {
			t.Fatal(err)
		}
	}
	for range 1500 {
		i := rng.IntN(len(all))
		ix.Delete(all[i].ID)
		all = slices.Delete(all, i, i+1)
	}
	check(t, ix, all)
	if ix.Len() != len(all) {
		t.Fatalf("Len %d, want %d", ix.Len(), len(all))
	}

	// An id that folds differently switches ids to the rule one by one.
	x := randomExec(rng, "EXEC_UPPER_1")
	all = append(all, x)
	if err := ix.Put(x); err != nil {
		t.Fatal(err)
	}
	check(t, ix, all)

	ix.Clear()
	check(t, ix, nil)
}

func TestWatcherQueueAppliesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ix := New()
	var all []history.Execution
	put := func(x history.Execution) {
		data, err := history.EncodeExecution(x)
		if err != nil {
			t.Fatal(err)
		}
		ix.ExecutionPut(x.ID, data)
	}
	for i := range 2500 { // past applyAt: the queue applies itself on the way
		x := randomExec(rng, fmt.Sprintf("run_%04d", i))
		all = append(all, x)
		put(x)
	}
	ix.ExecutionsCleared()
	all = nil
	for i := range 300 {
		x := randomExec(rng, fmt.Sprintf("again_%03d", i))
		all = append(all, x)
		put(x)
	}
	ix.ExecutionDeleted(all[5].ID)
	all = slices.Delete(all, 5, 6)
	all[10].Status = history.StatusCompleted
	put(all[10])
	check(t, ix, all)
}

func TestParse(t *testing.T) {
	x := history.Execution{ID: "exec_ABC", Scenario: "safe", Status: history.StatusKilled, Policy: history.Policy{Keys: true}}
	for text, want := range map[string]bool{"abc": true, " Safe ": true, "kill": true, "keys": true, "journal": false,
		"☠": true, "✓": false, "⚠": false, "dup": false} {
		if got := Parse(text).Match(x); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
	x.Possible = true
	if Parse("☠").Match(x) || !Parse("◇").Match(x) || !Parse("poss").Match(x) || !Parse("?").Match(x) || Parse("dup").Match(x) {
		t.Error("a possible duplicate shows ◇, not its status")
	}
	x.Duplicates = true
	if Parse("☠").Match(x) || !Parse("dupl").Match(x) || Parse("◇").Match(x) {
		t.Error("a duplicate shows ⚠, not its status or ◇")
	}
}

// TestIDsOfEveryCase: ids in upper and mixed case, ids that fold alike,
// long and non-ASCII ids are found by the rule and told apart on update.
func TestIDsOfEveryCase(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ix := New()
	var all []history.Execution
	ids := []string{"exec_ABC", "exec_abc", "Exec_AbC", "exec_" + strings.Repeat("Z", 70), "exec_İstanbul", "exec_ÉTÉ", "exec_été"}
	for i := range 400 {
		ids = append(ids, fmt.Sprintf("exec_%05X", i*7919))
	}
	for _, id := range ids {
		x := randomExec(rng, id)
		all = append(all, x)
		if err := ix.Put(x); err != nil {
			t.Fatal(err)
		}
	}
	check(t, ix, all)
	for _, q := range []string{"abc", "ABC", "z", "istanbul", "i̇stanbul", "été", "ÉTÉ", "exec_0", "5A"} {
		got, total, _ := ix.Find(Parse(q), 0, 0)
		want, wantTotal := brute(all, Parse(q), 0, 0)
		if total != wantTotal || !slices.Equal(got, want) {
			t.Fatalf("%q: got %d %v, want %d %v", q, total, got, wantTotal, want)
		}
	}
	// Updating one of the ids that fold alike changes that one only.
	for i, id := range []string{"exec_abc", "Exec_AbC", "exec_été", "exec_" + strings.Repeat("Z", 70)} {
		k := slices.IndexFunc(all, func(x history.Execution) bool { return x.ID == id })
		all[k].Status = testStatuses[i%len(testStatuses)]
		all[k].Duplicates = !all[k].Duplicates
		if err := ix.Put(all[k]); err != nil {
			t.Fatal(err)
		}
	}
	ix.Delete("exec_ABC")
	all = slices.DeleteFunc(all, func(x history.Execution) bool { return x.ID == "exec_ABC" })
	check(t, ix, all)
	if ix.Len() != len(all) {
		t.Fatalf("Len %d, want %d", ix.Len(), len(all))
	}
}

// TestLoad: ids in creation order, records in another order; an id without
// a record and a record without an id are left out; a change queued while
// the load reads is applied after it.
func TestLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	var all []history.Execution
	for i := range 3000 {
		all = append(all, randomExec(rng, fmt.Sprintf("Exec_%05X", i*31)))
	}
	ix := New()
	later := randomExec(rng, "exec_later")
	err := ix.Load(func(add func([]byte), put func([]byte)) error {
		for _, x := range all {
			add([]byte(x.ID))
		}
		add([]byte("exec_no_record"))
		for i := len(all) - 1; i >= 0; i-- {
			data, err := history.EncodeExecution(all[i])
			if err != nil {
				return err
			}
			put(data)
		}
		stray, _ := history.EncodeExecution(randomExec(rng, "exec_not_in_order"))
		put(stray)
		put([]byte("not json"))
		data, _ := history.EncodeExecution(later)
		ix.ExecutionPut(later.ID, data) // committed while the load reads
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, later)
	check(t, ix, all)
	if ix.Len() != len(all) {
		t.Fatalf("Len %d, want %d", ix.Len(), len(all))
	}
}

// TestQueueWhileFinding: commits queue changes while filters are answered
// on another goroutine; in the end the index holds every change.
func TestQueueWhileFinding(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	ix := New()
	var all []history.Execution
	var data [][]byte
	for i := range 5000 {
		x := randomExec(rng, fmt.Sprintf("exec_%05X", i))
		all = append(all, x)
		d, err := history.EncodeExecution(x)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, d)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, x := range all {
			ix.ExecutionPut(x.ID, data[i])
		}
	}()
	for _, q := range []string{"keys", "⚠", "exec_1", "comp", "keys", "✓", "exec_1"} {
		if _, _, err := ix.Find(Parse(q), 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	check(t, ix, all)
}

// An imported execution ran with no policy retrylab knows: its policy
// column says where it came from, and the filter matches those words, not
// "none" (its zero Policy).
func TestImportedPolicyWords(t *testing.T) {
	otlp := history.Execution{ID: "otlp-1", Scenario: "invoke_agent", Status: history.StatusCompleted, Imported: "otlp"}
	tmp := history.Execution{ID: "temporal-1", Scenario: "OrderWorkflow", Status: history.StatusCompleted, Imported: "temporal"}
	own := history.Execution{ID: "exec_1", Scenario: "naive", Status: history.StatusCompleted}
	if got := otlp.PolicyWords(); got != "imported · otlp" {
		t.Errorf("otlp: %q", got)
	}
	if got := own.PolicyWords(); got != "none" {
		t.Errorf("own: %q", got)
	}
	ix := New()
	all := []history.Execution{otlp, tmp, own}
	for _, x := range all {
		if err := ix.Put(x); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string][]string{
		"none":            {"exec_1"},
		"imported":        {"temporal-1", "otlp-1"},
		"Imported · OTLP": {"otlp-1"},
		"temporal":        {"temporal-1"},
	} {
		got, _, err := ix.Find(Parse(q), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("index, filter %q: %v, want %v", q, got, want)
		}
		if got, _ := brute(all, Parse(q), 0, 0); !slices.Equal(got, want) {
			t.Errorf("rule, filter %q: %v, want %v", q, got, want)
		}
	}
}
