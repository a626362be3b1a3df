package store

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	helperEnv     = "RETRYLAB_STORE_HELPER_DB"
	helperWorkers = 4
)

// TestHelperWriter is not a test: TestKillDuringWrites runs the test binary
// again with only this function selected and helperEnv set. It appends
// events from several goroutines until killed, printing "exec seq" on stdout
// after each Update has returned.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestKillDuringWrites")
	}
	db, err := Open(path, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper open:", err)
		os.Exit(3)
	}
	deadline := time.Now().Add(20 * time.Second) // in case the parent is gone
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range helperWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := fmt.Sprintf("w%d", w)
			for time.Now().Before(deadline) {
				seq, err := appendOne(db, exec)
				if err != nil {
					fmt.Fprintln(os.Stderr, "helper append:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%s %d\n", exec, seq) // one write per line
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	db.Close()
	os.Exit(0)
}

// TestKillDuringWrites kills a writing process with SIGKILL at a random
// moment, five times over one file, and checks that the file is consistent
// and holds every event the writer had seen acknowledged.
func TestKillDuringWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "killed.db")
	rng := rand.New(rand.NewPCG(20240601, 7))
	acked := map[string]uint64{} // highest acknowledged seq per execution
	began := time.Now()
	for round := range 5 {
		wait := time.Duration(50+rng.IntN(251)) * time.Millisecond
		lines := runAndKill(t, path, wait)
		for _, line := range lines {
			var exec string
			var seq uint64
			if _, err := fmt.Sscanf(line, "%s %d", &exec, &seq); err != nil {
				t.Fatalf("round %d: bad line %q", round, line)
			}
			acked[exec] = max(acked[exec], seq)
		}
		t.Logf("round %d: killed after %v, %d acknowledged appends", round, wait, len(lines))

		db, err := Open(path, Options{LockTimeout: time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		if err := db.Check(); err != nil {
			t.Errorf("round %d: Check after kill: %v", round, err)
		}
		err = db.View(func(tx *Tx) error {
			for w := range helperWorkers {
				exec := fmt.Sprintf("w%d", w)
				var n uint64
				if err := tx.Events(exec, 0, func(seq uint64, data []byte) bool {
					n++
					if seq != n || !bytes.Equal(data, payload(exec, seq, 200)) {
						t.Errorf("round %d: %s event %d has seq %d", round, exec, n, seq)
					}
					return true
				}); err != nil {
					return err
				}
				// Events past the last acknowledged one may exist (committed
				// but not yet printed); acknowledged ones must all be there.
				if n < acked[exec] {
					t.Errorf("round %d: %s has %d events but %d were acknowledged", round, exec, n, acked[exec])
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("round %d: %v", round, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("5 kills in %v", time.Since(began))
}

// runAndKill starts the helper writer on path, waits for its first
// acknowledgement, lets it run for d, kills it and returns the complete
// lines it printed.
func runAndKill(t *testing.T, path string, d time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // EOF after the kill; a partial last line is dropped
			}
			if strings.HasPrefix(line, "w") {
				if lines = append(lines, strings.TrimSpace(line)); len(lines) == 1 {
					close(first)
				}
			}
		}
	}()
	select {
	case <-first:
	case <-readDone:
		cmd.Wait()
		t.Fatalf("helper exited before writing: %s", stderr.String())
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper wrote nothing in 10s: %s", stderr.String())
	}
	time.Sleep(d)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-readDone
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper was not killed by SIGKILL: %v; stderr: %s", err, stderr.String())
	}
	return lines
}
