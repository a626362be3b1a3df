//go:build unix

package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// export onto a named pipe writes into the pipe, as onto /dev/stdout or
// /dev/null: it neither replaces the pipe by a regular file renamed over
// it (which, as root, turned /dev/null into a file) nor leaves a
// temporary file beside it.
func TestCLIExportIntoNamedPipe(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "run", "naive")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "traces.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	r := ok(t, db, "export", "--otlp", fifo)
	has(t, r, "wrote 1 execution, 4 spans to "+fifo+" (OTLP/JSON)")
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after export %s is %v (%v), want the named pipe still", fifo, fi.Mode(), err)
	}
	// Its reader is waiting for a writer: only export opening the pipe
	// ends the wait.
	if doc := <-got; !strings.HasPrefix(doc, `{"resourceSpans":[`) || !strings.HasSuffix(doc, "}\n") {
		t.Errorf("the pipe's reader got %.80q, want the whole OTLP/JSON document", doc)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("export left %d files in %s, want the pipe alone", len(left), dir)
	}
}

// export onto a full device says so in one line, naming the device, and
// leaves the device as it was.
func TestCLIExportOntoFullDevice(t *testing.T) {
	t.Parallel()
	fi, err := os.Stat("/dev/full")
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/full here")
	}
	db := newDB(t)
	ok(t, db, "run", "naive")
	msg := oneLineError(t, must(t, 1, db, "export", "--otlp", "/dev/full"))
	if want := "retrylab: export: write /dev/full: no space left on device"; !strings.HasSuffix(msg, want[len("retrylab: export: "):]) || strings.Count(msg, "/dev/full") != 1 {
		t.Errorf("stderr %q, want %q", msg, want)
	}
	if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is no longer a device after export: %v %v", fi.Mode(), err)
	}
}

// export into a directory it may not write names the file asked for, not
// the temporary file it would have written first.
func TestCLIExportIntoReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root writes into any directory")
	}
	db := newDB(t)
	ok(t, db, "run", "naive")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	file := filepath.Join(dir, "out.json")
	msg := oneLineError(t, must(t, 1, db, "export", "--otlp", file))
	if want := "export: cannot write " + file + ": no permission to create files in " + dir; !strings.Contains(msg, want) {
		t.Errorf("stderr %q, want %q", msg, want)
	}
}

// An export beside a host that cannot write its own destination (a full
// disk: /dev/full) says what failed to write, as alone, not
// "export from host pid N", which blamed the host.
func TestCLIAttachedExportNamesItsOwnWriteError(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	db := newDB(t)
	ok(t, db, "run", "naive")
	const want = "write /dev/full: no space left on device"
	if msg := fails(t, 1, db, "export", "--otlp", "/dev/full"); !strings.Contains(msg, want) {
		t.Errorf("alone: %q", msg)
	}
	serve := background(t, db, "serve")
	serve.banner(t)
	if msg := fails(t, 1, db, "export", "--otlp", "/dev/full"); msg != "retrylab: export: "+want {
		t.Errorf("beside a host: %q, want %q", msg, "retrylab: export: "+want)
	}
	serve.stop(t)
}
