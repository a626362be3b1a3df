package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const compactHelperEnv = "RETRYLAB_STORE_COMPACT_HELPER_DB"

// fillForCompact writes what a bulk writer leaves: histories, records
// under random ids, a nested journal, a sequence-keyed collection, some
// of it deleted and rewritten, so pages are freed and half full.
func fillForCompact(t testing.TB, path string, n int) {
	t.Helper()
	db := openDB(t, path, Options{NoSync: true})
	rng := rand.New(rand.NewPCG(5, 6))
	for b := 0; b < n; b += 50 {
		err := db.Update(func(tx *Tx) error {
			for i := b; i < b+50 && i < n; i++ {
				exec := fmt.Sprintf("exec_%08x", rng.Uint32())
				if err := tx.PutExecution(exec, payload(exec, uint64(i), 100+rng.IntN(200))); err != nil {
					return err
				}
				for range 5 + rng.IntN(10) {
					if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return eventLike(seq), nil }); err != nil {
						return err
					}
				}
				if err := tx.PutJournal(exec, "step-1", payload(exec, 0, 80)); err != nil {
					return err
				}
				if _, err := tx.Append("outbox", func(seq uint64) ([]byte, error) { return payload("o", seq, 120), nil }); err != nil {
					return err
				}
				if err := tx.Put("keys", payload(exec, 1, 12), payload(exec, 2, 150)); err != nil {
					return err
				}
				if i%7 == 0 {
					if err := tx.DeleteExecution(exec); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// dump is everything a database holds, as text: every collection's keys
// and values (histories read through Events), and their sequences.
func dump(t testing.TB, path string) string {
	t.Helper()
	db := openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	var b strings.Builder
	err := db.View(func(tx *Tx) error {
		fmt.Fprintf(&b, "executions %d\n", tx.ExecutionCount())
		if err := tx.Executions(false, 0, func(id string, rec []byte) bool {
			fmt.Fprintf(&b, "%s %x\n", id, rec)
			_ = tx.Events(id, 0, func(seq uint64, data []byte) bool {
				fmt.Fprintf(&b, "  %d %x\n", seq, data)
				return true
			})
			return true
		}); err != nil {
			return err
		}
		if err := tx.JournalEntries(func(exec, step string, rec []byte) bool {
			fmt.Fprintf(&b, "journal %s %s %x\n", exec, step, rec)
			return true
		}); err != nil {
			return err
		}
		for _, name := range []Bucket{"outbox", "keys", Active} {
			fmt.Fprintf(&b, "%s sequence %d\n", name, tx.Sequence(name))
			if err := tx.Scan(name, nil, false, func(k, v []byte) bool {
				fmt.Fprintf(&b, "  %x %x\n", k, v)
				return true
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// unsealed counts the chunks of execs' histories in the file at path that
// are not stored sealed, and all of them.
func unsealed(t *testing.T, path string, execs ...string) (n, all int) {
	t.Helper()
	db := openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	for _, exec := range execs {
		_, values := storedChunks(t, db, exec)
		for _, v := range values {
			if all++; form(t, v) != "sealed" {
				n++
			}
		}
	}
	return n, all
}

// historyText is execs' events in the file at path, as text.
func historyText(t *testing.T, path string, execs ...string) string {
	t.Helper()
	db := openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	var b strings.Builder
	for _, exec := range execs {
		seqs, data := readAll(t, db, exec, 0)
		for i, seq := range seqs {
			fmt.Fprintf(&b, "%s %d %x\n", exec, seq, data[i])
		}
	}
	return b.String()
}

// unfinishedAndOld adds to the file at path what compaction seals: the
// growing tail of an execution that never finished (listed in Active) and
// a plain chunk as an older build wrote it.
func unfinishedAndOld(t *testing.T, path string) {
	t.Helper()
	db := openDB(t, path, Options{})
	err := db.Update(func(tx *Tx) error {
		for range 20 {
			if _, err := tx.AppendEvent("unfinished", func(seq uint64) ([]byte, error) { return eventLike(seq), nil }); err != nil {
				return err
			}
		}
		if err := tx.Put(Active, []byte("unfinished"), []byte("killed")); err != nil {
			return err
		}
		events, prefix, err := tx.historyPrefix("old", true)
		if err != nil {
			return err
		}
		var plain []byte
		for seq := uint64(1); seq <= 3; seq++ {
			plain = binary.AppendUvarint(plain, uint64(len(eventLike(seq))))
			plain = append(plain, eventLike(seq)...)
		}
		// Followed by its sum, as a writer's open of the older file
		// leaves it.
		return events.Put(appendSeqKey(prefix, 1), appendChunkSum(clone(plain), 0))
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// CompactAndClose leaves the same content in a smaller file of mode 0600
// that a writer opens and appends to, and no temporary file; the tail of an
// execution that never finished and an older build's plain chunk are
// sealed in it.
func TestCompactAndClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "retrylab.db")
	fillForCompact(t, path, 600)
	unfinishedAndOld(t, path)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := dump(t, path)
	if n, all := unsealed(t, path, "unfinished", "old"); n != 2 {
		t.Fatalf("before compaction %d of %d chunks unsealed, want the tail and the plain chunk", n, all)
	}
	wantEvents := historyText(t, path, "unfinished", "old")
	db := openDB(t, path, Options{})
	if err := db.CompactAndClose(); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(*Tx) error { return nil }); err != ErrClosed {
		t.Errorf("Update after CompactAndClose: %v, want ErrClosed", err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode().Perm() != 0o600 {
		t.Errorf("compacted file has mode %v", after.Mode().Perm())
	}
	if after.Size()*3 > before.Size()*2 {
		t.Errorf("compacting %d bytes left %d", before.Size(), after.Size())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
	if got := dump(t, path); got != want {
		t.Fatalf("compacted content differs:\n%s", firstLineDiff(got, want))
	}
	if n, all := unsealed(t, path, "unfinished", "old"); n != 0 {
		t.Errorf("after compaction %d of %d chunks unsealed", n, all)
	}
	if got := historyText(t, path, "unfinished", "old"); got != wantEvents {
		t.Errorf("sealed histories read differently:\n%s", firstLineDiff(got, wantEvents))
	}
	db = openDB(t, path, Options{})
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if seqs := appendEvents(t, db, "new", 2); seqs[1] != 2 {
		t.Fatalf("append after compaction: %v", seqs)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// TestHelperCompactor is not a test: TestKillDuringCompaction runs the test
// binary again with only this function selected and compactHelperEnv set.
func TestHelperCompactor(t *testing.T) {
	path := os.Getenv(compactHelperEnv)
	if path == "" {
		t.Skip("helper process for TestKillDuringCompaction")
	}
	db, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper open:", err)
		os.Exit(3)
	}
	fmt.Println("compacting")
	if err := db.CompactAndClose(); err != nil {
		fmt.Fprintln(os.Stderr, "helper compact:", err)
		os.Exit(4)
	}
	os.Exit(0)
}

// TestKillDuringCompaction kills a compacting process with SIGKILL at
// random moments: the file under the name always opens, passes the check
// and holds everything it held.
func TestKillDuringCompaction(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "retrylab.db")
	fillForCompact(t, path, 3000)
	want := dump(t, path)
	rng := rand.New(rand.NewPCG(20261201, 3))
	finished := 0
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCompactor$", "-test.count=1")
		cmd.Env = append(os.Environ(), compactHelperEnv+"="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The helper's start-up takes some milliseconds, the compaction
		// some tens: kills land before, during and after it.
		time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			if err != nil {
				t.Fatalf("round %d: helper failed: %v: %s", round, err, stderr.String())
			}
			finished++
		}
		db, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: open after the kill: %v", round, err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("round %d: check after the kill: %v", round, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, path); got != want {
			t.Fatalf("round %d: content after the kill differs:\n%s", round, firstLineDiff(got, want))
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("round %d: %v, %v", round, info.Mode(), err)
		}
	}
	t.Logf("6 rounds, %d ran to the end", finished)
	// One more, to the end: it removes what killed ones left.
	db := openDB(t, path, Options{})
	if err := db.CompactAndClose(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
}
