package check

import (
	"encoding/json"
	"hash/maphash"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/store"
)

// The ledger index tells apart executions whose ids hash alike by the
// effects' own attribution: a lookup hands over only the execution's own,
// and what no execution took is left for the report, in ledger order.
func TestLedgerIndexCollisions(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "l.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	owners := []string{"a", "b", "a", "c", "b"}
	err = db.Update(func(tx *store.Tx) error {
		for i, x := range owners {
			m := world.Message{ID: "m" + string(rune('0'+i)), Attribution: world.Attribution{Execution: x, Step: "send", Attempt: 1}}
			if _, err := tx.Append(world.BucketOutbox, func(seq uint64) ([]byte, error) { m.Seq = seq; return json.Marshal(m) }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *store.Tx) error {
		idx := newLedgerIndex()
		if err := tx.Scan(world.BucketOutbox, nil, false, func(k, v []byte) bool {
			m, err := world.DecodeMessage(k, v)
			if err != nil {
				t.Fatal(err)
			}
			if !idx.add(MessageEffect(m), k, false) {
				t.Fatalf("%s not indexed", m.ID)
			}
			return true
		}); err != nil {
			return err
		}
		// Every id hashes alike.
		for i := range idx.refs {
			idx.refs[i].hash = maphash.String(idx.seed, "a")
		}
		idx.sort()
		var got []string
		collect := func(e Effect) { got = append(got, e.Attr.Execution+":"+e.Ref) }
		if err := idx.take(tx, "a", collect); err != nil {
			return err
		}
		if err := idx.take(tx, "a", collect); err != nil { // taken once only
			return err
		}
		if want := "a:m0 a:m2"; strings.Join(got, " ") != want {
			t.Errorf("take a = %q, want %q", strings.Join(got, " "), want)
		}
		got = nil
		if err := idx.rest(tx, collect); err != nil {
			return err
		}
		if want := "b:m1 c:m3 b:m4"; strings.Join(got, " ") != want {
			t.Errorf("rest = %q, want %q", strings.Join(got, " "), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
