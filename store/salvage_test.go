package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// record is one key/value of a file, with the buckets that hold it.
type record struct {
	path  []string
	key   string
	value string
}

// allRecords lists every record of the bbolt file at path, bucket by bucket.
func allRecords(t *testing.T, path string) []record {
	t.Helper()
	b, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out []record
	var walk func(path []string, bk *bolt.Bucket)
	walk = func(path []string, bk *bolt.Bucket) {
		_ = bk.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(append(append([]string(nil), path...), string(k)), bk.Bucket(k))
				return nil
			}
			out = append(out, record{path: path, key: string(k), value: string(v)})
			return nil
		})
	}
	if err := b.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			walk([]string{string(name)}, bk)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Salvage of a file with one leaf page destroyed copies every record on
// every other page, byte for byte, and loses exactly the records on that
// page; the damaged file is left as it was.
func TestSalvageRecoversEveryUndamagedRecord(t *testing.T) {
	orig, err := os.ReadFile(damagedFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.db")
	if err := os.WriteFile(clean, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	records := allRecords(t, clean)
	db, err := Open(clean, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// The leaf page that holds the most records is the one destroyed.
	pages := make([]uint64, len(records))
	perPage := map[uint64]int{}
	for i, r := range records {
		names := make([][]byte, len(r.path))
		for j, n := range r.path {
			names[j] = []byte(n)
		}
		var why string
		if err := db.View(func(tx *Tx) error {
			pages[i], why = tx.pageOf(names, []byte(r.key))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if pages[i] == 0 {
			t.Fatalf("no page found for %v %q: %s", r.path, r.key, why)
		}
		perPage[pages[i]]++
	}
	db.Close()
	var victim uint64
	for p, n := range perPage {
		if n > perPage[victim] || n == perPage[victim] && p < victim {
			victim = p
		}
	}
	damaged := bytes.Clone(orig)
	for i := victim * 4096; i < (victim+1)*4096; i++ {
		damaged[i] = byte(i * 131)
	}
	src := filepath.Join(dir, "damaged.db")
	if err := os.WriteFile(src, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.db")
	rep, err := Salvage(src, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lost) != 1 || !strings.Contains(rep.Lost[0], "page "+strconv.FormatUint(victim, 10)) {
		t.Errorf("want page %d listed as lost, alone; got %q", victim, rep.Lost)
	}
	got := map[string]string{}
	for _, r := range allRecords(t, out) {
		got[strings.Join(r.path, "/")+"\x00"+r.key] = r.value
	}
	kept, lost := 0, 0
	for i, r := range records {
		v, ok := got[strings.Join(r.path, "/")+"\x00"+r.key]
		switch {
		case pages[i] == victim && ok:
			t.Errorf("%v %q was on the destroyed page %d, yet copied", r.path, r.key, victim)
		case pages[i] == victim:
			lost++
		case !ok:
			t.Errorf("%v %q (page %d) was not copied", r.path, r.key, pages[i])
		case v != r.value:
			t.Errorf("%v %q was copied with another value", r.path, r.key)
		default:
			kept++
		}
	}
	if kept+lost != len(records) || rep.Records != kept {
		t.Errorf("salvage says %d records copied; %d of %d were on undamaged pages, %d on page %d", rep.Records, kept, len(records), lost, victim)
	}
	t.Logf("%d records: %d on undamaged pages, all copied; %d on the destroyed page %d, lost", len(records), kept, lost, victim)
	if after, _ := os.ReadFile(src); !bytes.Equal(after, damaged) {
		t.Error("salvage wrote to the damaged file")
	}
	// The copy opens and checks clean.
	c, err := Open(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Check(); err != nil {
		t.Error(err)
	}
}
