package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A record damaged inside its value (a disk fault that leaves the page's
// header and elements whole) passes the walk of the pages' bounds and
// bbolt's check alike; a writer's Open refuses it all the same, by its
// checksum, before anything is written, and names the record and its
// page as a read of it would. The same for a history's chunk and its
// growing tail, and for a file too large to check in full (walked only).
func TestDamagedRecordRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		value     string // bytes of the value to damage, found in the file
		bucket    string
		checkUpTo int64
	}{
		{"a sealed record", "VALUE-OF-A-SEALED-RECORD", "damage_walk", 0},
		{"a sealed record in a nested collection", "VALUE-IN-A-NESTED-ONE", "damage_walk", 0},
		{"a sealed record, walked only", "VALUE-OF-A-SEALED-RECORD", "damage_walk", -1},
		{"a history's tail", "exec-tail:", "history_tails", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "r.db")
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *Tx) error {
				if err := tx.Put("damage_walk", []byte("k"), []byte("VALUE-OF-A-SEALED-RECORD")); err != nil {
					return err
				}
				b, err := tx.bucket("damage_walk")
				if err != nil {
					return err
				}
				inner, err := b.CreateBucketIfNotExists([]byte("inner"))
				if err != nil {
					return err
				}
				if err := inner.Put([]byte("n"), seal([]byte("n"), []byte("VALUE-IN-A-NESTED-ONE"))); err != nil {
					return err
				}
				_, err = tx.AppendEvent("exec-tail", func(seq uint64) ([]byte, error) { return payload("exec-tail", seq, 40), nil })
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// A healthy file opens.
			ok, err := Open(path, Options{CheckUpTo: c.checkUpTo})
			if err != nil {
				t.Fatalf("a healthy file: %v", err)
			}
			ok.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := bytes.Index(b, []byte(c.value))
			if at < 0 {
				t.Fatalf("%q is not in the file", c.value)
			}
			damageAt(t, path, int64(at+len(c.value)-1), []byte{'!'})
			before, _ := os.ReadFile(path)
			_, err = Open(path, Options{CheckUpTo: c.checkUpTo})
			mustFail(t, err, ErrCorrupt, path)
			want := fmt.Sprintf("damaged record in %s, key ", c.bucket)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "checksum does not match") ||
				!strings.Contains(err.Error(), "; nothing was written to it") {
				t.Errorf("Open: %v\nwant it to say %q", err, want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the damaged file was written to")
			}
			// A reader still opens it (salvage and audit read round it).
			ro, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only: %v", err)
			}
			ro.Close()
		})
	}
}
