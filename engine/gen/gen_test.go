package gen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/store"
)

func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func generate(t *testing.T, path string, opts gen.Options) gen.Stats {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	st, err := gen.Generate(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestGenerateReadsBack fills a database, then reads it the way the faces
// do: through a Host, and through the Jepsen-style checker, which must find
// the histories and the providers' ledger consistent.
func TestGenerateReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	var progress []gen.Progress
	st := generate(t, path, gen.Options{Executions: 50, AttemptsPerStep: 4, Seed: 7, BatchEvents: 300,
		Progress: func(p gen.Progress) { progress = append(progress, p) }})
	if st.Executions != 50 || st.Attempts < 50 || st.Events < st.Attempts*2 || st.Messages == 0 || st.Journal == 0 || st.CRMWrites == 0 {
		t.Fatalf("stats: %+v", st)
	}
	if len(progress) < 2 || progress[len(progress)-1].Done != 50 {
		t.Fatalf("progress reports: %+v", progress)
	}
	for _, s := range []string{"naive", "safe", "crash", "invoice-crm"} {
		if st.ByShape[s] == 0 {
			t.Errorf("no %s executions in %v", s, st.ByShape)
		}
	}
	for _, s := range []history.Status{history.StatusCompleted, history.StatusKilled} {
		if st.ByStatus[s] == 0 {
			t.Errorf("no %s executions in %v", s, st.ByStatus)
		}
	}

	// The checker reads the file read-only.
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckDB(db, check.Options{})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var buf bytes.Buffer
		rep.Write(&buf, 20)
		t.Fatalf("check fails on generated histories:\n%s", buf.String())
	}

	h, err := engine.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS, Executable: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Store().Check(); err != nil {
		t.Fatal(err)
	}
	list, total, err := h.Executions(0, 0)
	if err != nil || total != 50 || len(list) != 50 {
		t.Fatalf("executions: %d of %d, %v", len(list), total, err)
	}
	var attempts, recorded int64
	var dups int
	for _, x := range list {
		events, err := h.Events(x.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 || events[0].Type != history.ExecutionStarted || events[0].Scenario != x.Scenario {
			t.Fatalf("%s: history starts %+v", x.ID, events[:min(1, len(events))])
		}
		for i, ev := range events {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d has seq %d", x.ID, i, ev.Seq)
			}
			if ev.Type == history.AttemptStarted {
				attempts++
			}
			if ev.Type == history.EffectObserved && ev.Effect.Service == "mail" {
				recorded++
			}
		}
		msgs, err := h.Providers().MessagesFor(x.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Attribution.Execution != x.ID || m.Attribution.Step == "" || m.Attribution.Attempt == 0 {
				t.Fatalf("%s: message %s attributed to %+v", x.ID, m.ID, m.Attribution)
			}
		}
		if x.Scenario == gen.ScenarioPrefix+"naive" && len(msgs) == 2 {
			dups++
			if !x.Duplicates {
				t.Errorf("%s: two messages of one intent, but the record has no duplicate flag", x.ID)
			}
		}
	}
	if attempts != st.Attempts {
		t.Errorf("read %d attempts, generated %d", attempts, st.Attempts)
	}
	// Every delivery is recorded in its execution's history, as the host does.
	if recorded != st.Messages {
		t.Errorf("histories record %d deliveries, the outbox holds %d", recorded, st.Messages)
	}
	if dups == 0 {
		t.Error("no naive execution shows the duplicate send")
	}
	recent, n, err := h.Providers().RecentMessages(10)
	if err != nil || int64(n) != st.Messages || len(recent) != 10 {
		t.Fatalf("recent messages: %d of %d (generated %d), %v", len(recent), n, st.Messages, err)
	}
}

// dump is every key and value a database holds, in order.
func dump(t *testing.T, path string) []byte {
	t.Helper()
	db := openDB(t, path)
	defer db.Close()
	var buf bytes.Buffer
	err := db.View(func(tx *store.Tx) error {
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			// Records as a reader sees them (they are stored compactly).
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Errorf("record of %s: %v", id, err)
			}
			js, _ := json.Marshal(x)
			fmt.Fprintf(&buf, "%s %s\n", id, js)
			_ = tx.Events(id, 0, func(seq uint64, data []byte) bool {
				fmt.Fprintf(&buf, "  %d %s\n", seq, data)
				return true
			})
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []store.Bucket{world.BucketOutbox, world.BucketKeys, world.BucketCRM, world.BucketCRMWrites} {
		err := db.View(func(tx *store.Tx) error {
			return tx.Scan(b, nil, false, func(k, v []byte) bool {
				fmt.Fprintf(&buf, "%s %q %s\n", b, k, v)
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	opts := gen.Options{Executions: 20, AttemptsPerStep: 3, Seed: 42}
	generate(t, filepath.Join(dir, "a.db"), opts)
	opts.BatchEvents = 50 // other transaction boundaries, same content
	generate(t, filepath.Join(dir, "b.db"), opts)
	opts.Seed = 43
	generate(t, filepath.Join(dir, "c.db"), opts)
	a, b, c := dump(t, filepath.Join(dir, "a.db")), dump(t, filepath.Join(dir, "b.db")), dump(t, filepath.Join(dir, "c.db"))
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different databases")
	}
	if bytes.Equal(a, c) {
		t.Error("another seed gave the same database")
	}
}

func TestGenerateRefusesToOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	opts := gen.Options{Executions: 3, AttemptsPerStep: 1, Seed: 1}
	generate(t, path, opts)
	db := openDB(t, path)
	defer db.Close()
	if _, err := gen.Generate(context.Background(), db, opts); !errors.Is(err, gen.ErrExists) {
		t.Fatalf("generating the same seed again: %v, want ErrExists", err)
	}
	opts.Seed = 2
	if _, err := gen.Generate(context.Background(), db, opts); err != nil {
		t.Fatalf("another seed into the same database: %v", err)
	}
}

func TestGenerateOptions(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "gen.db"))
	defer db.Close()
	if _, err := gen.Generate(context.Background(), db, gen.Options{Executions: 1}); err == nil {
		t.Error("zero attempts per step accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gen.Generate(ctx, db, gen.Options{Executions: 5, AttemptsPerStep: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestCached(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	opts := gen.Options{Executions: 4, AttemptsPerStep: 2, Seed: 3, Progress: func(gen.Progress) { calls++ }}
	p1, st1, err := gen.Cached(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := calls
	p2, st2, err := gen.Cached(context.Background(), dir, opts)
	if err != nil || p2 != p1 {
		t.Fatalf("second call: %q, %v; first gave %q", p2, err, p1)
	}
	if st1.Executions != 4 || st2.Attempts != st1.Attempts || st2.Events != st1.Events {
		t.Errorf("stats: generated %+v, cached %+v", st1, st2)
	}
	if first == 0 || calls != first {
		t.Errorf("progress calls: %d on the first call, %d in all; want the second call to reuse the file", first, calls)
	}
	opts.Seed = 4
	if p3, _, err := gen.Cached(context.Background(), dir, opts); err != nil || p3 == p1 {
		t.Fatalf("another seed: %q, %v", p3, err)
	}
	if got := dump(t, p1); !bytes.Contains(got, []byte(gen.ScenarioPrefix)) {
		t.Error("the cached database holds no generated executions")
	}
}
