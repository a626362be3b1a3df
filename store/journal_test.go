package store

import (
	"slices"
	"strings"
	"testing"
)

// putOldJournal writes a record as builds before the flat layout did: in
// the execution's own bucket under journals (sealed, as a writer's open
// of such a file leaves it).
func putOldJournal(tx *Tx, exec, step, record string) error {
	b, err := tx.nested(bucketJournals, exec, true)
	if err != nil {
		return err
	}
	return b.Put([]byte(step), tx.seal(bucketJournals, []byte(step), []byte(record)))
}

// TestJournalReadsBothLayouts: records of the per-execution layout (older
// databases) and of the flat one are read, listed, paged, replaced and
// deleted as one journal.
func TestJournalReadsBothLayouts(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		for _, r := range [][3]string{{"exec_A", "s1", "old"}, {"exec_A", "s3", "old"}, {"exec_A", "s4", "old"}, {"exec_C", "s1", "old"}} {
			if err := putOldJournal(tx, r[0], r[1], r[2]); err != nil {
				return err
			}
		}
		for _, r := range [][2]string{{"exec_A", "s2"}, {"exec_A", "s4"}, {"exec_AB", "s1"}, {"exec_B", "s1"}, {"exec_C", "s2"}} {
			if err := tx.PutJournal(r[0], r[1], []byte("new")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	list := func(exec, step string, limit int) []string {
		t.Helper()
		var out []string
		if err := db.View(func(tx *Tx) error {
			return tx.JournalEntriesAfter(exec, step, func(e, s string, rec []byte) bool {
				out = append(out, e+"/"+s+"="+string(rec))
				return limit <= 0 || len(out) < limit
			})
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := []string{"exec_A/s1=old", "exec_A/s2=new", "exec_A/s3=old", "exec_A/s4=new", "exec_AB/s1=new",
		"exec_B/s1=new", "exec_C/s1=old", "exec_C/s2=new"}
	if got := list("", "", 0); !slices.Equal(got, all) {
		t.Fatalf("every record:\n got %v\nwant %v", got, all)
	}
	// Paging, as state --json does: from each record on.
	for i := range len(all) - 1 {
		e, rest, _ := strings.Cut(all[i], "/")
		s, _, _ := strings.Cut(rest, "=")
		if got := list(e, s, 2); !slices.Equal(got, all[i+1:min(i+3, len(all))]) {
			t.Errorf("after %s/%s: %v", e, s, got)
		}
	}
	err = db.Update(func(tx *Tx) error {
		if got := string(tx.Journal("exec_A", "s3")); got != "old" {
			t.Errorf("Journal(exec_A, s3) = %q", got)
		}
		if got := string(tx.Journal("exec_A", "s4")); got != "new" {
			t.Errorf("Journal(exec_A, s4) = %q", got)
		}
		for _, c := range []struct {
			exec, step string
			want       bool
		}{{"exec_A", "s3", true}, {"exec_A", "s3", false}, {"exec_A", "s2", true}, {"exec_C", "s1", true}} {
			if ok, err := tx.DeleteJournal(c.exec, c.step); err != nil || ok != c.want {
				t.Errorf("DeleteJournal(%s, %s) = %v, %v", c.exec, c.step, ok, err)
			}
		}
		if tx.Journal("exec_A", "s3") != nil {
			t.Error("a deleted old record is still read")
		}
		return tx.DeleteExecution("exec_A")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := list("", "", 0), []string{"exec_AB/s1=new", "exec_B/s1=new", "exec_C/s2=new"}; !slices.Equal(got, want) {
		t.Errorf("after deletes: %v, want %v", got, want)
	}
	if err := db.View(func(tx *Tx) error {
		p, _ := tx.bucket(bucketJournals)
		if p.Bucket([]byte("exec_C")) != nil || p.Bucket([]byte("exec_A")) != nil {
			t.Error("an emptied old bucket is left")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
