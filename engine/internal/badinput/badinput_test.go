package badinput_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/internal/rtchan"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/wire"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
	"github.com/retrylab/retrylab/store"
)

// Environment variables that turn this test binary into a helper process.
const (
	envFlock = "BADINPUT_FLOCK" // hold an exclusive flock on this file until stdin closes
	envProbe = "BADINPUT_PROBE" // as a worker: send bad requests to the runtime API, write the statuses here
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envFlock); path != "" {
		os.Exit(flockMain(path))
	}
	if out := os.Getenv(envProbe); out != "" && os.Getenv(wire.EnvWorker) != "" {
		os.Exit(probeMain(out))
	}
	agent.MainForTests()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

// --- helpers -----------------------------------------------------------------

func open(t *testing.T, path string) (*engine.Host, error) {
	t.Helper()
	return engine.Open(engine.Config{DBPath: path, Scenarios: testrun.QuickTimeouts(t, fixtures.FS), LockTimeout: 300 * time.Millisecond})
}

func mustOpen(t *testing.T, path string) *engine.Host {
	t.Helper()
	h, err := open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs a fixture's script steps "run" and "resume" to the end.
func run(t *testing.T, h *engine.Host, name string) history.Execution {
	t.Helper()
	r, err := h.Start(name, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		res, err := r.Wait(context.Background())
		if err != nil || res.Err != nil {
			t.Fatalf("%s: %v %v", name, err, res.Err)
		}
		if res.Status != history.StatusKilled || i > 3 {
			break
		}
		if r, err = h.Resume(r.Execution); err != nil {
			t.Fatal(err)
		}
	}
	x, err := h.Execution(r.Execution)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// seed makes a database holding the article's runs, and returns what it
// holds.
func seed(t *testing.T, path string) snapshot {
	t.Helper()
	h := mustOpen(t, path)
	run(t, h, "naive")
	run(t, h, "crash")
	run(t, h, "safe")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	s := snap(t, path)
	if len(s.events) != 3 || s.outbox != 5 {
		t.Fatalf("seeded %+v", s)
	}
	return s
}

// snapshot is what a database holds, as a reader sees it.
type snapshot struct {
	events  map[string]int // execution -> number of events
	status  map[string]history.Status
	outbox  int
	journal int
}

// snap reads a database read-only, runs the consistency check and the
// checker, and returns what it holds.
func snap(t *testing.T, path string) snapshot {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reopen %s: %v", path, err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("consistency check: %v", err)
	}
	s := snapshot{events: map[string]int{}, status: map[string]history.Status{}}
	err = db.View(func(tx *store.Tx) error {
		s.outbox = tx.Count(world.BucketOutbox)
		_ = tx.JournalEntries(func(_, step string, _ []byte) bool {
			if !strings.HasSuffix(step, scenario.DecisionSuffix) {
				s.journal++
			}
			return true
		})
		return tx.Executions(false, 0, func(id string, rec []byte) bool {
			x, err := history.DecodeExecution(rec)
			if err != nil {
				t.Errorf("execution %s: %v", id, err)
				return true
			}
			s.status[id] = x.Status
			_ = tx.Events(id, 0, func(seq uint64, data []byte) bool {
				if _, err := history.Decode(data); err != nil {
					t.Errorf("%s event %d: %v", id, seq, err)
				}
				s.events[id]++
				return true
			})
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckDB(db, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Kind == "durability" || v.Kind == "lost" || v.Kind == "invariant" || v.Kind == "unexpected" {
			t.Errorf("check: %s", v)
		}
	}
	return s
}

// sameAs reports what was lost between two snapshots: every execution with
// all its events, every message and journal record of before must be there.
func (s snapshot) keeps(t *testing.T, before snapshot) {
	t.Helper()
	for id, n := range before.events {
		if s.events[id] < n {
			t.Errorf("%s: %d events before, %d after", id, n, s.events[id])
		}
		if before.status[id].Finished() && s.status[id] != before.status[id] {
			t.Errorf("%s: %s before, %s after", id, before.status[id], s.status[id])
		}
	}
	if s.outbox < before.outbox || s.journal < before.journal {
		t.Errorf("outbox %d -> %d, journal %d -> %d", before.outbox, s.outbox, before.journal, s.journal)
	}
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// --- the database file ---------------------------------------------------------

// TestCorruptDatabase: a file that is not a database, one truncated, and one
// whose both meta pages are damaged are refused with ErrCorrupt and left as
// they were; one damaged meta page is survived from the other. The intact
// database keeps everything.
func TestCorruptDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	before := seed(t, good)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	page := 4096
	damage := func(b []byte, at int) {
		for i := at + 16; i < at+64; i++ {
			b[i] ^= 0xa5
		}
	}
	cases := []struct {
		name    string
		content func() []byte
		refused bool
	}{
		{"not a database", func() []byte { return bytes.Repeat([]byte("retrylab? no.\n"), 5000) }, true},
		{"truncated", func() []byte { return append([]byte(nil), data[:len(data)/3]...) }, true},
		{"both meta pages damaged", func() []byte {
			b := append([]byte(nil), data...)
			damage(b, 0)
			damage(b, page)
			return b
		}, true},
		{"the older meta page damaged", func() []byte {
			b := append([]byte(nil), data...)
			damage(b, page*olderMeta(data, page))
			return b
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(path, tc.content(), 0o600); err != nil {
				t.Fatal(err)
			}
			sum := digest(t, path)
			h, err := open(t, path)
			if !tc.refused {
				if err != nil {
					t.Fatalf("not survived: %v", err)
				}
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				snap(t, path).keeps(t, before)
				return
			}
			if err == nil {
				h.Close()
				t.Fatal("opened")
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("error %q does not wrap ErrCorrupt or name the file", err)
			}
			if digest(t, path) != sum {
				t.Fatal("the refused file was modified")
			}
		})
	}
	snap(t, good).keeps(t, before)

	// The newest meta page damaged: bbolt opens from the other one, which is
	// the database as of the commit before, the last commit lost without a
	// word. A reader refuses the file, saying which meta page is damaged,
	// and leaves it as it is; a writer opens it so (bbolt's recovery from a
	// torn write of the meta page), and its commit rewrites the page, after
	// which a reader opens it too.
	t.Run("the newest meta page damaged", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "newest.db")
		b := append([]byte(nil), data...)
		newest := 1 - olderMeta(data, page)
		damage(b, page*newest)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := digest(t, path)
		_, err := store.Open(path, store.Options{ReadOnly: true})
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("meta page %d is damaged", newest)) {
			t.Fatalf("a reader's open: %v, want the damaged meta page", err)
		}
		if digest(t, path) != sum {
			t.Fatal("a reader modified the file")
		}
		db, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatalf("a writer's open: %v", err)
		}
		if err := db.Check(); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db, err = store.Open(path, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("a reader's open after a writer's: %v", err)
		}
		db.Close()
	})
}

// olderMeta is which of bbolt's two meta pages (0 or 1) holds the older
// transaction id (at offset 64 of a meta page).
func olderMeta(data []byte, page int) int {
	txid := func(i int) uint64 {
		off := i*page + 64
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(data[off+k])
		}
		return v
	}
	if txid(0) < txid(1) {
		return 0
	}
	return 1
}

// TestNewerSchema: a database written by a newer retrylab is refused, named,
// and left untouched; this build's own reads it again once it is its version.
func TestNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "newer.db")
	before := seed(t, path)
	setSchema := func(v uint64) {
		b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), store.U64(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	setSchema(store.SchemaVersion + 1)
	sum := digest(t, path)
	h, err := open(t, path)
	if err == nil {
		h.Close()
		t.Fatal("opened a newer database")
	}
	t.Logf("error: %v", err)
	want := fmt.Sprintf("schema v%d; this build understands up to v%d", store.SchemaVersion+1, store.SchemaVersion)
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q", err)
	}
	if digest(t, path) != sum {
		t.Fatal("the refused file was modified")
	}
	setSchema(store.SchemaVersion)
	snap(t, path).keeps(t, before)
}

// TestLockedByAnotherProgram: a process that is not retrylab holds an
// exclusive flock on the file; opening fails quickly with ErrLocked instead
// of hanging, and works once the lock is gone.
func TestLockedByAnotherProgram(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	before := seed(t, path)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envFlock+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q", line)
	}
	start := time.Now()
	h, err := open(t, path)
	if err == nil {
		h.Close()
		t.Fatal("opened a database another process holds")
	}
	t.Logf("error after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "another program") || time.Since(start) > 3*time.Second {
		t.Fatalf("error %q", err)
	}
	stdin.Close()
	_ = cmd.Wait()
	h = mustOpen(t, path)
	h.Close()
	snap(t, path).keeps(t, before)
}

// flockMain holds an exclusive flock on path, the way a backup tool or an
// editor might, until stdin closes.
func flockMain(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// mountTmpfs mounts a tmpfs at a new directory, or skips when this process
// may not mount.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); run as root with CAP_SYS_ADMIN to test this", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestReadOnlyDirectory: tests run as root, for whom permission bits do not
// stop a write, so the directory is made unwritable for real: a path under a
// regular file, and a read-only mounted file system. A writer is refused
// with the reason; a reader still gets everything.
func TestReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	t.Run("under a regular file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "notadir")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(file, "retrylab.db")
		h, err := open(t, path)
		if err == nil {
			h.Close()
			t.Fatal("opened")
		}
		t.Logf("error: %v", err)
		if !strings.Contains(err.Error(), "not a directory") || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q", err)
		}
	})
	t.Run("read-only file system", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "src.db")
		before := seed(t, src)
		dir := mountTmpfs(t, "size=4m")
		path := filepath.Join(dir, "retrylab.db")
		copyFile(t, src, path)
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Skipf("cannot remount read-only: %v", err)
		}
		h, err := open(t, path)
		if err == nil {
			h.Close()
			t.Fatal("opened for writing on a read-only file system")
		}
		t.Logf("error: %v", err)
		if !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q", err)
		}
		h, err = open(t, filepath.Join(dir, "new.db"))
		if err == nil {
			h.Close()
			t.Fatal("created a database on a read-only file system")
		}
		t.Logf("new database: %v", err)
		snap(t, path).keeps(t, before) // a reader (show, check) still works
	})
}

// TestDiskFull fills a 256 KiB file system while executions run: the write
// that does not fit fails with a clear error, the execution is left
// unfinished rather than half-recorded, and once space is freed the
// database passes the consistency check with everything recorded before.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "size=256k")
	path := filepath.Join(dir, "retrylab.db")
	h := mustOpen(t, path)
	// one-send sends one invoice with no fault: no client timeout to wait
	// for, so the disk fills in a few hundred milliseconds.
	run(t, h, "one-send")
	before := snapshotHost(t, h)
	// Leave a few pages free, so the next runs hit the wall.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	var stat syscall.Statfs_t
	_ = syscall.Statfs(dir, &stat)
	t.Logf("free after filling: %d bytes", stat.Bavail*uint64(stat.Bsize))

	var failure error
	for i := 0; i < 200 && failure == nil; i++ {
		r, err := h.Start("one-send", engine.RunOptions{Execution: fmt.Sprintf("exec_full%03d", i)})
		if err != nil {
			failure = err
			break
		}
		res := r.Result()
		if res.Err != nil {
			failure = res.Err
			break
		}
		if res.Status != history.StatusCompleted {
			x, _ := h.Execution(r.Execution)
			// The write that hits the wall may be the history's or the
			// provider's: then the mail API answers 500 with the error,
			// the attempts record it and the retry policy gives up.
			msg := x.Error
			events, _ := h.Events(r.Execution, 0, 0)
			for _, ev := range events {
				if ev.Type == history.AttemptFinished && ev.Response != nil {
					msg += fmt.Sprintf("; attempt %d answered %d %s", ev.Attempt, ev.Response.Status, ev.Response.Body)
				}
			}
			failure = errors.New(msg)
		}
	}
	if failure == nil {
		t.Fatal("the disk never filled")
	}
	t.Logf("error: %v", failure)
	if !strings.Contains(failure.Error(), "no space left on device") {
		t.Fatalf("error %q does not say the disk is full", failure)
	}
	_ = h.Close() // may fail too: the disk is still full
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	after := snap(t, path)
	after.keeps(t, before)
	// No partial record: every journal record came with its StepRecorded
	// event in one commit, and the history reads without a gap (snap and its
	// check.CheckDB report gaps and undecodable events).
	h = mustOpen(t, path)
	defer h.Close()
	if err := h.Store().Check(); err != nil {
		t.Fatal(err)
	}
	entries, err := h.Journal("")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		events, err := h.Events(e.Execution, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range events {
			found = found || (ev.Type == history.StepRecorded && ev.Step == e.Step)
		}
		if !found {
			t.Errorf("journal record %s/%s without its StepRecorded event", e.Execution, e.Step)
		}
	}
	// And the host works again.
	if x := run(t, h, "one-send"); x.Status != history.StatusCompleted {
		t.Fatalf("after freeing space: %s", x.Status)
	}
}

func snapshotHost(t *testing.T, h *engine.Host) snapshot {
	t.Helper()
	s := snapshot{events: map[string]int{}, status: map[string]history.Status{}}
	list, _, err := h.Executions(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list {
		events, err := h.Events(x.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.events[x.ID], s.status[x.ID] = len(events), x.Status
	}
	st, err := h.State()
	if err != nil {
		t.Fatal(err)
	}
	s.outbox, s.journal = len(st.Outbox), len(st.Journal)
	return s
}

// --- requests -------------------------------------------------------------------

// TestMalformedAndHugeBodies sends broken and oversized bodies to every
// write endpoint of the simulated services: each gets a 4xx problem, nothing
// is sent or written, and the service goes on answering.
func TestMalformedAndHugeBodies(t *testing.T) {
	t.Parallel()
	h := mustOpen(t, filepath.Join(t.TempDir(), "bodies.db"))
	defer h.Close()
	huge := func() io.Reader { return io.LimitReader(zeros{}, 8<<20) }
	endpoints := []struct{ method, url string }{
		{http.MethodPost, h.Providers().MailURL() + "/v1/send"},
		{http.MethodPost, h.Providers().CRMURL() + "/v1/records"},
		{http.MethodPut, h.Providers().CRMURL() + "/v1/records/inv_1"},
	}
	bodies := []struct {
		name string
		body func() io.Reader
		want int
	}{
		{"malformed JSON", func() io.Reader { return strings.NewReader(`{"to": "a@b",`) }, http.StatusBadRequest},
		{"not an object", func() io.Reader { return strings.NewReader(`["to", "a@b"]`) }, http.StatusBadRequest},
		{"empty", func() io.Reader { return strings.NewReader(``) }, http.StatusBadRequest},
		{"deeply nested", func() io.Reader { return strings.NewReader(strings.Repeat("[", 100000)) }, http.StatusBadRequest},
		{"nested past the limit", func() io.Reader {
			return strings.NewReader(`{"to":` + strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 101))
		}, http.StatusBadRequest},
		{"8 MiB", huge, http.StatusRequestEntityTooLarge},
	}
	for _, ep := range endpoints {
		for _, b := range bodies {
			req, _ := http.NewRequest(ep.method, ep.url, b.body())
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s %s: %v", ep.method, ep.url, b.name, err)
			}
			text, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			resp.Body.Close()
			if resp.StatusCode != b.want || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
				t.Errorf("%s %s %s: %d %s; want %d problem+json", ep.method, ep.url, b.name, resp.StatusCode, text, b.want)
			}
			if b.name == "8 MiB" || b.name == "malformed JSON" || b.name == "nested past the limit" {
				t.Logf("%s %s: %d %s", ep.method, b.name, resp.StatusCode, bytes.TrimSpace(text))
			}
		}
	}
	st, err := h.State()
	if err != nil {
		t.Fatal(err)
	}
	writes, _ := h.Providers().CRMWrites(0, 0)
	if len(st.Outbox) != 0 || len(st.CRM) != 0 || len(writes) != 0 || len(st.Keys) != 0 {
		t.Fatalf("bad requests had effects: %+v, %d writes", st, len(writes))
	}
	// Still serving.
	resp, err := http.Post(h.Providers().MailURL()+"/v1/send", "application/json", strings.NewReader(`{"to":"a@b","subject":"still here"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the bad requests: %v %v", resp, err)
	}
	resp.Body.Close()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestRuntimeAPIBadRequests: a worker that sends malformed, oversized and
// forbidden requests to the runtime API gets 4xx answers; the host records
// nothing of them, stays up, and the next run completes.
func TestRuntimeAPIBadRequests(t *testing.T) {
	out := filepath.Join(t.TempDir(), "probe.json")
	t.Setenv(envProbe, out)
	path := filepath.Join(t.TempDir(), "runtime.db")
	h := mustOpen(t, path)
	defer h.Close()
	r, err := h.Start("naive", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Result()
	t.Logf("the probing worker's run ended %s: %v", res.Status, res.Err)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the probe wrote nothing: %v", err)
	}
	var statuses map[string]probeResult
	if err := json.Unmarshal(data, &statuses); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"event: malformed JSON": 400, "event: 6 MiB": 400, "event: a type workers may not report": 400,
		"event: no type": 400, "attempt: malformed JSON": 400, "attempt: 6 MiB": 400, "attempt: no step": 400,
		"journal: malformed JSON": 400, "journal: 6 MiB": 400, "event: no token": 401,
		"another execution's plan": 409, "event: from another run's worker": 409,
		"batch: a forbidden type after a good one": 400, "batch: empty": 400, "batch: malformed": 400,
		"attempt: batch with a forbidden type": 400, "journal: batch with a forbidden type": 400,
		"journal: a forbidden type to follow the record": 400,
		"event: compact, a type workers may not report":  400, "event: compact, cut short": 400,
		"event: nested a million levels": 400, "event: an object nested past the limit": 400,
		"attempt: nested a million levels": 400, "journal: nested past the limit": 400,
	}
	// The same requests through the runtime channel on the socket, as the
	// host's workers send them, get the same answers; a frame over the
	// channel's limit, or one that does not parse, closes the connection.
	overChannel := map[string]int{}
	for name, code := range want {
		if !strings.HasSuffix(name, "6 MiB") {
			overChannel["channel: "+name] = code
		}
	}
	maps.Copy(want, overChannel)
	for _, name := range []string{"channel: a frame announcing 6 MiB", "channel: a frame that does not parse"} {
		if got := statuses[name]; got.Status != 0 || got.Body != "connection closed" {
			t.Errorf("%s: %+v, want the connection closed", name, got)
		}
	}
	for name, code := range want {
		got, ok := statuses[name]
		if !ok || got.Status != code {
			t.Errorf("%s: %+v, want %d", name, got, code)
		}
		t.Logf("%-40s %d %s", name, got.Status, got.Body)
	}
	events, err := h.Events(r.Execution, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == history.TurnStarted || ev.Type == history.AttemptStarted || ev.Type == history.StepRecorded || ev.Type == history.ExecutionCompleted {
			t.Errorf("a refused request was recorded: %+v", ev)
		}
	}
	// The host goes on: the next worker is an honest one.
	os.Unsetenv(envProbe)
	if x := run(t, h, "safe"); x.Status != history.StatusCompleted {
		t.Fatalf("after the probe: %s", x.Status)
	}
}

type probeResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// probeMain is a misbehaving worker.
func probeMain(out string) int {
	base := strings.TrimRight(os.Getenv(wire.EnvWorker), "/") + "/v1/executions/" + os.Getenv(wire.EnvExecution)
	token := os.Getenv(wire.EnvToken)
	big := func() io.Reader {
		return io.MultiReader(strings.NewReader(`{"type":"TurnStarted","text":"`), io.LimitReader(zeros{}, 6<<20), strings.NewReader(`"}`))
	}
	results := map[string]probeResult{}
	do := func(name, method, url string, body io.Reader, auth bool) {
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			results[name] = probeResult{Body: err.Error()}
			return
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set(wire.HeaderRun, os.Getenv(wire.EnvRun))
		}
		if name == "event: from another run's worker" {
			req.Header.Set(wire.HeaderRun, "99")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			results[name] = probeResult{Body: err.Error()}
			return
		}
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		results[name] = probeResult{Status: resp.StatusCode, Body: strings.TrimSpace(string(text))}
	}
	s := strings.NewReader
	do("event: malformed JSON", "POST", base+"/events", s(`{"type":`), true)
	do("event: 6 MiB", "POST", base+"/events", big(), true)
	do("event: a type workers may not report", "POST", base+"/events", s(`{"type":"WorkerCrashed"}`), true)
	do("event: no type", "POST", base+"/events", s(`{}`), true)
	do("event: from another run's worker", "POST", base+"/events", s(`{"type":"TurnStarted","text":"late"}`), true)
	do("event: no token", "POST", base+"/events", s(`{"type":"TurnStarted"}`), false)
	// One event may come in the store's compact encoding, as the host's
	// own workers send it.
	crashed, _ := history.Encode(history.Event{Type: history.WorkerCrashed, ExitCode: 137})
	turn, _ := history.Encode(history.Event{Type: history.TurnStarted, Text: "compact"})
	do("event: compact, a type workers may not report", "POST", base+"/events", bytes.NewReader(crashed), true)
	do("event: compact, cut short", "POST", base+"/events", bytes.NewReader(turn[:len(turn)-3]), true)
	// A batch is recorded whole or not at all: the TurnStarted before the
	// refused event must not be recorded.
	do("batch: a forbidden type after a good one", "POST", base+"/events",
		s(`[{"type":"TurnStarted","text":"first"},{"type":"WorkerCrashed"}]`), true)
	do("batch: empty", "POST", base+"/events", s(`[]`), true)
	do("batch: malformed", "POST", base+"/events", s(`[{"type":"TurnStarted"},`), true)
	do("attempt: batch with a forbidden type", "POST", base+"/attempts",
		s(`{"step":"step-4","attempt":1,"events":[{"type":"TurnStarted"},{"type":"ExecutionStarted"}]}`), true)
	do("journal: batch with a forbidden type", "PUT", base+"/journal/step-4",
		s(`{"tool":"t","result":{},"events":[{"type":"TurnStarted"},{"type":"WorkerStarted"}]}`), true)
	do("journal: a forbidden type to follow the record", "PUT", base+"/journal/step-4",
		s(`{"tool":"t","result":{},"events":[{"type":"TurnStarted"}],"then":[{"type":"ExecutionCompleted"},{"type":"WorkerCrashed"}]}`), true)
	do("attempt: malformed JSON", "POST", base+"/attempts", s(`[1,2`), true)
	do("attempt: 6 MiB", "POST", base+"/attempts", big(), true)
	do("attempt: no step", "POST", base+"/attempts", s(`{"attempt":1}`), true)
	do("journal: malformed JSON", "PUT", base+"/journal/step-4", s(`{"result":`), true)
	do("journal: 6 MiB", "PUT", base+"/journal/step-4", big(), true)
	// Nesting bombs: refused by a scan of the brackets before any decoder
	// recurses through them.
	bombs := []struct{ name, method, path, body string }{
		{"event: nested a million levels", "POST", "/events", strings.Repeat("[", 1_000_000)},
		{"event: an object nested past the limit", "POST", "/events", strings.Repeat(`{"type":`, 101)},
		{"attempt: nested a million levels", "POST", "/attempts", `{"step":"step-4","attempt":1,"args":` + strings.Repeat("[", 1_000_000)},
		{"journal: nested past the limit", "PUT", "/journal/step-4", `{"tool":"t","result":` + strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 101)},
	}
	for _, b := range bombs {
		do(b.name, b.method, base+b.path, s(b.body), true)
	}
	do("another execution's plan", "GET", strings.TrimSuffix(base, os.Getenv(wire.EnvExecution))+"exec_NOPE/plan", nil, true)
	// The same through the runtime channel, as the host's workers send
	// them (what the client refuses to send, over 4 MiB, goes raw).
	if sock := os.Getenv(wire.EnvSocket); sock != "" {
		ch := rtchan.NewClient(sock, time.Minute)
		path := "/v1/executions/" + os.Getenv(wire.EnvExecution)
		viaChannel := func(name, method, p, body string, auth bool) {
			r := rtchan.Request{Method: method, Path: p, Body: []byte(body)}
			if auth {
				r.Token, r.Run = token, os.Getenv(wire.EnvRun)
			}
			if name == "event: from another run's worker" {
				r.Run = "99"
			}
			a, err := ch.Call(context.Background(), r)
			if err != nil {
				results["channel: "+name] = probeResult{Body: err.Error()}
				return
			}
			results["channel: "+name] = probeResult{Status: a.Status, Body: strings.TrimSpace(string(a.Body))}
		}
		viaChannel("event: malformed JSON", "POST", path+"/events", `{"type":`, true)
		viaChannel("event: a type workers may not report", "POST", path+"/events", `{"type":"WorkerCrashed"}`, true)
		viaChannel("event: no type", "POST", path+"/events", `{}`, true)
		viaChannel("event: from another run's worker", "POST", path+"/events", `{"type":"TurnStarted","text":"late"}`, true)
		viaChannel("event: no token", "POST", path+"/events", `{"type":"TurnStarted"}`, false)
		viaChannel("event: compact, a type workers may not report", "POST", path+"/events", string(crashed), true)
		viaChannel("event: compact, cut short", "POST", path+"/events", string(turn[:len(turn)-3]), true)
		viaChannel("batch: a forbidden type after a good one", "POST", path+"/events",
			`[{"type":"TurnStarted","text":"first"},{"type":"WorkerCrashed"}]`, true)
		viaChannel("batch: empty", "POST", path+"/events", `[]`, true)
		viaChannel("batch: malformed", "POST", path+"/events", `[{"type":"TurnStarted"},`, true)
		viaChannel("attempt: batch with a forbidden type", "POST", path+"/attempts",
			`{"step":"step-4","attempt":1,"events":[{"type":"TurnStarted"},{"type":"ExecutionStarted"}]}`, true)
		viaChannel("journal: batch with a forbidden type", "PUT", path+"/journal/step-4",
			`{"tool":"t","result":{},"events":[{"type":"TurnStarted"},{"type":"WorkerStarted"}]}`, true)
		viaChannel("journal: a forbidden type to follow the record", "PUT", path+"/journal/step-4",
			`{"tool":"t","result":{},"events":[{"type":"TurnStarted"}],"then":[{"type":"ExecutionCompleted"},{"type":"WorkerCrashed"}]}`, true)
		viaChannel("attempt: malformed JSON", "POST", path+"/attempts", `[1,2`, true)
		viaChannel("attempt: no step", "POST", path+"/attempts", `{"attempt":1}`, true)
		viaChannel("journal: malformed JSON", "PUT", path+"/journal/step-4", `{"result":`, true)
		viaChannel("another execution's plan", "GET", "/v1/executions/exec_NOPE/plan", "", true)
		for _, b := range bombs {
			viaChannel(b.name, b.method, path+b.path, b.body, true)
		}
		ch.Close()
		raw := func(name string, frame []byte) {
			res := probeResult{Body: "connection closed"}
			conn, err := net.Dial("unix", sock)
			if err != nil {
				results[name] = probeResult{Body: err.Error()}
				return
			}
			defer conn.Close()
			if _, err := conn.Write(frame); err != nil {
				res.Body = err.Error()
			} else if n, err := conn.Read(make([]byte, 64)); err != io.EOF {
				res = probeResult{Body: fmt.Sprintf("read %d bytes: %v", n, err)}
			}
			results[name] = res
		}
		// 6 MiB announced, then the start of an event: the host reads no
		// further and closes.
		raw("channel: a frame announcing 6 MiB", append([]byte{0, 0x60, 0, 0}, `{"type":"TurnStarted","text":"`...))
		raw("channel: a frame that does not parse", []byte{0, 0, 0, 3, 0xff, 0xff, 0xff})
	}
	data, _ := json.Marshal(results)
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return 1
	}
	return 0
}

// TestIdempotencyKeyBadValues sends keys with control characters, non-ASCII
// bytes, and over 255 characters, on the raw wire (Go's client refuses to
// send such headers): each is refused with 400 and sends nothing; a key of
// exactly 255 characters works.
func TestIdempotencyKeyBadValues(t *testing.T) {
	t.Parallel()
	h := mustOpen(t, filepath.Join(t.TempDir(), "keys.db"))
	defer h.Close()
	addr := strings.TrimPrefix(h.Providers().MailURL(), "http://")
	cases := []struct {
		name string
		key  string
		want int
	}{
		{"a control character (SOH)", "ik_\x01abc", 400},
		{"a DEL", "ik_\x7fabc", 400},
		{"a tab", "ik_\tabc", 400},
		{"non-ASCII bytes", "ik_clé", 400},
		{"256 characters", "ik_" + strings.Repeat("k", 253), 400},
		{"255 characters", "ik_" + strings.Repeat("k", 252), 200},
	}
	for _, tc := range cases {
		status, body := rawPost(t, addr, "/v1/send", tc.key, `{"to":"a@b","subject":"key test"}`)
		t.Logf("%-26s %d %s", tc.name, status, body)
		if status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, status, tc.want)
		}
	}
	msgs, err := h.Providers().Outbox()
	if n := len(msgs); err != nil || n != 1 {
		t.Fatalf("outbox holds %d messages (%v); want only the valid key's", n, err)
	}
}

func rawPost(t *testing.T, addr, path, key, body string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, addr, key, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return resp.StatusCode, strings.TrimSpace(string(text))
}

// TestScenarioNotUTF8: a scenario file with a Latin-1 byte on line 3 is
// refused with file:line, and nothing is started or recorded.
func TestScenarioNotUTF8(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latin1.yaml")
	text := "name: latin1\ntitle: x\nteaches: caf\xe9 au lait\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "utf8.db")
	h := mustOpen(t, dbPath)
	defer h.Close()
	x := run(t, h, "naive")
	_, err := h.Start(path, engine.RunOptions{})
	if err == nil {
		t.Fatal("started")
	}
	t.Logf("error: %v", err)
	if want := path + ":3: file is not UTF-8 text"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	list, total, err := h.Executions(0, 0)
	if err != nil || total != 1 || list[0].ID != x.ID {
		t.Fatalf("executions after the refusal: %d %v", total, err)
	}
}
