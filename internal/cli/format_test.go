package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// TestOpensADatabaseOfTheFirstEncoding opens testdata/v1/retrylab.db, written
// by retrylab before events had a compact encoding (every event a JSON
// object): naive, safe, invoice-crm and crash with their resumes, and 12
// generated executions. Everything the build of that time printed about it
// (testdata/v1: show --json of every execution, check, state --json) must
// come out the same, and new runs must append to it.
func TestOpensADatabaseOfTheFirstEncoding(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v1")
}

// TestOpensADatabaseOfTheSecondLayout opens testdata/v2/retrylab.db, written
// by retrylab as of 8ac4e1f (schema v2: compact events, each execution's
// history in a bucket of its own), the same runs as v1. It must read and
// print as that build did, and a new run must append to the old history.
func TestOpensADatabaseOfTheSecondLayout(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v2")
}

// TestOpensADatabaseOfTheFourthLayout opens testdata/v4/retrylab.db, written
// by retrylab as of c610b32 (schema v4: every history in history_events, in
// chunks of plain compact events; execution records as JSON), the same runs
// as v1 (gen's part with that build's generator). It must read and print as
// that build did, and a new run must append to the old history.
func TestOpensADatabaseOfTheFourthLayout(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v4")
}

// TestOpensADatabaseOfTheFifthLayout opens testdata/v5/retrylab.db, written
// by retrylab as of 2c58fbe (schema v5: compressed history chunks, every
// history's last chunk among its chunks in history_events): naive, safe,
// invoice-crm with its resume, gen --executions 12 --seed 3, then crash,
// left killed, so exec_9F1Z's last chunk is a growing tail in
// history_events. It must read and print as that build did; a new run must
// append to an old history, and resuming exec_9F1Z must append to its tail.
func TestOpensADatabaseOfTheFifthLayout(t *testing.T) {
	t.Parallel()
	if all, unsealed := unsealedHistories(t, filepath.Join(repoRoot, "testdata", "v5", "retrylab.db")); all != 16 || unsealed != 1 {
		t.Fatalf("testdata/v5: %d of %d histories unsealed, want 1 of 16", unsealed, all)
	}
	opensOldDatabase(t, "v5")
	db := copyOldDatabase(t, "v5")
	var before, after struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(printedBy(t, "v5")("show/exec_9F1Z.json")), &before); err != nil {
		t.Fatal(err)
	}
	ok(t, db, "resume", "exec_9F1Z")
	if err := json.Unmarshal([]byte(ok(t, db, "show", "--json", "exec_9F1Z").stdout), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Events) <= len(before.Events) || !reflect.DeepEqual(after.Events[:len(before.Events)], before.Events) {
		t.Fatalf("exec_9F1Z resumed: %d events, the old %d not kept as they were", len(after.Events), len(before.Events))
	}
	if last := after.Events[len(after.Events)-1]; last["type"] != "ExecutionCompleted" {
		t.Errorf("the resumed run's last event: %v", last)
	}
	has(t, ok(t, db, "check"), "16 executions", "verdict: PASS")
}

// TestOpensADatabaseOfTheSixthLayout opens testdata/v6/retrylab.db,
// written by retrylab as of a00ffdb (schema v6: growing tails in
// history_tails; records stored without checksums): naive, safe,
// invoice-crm with its resume, gen --executions 12 --seed 3, then crash,
// left killed. It must read and print as that build did, read-only
// (records read as they are) and after a writer's open has sealed every
// record with its checksum (schema v7), and a new run must append to an
// old history.
func TestOpensADatabaseOfTheSixthLayout(t *testing.T) {
	t.Parallel()
	opensOldDatabase(t, "v6")
	db := copyOldDatabase(t, "v6")
	s, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	printsAsBefore(t, db, "v6", 16)
}

// opensOldDatabase checks a copy of testdata/<dir>/retrylab.db against what
// the build that wrote it printed, then appends a run to one of its
// executions and checks the whole file again.
func opensOldDatabase(t *testing.T, dir string) {
	t.Helper()
	db := copyOldDatabase(t, dir)
	golden := printedBy(t, dir)
	printsAsBefore(t, db, dir, 16)

	// New events join the old ones: naive --restart runs exec_7K2Q again
	// (run 2); without --restart a second run is a new execution.
	ok(t, db, "run", "naive", "--restart")
	var before, after struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(golden("show/exec_7K2Q.json")), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ok(t, db, "show", "--json", "exec_7K2Q").stdout), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Events) <= len(before.Events) || !reflect.DeepEqual(after.Events[:len(before.Events)], before.Events) {
		t.Fatalf("exec_7K2Q after a new run: %d events, the old %d not kept as they were", len(after.Events), len(before.Events))
	}
	if last := after.Events[len(after.Events)-1]; last["type"] != "ExecutionCompleted" || last["run"] != float64(2) {
		t.Errorf("the new run's last event: %v", last)
	}
	has(t, ok(t, db, "check"), "16 executions", "verdict: PASS")
}

// copyOldDatabase copies testdata/<dir>/retrylab.db to a temporary file,
// for a test to open and write to.
func copyOldDatabase(t *testing.T, dir string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", dir, "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return db
}

// printedBy reads what the build that wrote testdata/<dir>/retrylab.db
// printed about it: the files beside it.
func printedBy(t *testing.T, dir string) func(name string) string {
	return func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(repoRoot, "testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// printsAsBefore checks that this build prints about db what the build
// that wrote testdata/<dir>/retrylab.db printed about it: show --json of
// each of its executions (shows of them; -1: any number), check and state
// --json.
func printsAsBefore(t *testing.T, db, dir string, shows int) {
	t.Helper()
	golden := printedBy(t, dir)
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata", dir, "show", "*.json"))
	if err != nil || shows >= 0 && len(files) != shows {
		t.Fatalf("%d shows in testdata/%s/show (%v)", len(files), dir, err)
	}
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if got, want := ok(t, db, "show", "--json", id).stdout, golden(filepath.Join("show", id+".json")); got != want {
			t.Errorf("show --json %s differs from what the %s build printed:\n%s", id, dir, firstDiff(got, want))
		}
	}
	if _, rest, _ := strings.Cut(ok(t, db, "check").stdout, "\n"); rest != golden("check.txt") {
		t.Errorf("check differs:\n%s", firstDiff(rest, golden("check.txt")))
	}
	if got, want := ok(t, db, "state", "--json").stdout, expiredNow(golden("state.json"), time.Now()); got != want {
		t.Errorf("state --json differs:\n%s", firstDiff(got, want))
	}
}

// expiresLine is a key's expiry in state --json, and the line after it,
// whether it has expired by the world clock as the command reads it.
var expiresLine = regexp.MustCompile(`("expires": "([^"]+)",\n\s*"expired": )(true|false)`)

// expiredNow is what state --json printed when the database was written,
// with each key's "expired" as of now: it is read against the wall
// clock, and the keys of a database written a day ago have expired since.
func expiredNow(state string, now time.Time) string {
	return expiresLine.ReplaceAllStringFunc(state, func(m string) string {
		sub := expiresLine.FindStringSubmatch(m)
		expires, err := time.Parse(time.RFC3339Nano, sub[2])
		if err != nil {
			return m
		}
		return sub[1] + strconv.FormatBool(!now.Before(expires))
	})
}

// firstDiff shows where two texts part.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

// TestNewLayoutPrintsAsTheOld writes what testdata/v4/retrylab.db holds into
// a new database through this build's store (execution records in their
// compact encoding, every history in compressed chunks, sealed but for
// the last chunk of every other execution, left as a running execution's
// growing tail is stored; the other
// collections copied as they are) and checks that show --json of every
// execution, check and state --json print what the build that wrote v4
// printed, and show, show --markdown, diff and export what this build prints
// of the v4 file: the new layout changes how histories and records are
// stored, never what a reader gets.
func TestNewLayoutPrintsAsTheOld(t *testing.T) {
	t.Parallel()
	src := filepath.Join(repoRoot, "testdata", "v4", "retrylab.db")
	dst := filepath.Join(t.TempDir(), "retrylab.db")
	ours := map[string]bool{"executions": true, "exec_order": true, "history_ids": true, "history_events": true,
		"histories": true}

	// The collections this change does not touch, byte for byte.
	from, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	to, err := bolt.Open(dst, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var copyBucket func(dst, src *bolt.Bucket) error
	copyBucket = func(dst, src *bolt.Bucket) error {
		if err := dst.SetSequence(src.Sequence()); err != nil {
			return err
		}
		return src.ForEach(func(k, v []byte) error {
			if v != nil {
				return dst.Put(k, v)
			}
			nested, err := dst.CreateBucket(k)
			if err != nil {
				return err
			}
			return copyBucket(nested, src.Bucket(k))
		})
	}
	err = from.View(func(ftx *bolt.Tx) error {
		return to.Update(func(ttx *bolt.Tx) error {
			return ftx.ForEach(func(name []byte, b *bolt.Bucket) error {
				if ours[string(name)] {
					return nil
				}
				nb, err := ttx.CreateBucket(name)
				if err != nil {
					return err
				}
				if err := copyBucket(nb, b); err != nil {
					return err
				}
				if string(name) == "meta" {
					// PutExecution counts the executions again.
					return nb.Delete([]byte("exec_count"))
				}
				return nil
			})
		})
	})
	if err := errors.Join(err, from.Close(), to.Close()); err != nil {
		t.Fatal(err)
	}

	// Executions, in their order, and their histories, event by event.
	old, err := store.Open(src, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	db, err := store.Open(dst, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = old.View(func(otx *store.Tx) error {
		return db.Update(func(tx *store.Tx) error {
			var failed error
			n := 0
			err := otx.ExecutionOrder(func(id []byte) bool {
				exec := string(id)
				x, err := history.DecodeExecution(otx.Execution(exec))
				if err != nil {
					failed = err
					return false
				}
				rec, err := history.EncodeExecution(x)
				if err == nil {
					err = tx.PutExecution(exec, rec)
				}
				if err == nil {
					err = otx.Events(exec, 0, func(seq uint64, data []byte) bool {
						var got uint64
						got, err = tx.AppendEvent(exec, func(uint64) ([]byte, error) { return data, nil })
						if err == nil && got != seq {
							err = fmt.Errorf("%s: event %d appended as %d", exec, seq, got)
						}
						return err == nil
					})
				}
				if n++; err == nil && n%2 == 1 {
					err = tx.SealHistory(exec)
				}
				failed = err
				return err == nil
			})
			return errors.Join(err, failed)
		})
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}

	// Every record and every chunk is in the new form: compressed, sealed
	// but for the tails of the 8 executions not sealed.
	b, err := bolt.Open(dst, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	records, chunks := 0, 0
	err = b.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("executions")).ForEach(func(k, v []byte) error {
			if records++; v[0] != 0xC2 {
				return fmt.Errorf("record of %s stored as %.20q", k, v)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("history_events")).ForEach(func(k, v []byte) error {
			if chunks++; v[0] != 0 {
				return fmt.Errorf("chunk %x stored plain", k)
			}
			return nil
		}); err != nil {
			return err
		}
		// Growing tails (schema v6): their first sequence number, then the chunk.
		return tx.Bucket([]byte("history_tails")).ForEach(func(k, v []byte) error {
			if chunks++; len(v) < 2+int(v[0]) || v[1+int(v[0])] != 0 {
				return fmt.Errorf("tail of %x stored plain", k)
			}
			return nil
		})
	})
	if err := errors.Join(err, b.Close()); err != nil {
		t.Fatal(err)
	}
	if records != 16 || chunks < 16 {
		t.Fatalf("%d records, %d chunks", records, chunks)
	}
	if all, unsealed := unsealedHistories(t, dst); all != 16 || unsealed < 1 || unsealed > 8 {
		t.Fatalf("%d of %d histories unsealed, want 1 to 8", unsealed, all)
	}

	printsAsBefore(t, dst, "v4", -1)

	// The other readers, against what this build prints of the v4 file
	// (which TestOpensADatabaseOfTheFourthLayout holds to the v4 build):
	// show as text and Markdown, diff, and the OTLP export.
	v4 := copyOldDatabase(t, "v4")
	shows, _ := filepath.Glob(filepath.Join(repoRoot, "testdata", "v4", "show", "*.json"))
	same := func(args ...string) {
		t.Helper()
		if got, want := ok(t, dst, args...).stdout, ok(t, v4, args...).stdout; got != want {
			t.Errorf("%s differs on the new layout:\n%s", strings.Join(args, " "), firstDiff(got, want))
		}
	}
	for _, f := range shows {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		same("show", id)
		same("show", "--markdown", id)
	}
	same("diff", "exec_7K2Q", "exec_01H8")
	same("diff", "--json", "exec_3C5R", "exec_R1BP51TN")
	exported := func(db string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "otlp.json")
		ok(t, db, "export", "--otlp", out)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := exported(dst), exported(v4); got != want {
		t.Errorf("export --otlp differs on the new layout:\n%s", firstDiff(got, want))
	}
}
