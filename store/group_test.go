package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many goroutines appending at once: every event lands exactly once and each
// execution's sequence is contiguous, whatever the grouping.
func TestGroupCommitConcurrentAppends(t *testing.T) {
	t.Parallel()
	for _, maxBatch := range []int{0, 4} {
		t.Run(fmt.Sprintf("MaxBatch=%d", maxBatch), func(t *testing.T) {
			db := openDB(t, filepath.Join(t.TempDir(), "group.db"), Options{MaxBatch: maxBatch})
			const workers, perWorker = 64, 50
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					exec := fmt.Sprintf("w%02d", w)
					<-start
					for i := range perWorker {
						var got uint64
						err := db.Update(func(tx *Tx) error {
							seq, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
								return payload(exec, seq, 64), nil
							})
							got = seq
							return err
						})
						if err != nil {
							errs <- fmt.Errorf("%s append %d: %w", exec, i, err)
							return
						}
						if got != uint64(i+1) {
							errs <- fmt.Errorf("%s append %d got seq %d", exec, i, got)
							return
						}
					}
				}()
			}
			began := time.Now()
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			t.Logf("%d updates in %v", workers*perWorker, time.Since(began))

			err := db.View(func(tx *Tx) error {
				for w := range workers {
					exec := fmt.Sprintf("w%02d", w)
					var n uint64
					if err := tx.Events(exec, 0, func(seq uint64, data []byte) bool {
						n++
						if seq != n || !bytes.Equal(data, payload(exec, seq, 64)) {
							t.Errorf("%s: event %d is seq %d", exec, n, seq)
						}
						return true
					}); err != nil {
						return err
					}
					if n != perWorker || tx.LastSeq(exec) != perWorker {
						t.Errorf("%s has %d events (LastSeq %d), want %d", exec, n, tx.LastSeq(exec), perWorker)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitQueued blocks the committer inside an Update until n more requests
// are queued, so that they are all drained into one group.
func waitQueued(db *DB, n int) error {
	deadline := time.Now().Add(5 * time.Second)
	for queued(db) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d requests queued", queued(db), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// queued counts the requests waiting for the commit in progress.
func queued(db *DB) int {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	return len(db.queue)
}

// One member of a group fails: it alone gets the error, the group is rolled
// back and every other member commits exactly once.
func TestGroupCommitOneFailure(t *testing.T) {
	db, _ := newDB(t)
	const members, failing = 24, 9
	boom := errors.New("member failed on purpose")
	for round := range 5 {
		// Hold the committer in a blocker Update until every member is queued;
		// then they join the blocker's transaction (or, before groups grew
		// while built, formed the next group). The assertions below hold
		// whether or not they share a commit. The blocker, rolled back with
		// the group, runs again alone, as any member may: it waits only once.
		blocking := make(chan struct{})
		blockerDone := make(chan error, 1)
		go func() {
			first := true
			blockerDone <- db.Update(func(*Tx) error {
				if !first {
					return nil
				}
				first = false
				close(blocking)
				return waitQueued(db, members)
			})
		}()
		<-blocking

		var runs [members]atomic.Int32
		results := make([]error, members)
		var wg sync.WaitGroup
		for m := range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				exec := fmt.Sprintf("r%d-m%02d", round, m)
				results[m] = db.Update(func(tx *Tx) error {
					runs[m].Add(1)
					if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) {
						return payload(exec, seq, 32), nil
					}); err != nil {
						return err
					}
					if m == failing {
						return fmt.Errorf("round %d: %w", round, boom)
					}
					return tx.PutExecution(exec, []byte("ok"))
				})
			}()
		}
		wg.Wait()
		if err := <-blockerDone; err != nil {
			t.Fatalf("blocker: %v", err)
		}

		reran := 0
		for m := range members {
			n := runs[m].Load()
			if m == failing {
				if !errors.Is(results[m], boom) {
					t.Errorf("round %d: failing member got %v, want %v", round, results[m], boom)
				}
				if n != 1 {
					t.Errorf("round %d: failing member ran %d times, want 1", round, n)
				}
				continue
			}
			if results[m] != nil {
				t.Errorf("round %d: member %d got %v", round, m, results[m])
			}
			if n < 1 || n > 2 {
				t.Errorf("round %d: member %d ran %d times, want 1 or 2", round, m, n)
			}
			if n == 2 {
				reran++
			}
		}
		t.Logf("round %d: %d members ran in the failed group and again alone", round, reran)

		err := db.View(func(tx *Tx) error {
			for m := range members {
				exec := fmt.Sprintf("r%d-m%02d", round, m)
				want := uint64(1)
				if m == failing {
					want = 0
				}
				if got := tx.LastSeq(exec); got != want {
					t.Errorf("round %d: %s has %d events, want %d", round, exec, got, want)
				}
				if (tx.Execution(exec) != nil) != (m != failing) {
					t.Errorf("round %d: %s record present = %v", round, exec, tx.Execution(exec) != nil)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := execCount(t, db); got != 5*(members-1) {
		t.Fatalf("ExecutionCount = %d, want %d", got, 5*(members-1))
	}
}

// Updates racing with Close either commit (and are durable) or get ErrClosed.
func TestUpdateRacingClose(t *testing.T) {
	db, path := newDB(t)
	const workers = 16
	var committed [workers]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := fmt.Sprintf("c%02d", w)
			for {
				_, err := appendOne(db, exec)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("%s: %v", exec, err)
					return
				}
				committed[w].Add(1)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	db = openDB(t, path, Options{})
	for w := range workers {
		exec := fmt.Sprintf("c%02d", w)
		if got, want := tx1LastSeq(t, db, exec), uint64(committed[w].Load()); got != want {
			t.Errorf("%s: %d events stored, %d acknowledged", exec, got, want)
		}
	}
}

// Check runs safely while commits are in flight (run with -race).
func TestCheckDuringWrites(t *testing.T) {
	db, _ := newDB(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := fmt.Sprintf("k%d", w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := appendOne(db, exec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for tx1LastSeq(t, db, "k0") < 5 { // writers are running
		time.Sleep(time.Millisecond)
	}
	checks := 0
	for deadline := time.Now().Add(150 * time.Millisecond); time.Now().Before(deadline); checks++ {
		if err := db.Check(); err != nil {
			t.Errorf("Check during writes: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d checks, %d appends meanwhile", checks, tx1LastSeq(t, db, "k0"))
}
