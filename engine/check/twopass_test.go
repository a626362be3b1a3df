package check

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/store"
)

// An execution with more attempts than the check keeps is checked in two
// passes; the report is the same as with every attempt kept. (Kept, the
// histories go through the workers of the pipeline; with nothing kept,
// each streams through the check alone.)
func TestTwoPassesAsOne(t *testing.T) {
	// Four attempts a step make long histories; one makes short ones, whose
	// walks a worker folds one after another in the same space (walkSpace).
	for _, opts := range []gen.Options{{Executions: 120, AttemptsPerStep: 4, Seed: 9}, {Executions: 400, AttemptsPerStep: 1, Seed: 5}} {
		path := filepath.Join(t.TempDir(), "g.db")
		db, err := store.Open(path, store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := gen.Generate(context.Background(), db, opts); err != nil {
			t.Fatal(err)
		}
		report := func(keep int) string {
			r, err := checkDB(db, Options{}, keep)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			r.Write(&b, 1000)
			r.WriteTable(&b)
			r.WriteMatrix(&b)
			return b.String()
		}
		one, two := report(1<<30), report(0)
		if one != two {
			t.Errorf("%+v: two passes:\n%s\none:\n%s", opts, two, one)
		}
	}
}
