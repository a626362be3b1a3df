package cli

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// damagedFixture is a real database (gen, runs, imports; see
// testdata/damaged/README.md); each case below damages a copy of it. The
// first three were found by flipping bytes at seeded offsets: before the
// store walked the pages' bounds, the first two crashed every command with
// a fault inside bbolt's consistency check (`unexpected fault address`,
// uncatchable: it runs on bbolt's own goroutine) and the third hung it.
var damagedCases = []struct {
	name   string
	damage func(b []byte) []byte
	want   string // in the one line every command prints
}{
	{"a branch element pointing past the file", flipAt(24603, 0x6d),
		"page 6 is damaged (element 0 points to page 1828716553, outside the file's pages 2 to 27)"},
	{"a key lying outside its page", flipAt(16759, 0x39),
		"page 4 is damaged (the key or value of element 22 lies outside the page)"},
	{"a header claiming 1.6 billion overflow pages", flipAt(53263, 0x62),
		"page 13 is damaged (it claims 1644167168 more pages, past the file's last page 27)"},
	{"a page of garbage", garbagePage(12, 1), "page 12 is damaged (its header says it is page "},
	{"the first meta page zeroed", zeroPages(0, 1), "page 0 is damaged (its header has no known page type: flags 0x0)"},
	{"both meta pages zeroed", zeroPages(0, 2), "database file is corrupt or not a retrylab database: invalid database"},
	{"cut after 8 pages", func(b []byte) []byte { return b[:8*4096] },
		"file is 32768 bytes but its pages reach byte 114688 (truncated?)"},
}

func flipAt(off int, x byte) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= x; return b }
}

func zeroPages(p, n int) func([]byte) []byte {
	return func(b []byte) []byte { clear(b[p*4096 : (p+n)*4096]); return b }
}

func garbagePage(p int, seed uint64) func([]byte) []byte {
	return func(b []byte) []byte {
		r := rand.New(rand.NewPCG(seed, 0))
		for i := p * 4096; i < (p+1)*4096; i++ {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
}

// writeDamaged writes the fixture, damaged by damage, to a new directory.
func writeDamaged(t *testing.T, damage func([]byte) []byte) string {
	t.Helper()
	if os.Getpagesize() != 4096 {
		t.Skip("the fixture's pages are 4096 bytes")
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "damaged", "retrylab.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "retrylab.db")
	if err := os.WriteFile(db, damage(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return db
}

// noCrash fails when out shows a Go panic, fault or stack.
func noCrash(t *testing.T, what, out string) {
	t.Helper()
	for _, w := range []string{"goroutine ", "panic", "fatal error", "unexpected fault", "SIGSEGV", "SIGBUS", "runtime error"} {
		if strings.Contains(out, w) {
			t.Errorf("%s shows %q:\n%s", what, w, out)
			return
		}
	}
}

// Every read command on a damaged database prints one line naming the
// file and the damage, exits 1, and leaves the file as it was; so does a
// run, which would write.
func TestCLIDamagedDatabaseIsOneLineNeverACrash(t *testing.T) {
	t.Parallel()
	commands := [][]string{
		{"show"}, {"show", "--json"}, {"check"}, {"state", "--json"}, {"outbox"}, {"audit"},
		{"export", "--otlp", "-"}, {"journal", "list"}, {"diff", "exec_TDTTNTKC", "exec_XEF16WG0"}, {"run", "safe"},
	}
	for _, c := range damagedCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := writeDamaged(t, c.damage)
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range commands {
				r := rl(t, db, args...)
				noCrash(t, strings.Join(args, " "), r.stderr)
				line := strings.TrimSuffix(r.stderr, "\n")
				if r.code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "retrylab: ") ||
					!strings.Contains(line, db) || !strings.Contains(line, c.want) {
					t.Errorf("want exit 1 and one line naming %s with %q; got\n%s", db, c.want, r)
				}
			}
			if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
				t.Error("a command wrote to the damaged file")
			}
		})
	}
}

// The explorer's first frame on a damaged database: it says so in one line
// and exits 1 instead of drawing, crashing or hanging.
func TestExplorerOnADamagedDatabase(t *testing.T) {
	t.Parallel()
	c := damagedCases[0]
	db := writeDamaged(t, c.damage)
	s := startScreen(t, bin, db, 300, 20) // wide enough for the line unwrapped
	select {
	case err := <-s.done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("the explorer ended with %v, want exit 1", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the explorer did not end; it shows:\n%s", s.text())
	}
	time.Sleep(100 * time.Millisecond) // the last bytes to the emulator
	text := s.text()
	noCrash(t, "the explorer", text)
	if !strings.Contains(text, c.want) {
		t.Errorf("the explorer's screen does not say %q:\n%s", c.want, text)
	}
}

// A record damaged inside its value (bytes a disk fault changed, the page
// around them whole) passes the walk of the pages and bbolt's check: every
// command that writes refused it all the same, by the record's checksum,
// in one line that points to salvage, and writes nothing; before, an
// import or a run wrote beside it and exited 0.
func TestCLIWritersRefuseADamagedRecord(t *testing.T) {
	t.Parallel()
	db := writeDamaged(t, func(b []byte) []byte { return b })
	if r := rl(t, db, "clock", "advance", "1h"); r.code != 0 { // raises the v5 fixture to sealed records
		t.Fatalf("upgrade: %s", r)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy of a CRM record's words (a free page may hold an older
	// one, which nothing reads): the live one among them.
	subject := []byte("March invoice sent")
	if bytes.Count(b, subject) == 0 {
		t.Fatal("the CRM record is not in the file")
	}
	for i := 0; ; {
		at := bytes.Index(b[i:], subject)
		if at < 0 {
			break
		}
		b[i+at+3] ^= 0x20
		i += at + len(subject)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fixture, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "otlp", "adk-send-twice.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", fixture},
		{"run", "safe"}, {"clock", "advance", "1h"}, {"serve", "--otlp", "127.0.0.1:0"},
	} {
		r := rl(t, db, args...)
		line := strings.TrimSuffix(r.stderr, "\n")
		if r.code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "damaged record in ") ||
			!strings.Contains(line, "nothing was written to it") || !strings.Contains(line, "run `retrylab salvage` to copy what is readable") {
			t.Errorf("%s: want exit 1 and one line naming the damaged record and salvage; got\n%s", strings.Join(args, " "), r)
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(b, after) {
			t.Fatalf("%s wrote to the damaged file", strings.Join(args, " "))
		}
	}
}

// Salvage is suggested for a database with damage, and only there: a file
// that is not a database (a text file given as --db) gets a line asking
// whether --db is right, and salvage's own errors name its files, not
// --db, and never send the user to the salvage that just failed.
func TestCLISalvageIsSuggestedForDamagedDatabasesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte("hello, not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "retrylab.db")

	r := rl(t, text, "run", "naive")
	line := oneLineError(t, r)
	if r.code != 1 || strings.Contains(line, "salvage") ||
		!strings.Contains(line, text+" does not look like a database file (no bbolt meta page; is --db the right file?)") {
		t.Errorf("--db text.txt run naive: want exit 1, no salvage, and a line saying it is not a database; got\n%s", r)
	}

	r = rl(t, db, "salvage", text, filepath.Join(dir, "sal.db"))
	line = oneLineError(t, r)
	if want := "retrylab: salvage " + text + ": " + text + " is not a database file (no bbolt meta page in it); nothing can be copied"; r.code != 1 || line != want {
		t.Errorf("salvage of a text file:\n got %s\nwant %s", line, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "sal.db")); !os.IsNotExist(err) {
		t.Errorf("salvage of a text file left sal.db behind (%v)", err)
	}

	// A database with damage: the command on it points to salvage; salvage
	// of one it cannot read names that file only, and not itself.
	damaged := writeDamaged(t, damagedCases[0].damage)
	if line := oneLineError(t, rl(t, damaged, "show")); !strings.Contains(line, "run `retrylab salvage` to copy what is readable") {
		t.Errorf("show on a damaged database does not point to salvage: %s", line)
	}
	unreadable := writeDamaged(t, func(b []byte) []byte {
		for _, off := range []int{0, 4096} {
			b[off+20] ^= 0xff // each meta page's checksum-covered bytes; the magic stays
		}
		return b
	})
	r = rl(t, db, "salvage", unreadable, filepath.Join(dir, "out.db"))
	line = oneLineError(t, r)
	if r.code != 1 || strings.Contains(line, "retrylab salvage") || strings.Contains(line, db) ||
		!strings.HasPrefix(line, "retrylab: salvage "+unreadable+": ") || !strings.Contains(line, "nothing can be copied") {
		t.Errorf("salvage of a database it cannot read: want exit 1 and a line naming only its file; got\n%s", r)
	}
}
