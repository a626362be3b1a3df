package cli

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
	bolt "go.etcd.io/bbolt"
)

// otlpTraces writes n OpenTelemetry traces (the openinference fixture,
// each under a trace id of its own) as JSON Lines to a file in dir.
func otlpTraces(t *testing.T, dir string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures/otlp/openinference-charge.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for i := range n {
		out.Write(bytes.ReplaceAll(b, []byte("0af7651916cd43dd8448eb211c80319c"), fmt.Appendf(nil, "%032x", i+1)))
	}
	path := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// salvageSources makes the two databases the damage test damages: a gen
// one and an OTLP-imported one.
func salvageSources(t *testing.T) map[string]string {
	dir := t.TempDir()
	gen, imp := filepath.Join(dir, "gen.db"), filepath.Join(dir, "otlp.db")
	ok(t, gen, "gen", "--executions", "80", "--seed", "5")
	must(t, 0, imp, "import", otlpTraces(t, dir, 150))
	return map[string]string{"gen": gen, "otlp": imp}
}

// damageCopy writes src, damaged, to a new file: seeds even, 4 KB of
// random bytes at a random 512-byte block past the meta pages (the
// user's dd); seeds odd, one random page filled with random bytes.
func damageCopy(t *testing.T, src, dst string, seed uint64) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	const ps = 4096
	var from, n int
	if seed%2 == 0 {
		from, n = 2*ps+512*r.IntN((len(b)-3*ps)/512), 8*512
	} else {
		from, n = ps*(2+r.IntN(len(b)/ps-2)), ps
	}
	for i := from; i < from+n && i < len(b); i++ {
		b[i] = byte(r.UintN(256))
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("bytes %d to %d", from, from+n)
}

// assertSound checks what every command needs of a salvaged copy: a
// writer opens it, and check's and audit's reading of the records
// (engine.CheckRecords, otlp's spans) finds nothing damaged.
func assertSound(t *testing.T, path, what string) {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("%s: a writer cannot open the copy: %v", what, err)
	}
	db.Close()
	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer ro.Close()
	damaged, err := engine.CheckRecords(ro, all.Registry(), 0, otlp.CheckRecords)
	if err != nil || len(damaged) > 0 {
		t.Fatalf("%s: the copy's records: %v %v", what, err, damaged)
	}
	if err := ro.View(func(tx *store.Tx) error {
		ids, why, err := otlp.Unreadable(tx)
		if err == nil && len(ids) > 0 {
			err = fmt.Errorf("imported executions %v do not read: %v", ids, why)
		}
		return err
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// dump is every record of a bbolt file, bucket path, key and value, one
// line each, in order.
func dump(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out strings.Builder
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		fmt.Fprintf(&out, "%s seq %d\n", prefix, b.Sequence())
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+"/"+string(k), b.Bucket(k))
				return nil
			}
			fmt.Fprintf(&out, "%s %x %x\n", prefix, k, v)
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(string(name), b); return nil })
	})
	return out.String()
}

// TestSalvageAfterRandomDamage damages copies of a gen database and an
// OTLP-imported one (20 seeds each: random 4 KB runs, random pages) and
// salvages each by the command's own path. Before, most copies were
// refused by every writer (a record whose checksum did not match was
// copied) or by audit and check (an imported execution that lost its
// index entries, the creation order and count out of step with the
// records), and a failed salvage left OUT behind. Now each copy opens for
// writing, its records pass check's and audit's reading, nothing else is
// left beside it, and salvaging it again loses and changes nothing.
func TestSalvageAfterRandomDamage(t *testing.T) {
	srcs := salvageSources(t)
	for _, kind := range []string{"gen", "otlp"} {
		for seed := uint64(1); seed <= 20; seed++ {
			dir := t.TempDir()
			damaged, out, again := filepath.Join(dir, "d.db"), filepath.Join(dir, "s.db"), filepath.Join(dir, "s2.db")
			what := fmt.Sprintf("%s seed %d (%s)", kind, seed, damageCopy(t, srcs[kind], damaged, seed))
			var buf bytes.Buffer
			a := &app{imports: all.Registry(), out: &buf, errOut: &buf}
			if err := a.salvage(damaged, out); err != nil {
				t.Fatalf("%s: salvage: %v\n%s", what, err, buf.String())
			}
			assertSound(t, out, what)
			buf.Reset()
			if err := a.salvage(out, again); err != nil {
				t.Fatalf("%s: salvage of the salvage: %v", what, err)
			}
			if !strings.Contains(buf.String(), "nothing was lost") {
				t.Errorf("%s: salvage of the salvage lost records:\n%s", what, buf.String())
			}
			if dump(t, out) != dump(t, again) {
				t.Errorf("%s: salvage of the salvage changed records", what)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 3 {
				t.Errorf("%s: %d files beside the copies, want none", what, len(entries)-3)
			}
		}
	}
}

// TestCLISalvageThenEveryCommand is the user's report: a database of
// imported traces, 4 KB of it overwritten, salvaged. Before, salvage
// failed (exit 1, a record whose checksum does not match) and left OUT
// behind; now it exits 0, and audit, check and import work on the copy.
func TestCLISalvageThenEveryCommand(t *testing.T) {
	srcs := salvageSources(t)
	for seed := uint64(2); seed <= 8; seed += 2 {
		for _, kind := range []string{"gen", "otlp"} {
			dir := t.TempDir()
			damaged, out := filepath.Join(dir, "d.db"), filepath.Join(dir, "s.db")
			damageCopy(t, srcs[kind], damaged, seed)
			r := must(t, 0, "", "salvage", damaged, out)
			if !strings.Contains(r.stdout, "salvaged ") {
				t.Errorf("%s seed %d: %s", kind, seed, r)
			}
			for _, args := range [][]string{{"audit", "--fail-on", "never"}, {"check"}} {
				if r := rl(t, out, args...); r.code != 0 && !strings.Contains(r.stdout, "violation") || strings.Contains(r.stderr, "damaged") {
					t.Errorf("%s seed %d: %s", kind, seed, r)
				}
			}
			fixture, _ := filepath.Abs(filepath.Join(repoRoot, "fixtures/otlp/genai-semconv.json"))
			must(t, 0, out, "import", fixture)
		}
	}
}
