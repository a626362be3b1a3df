package otlp

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/store"
)

// fillOldDB is how testdata/spans-json-v0.db was written, by the code
// before the binary span encoding (spans stored as JSON objects): three
// fixtures imported as files, one saved as the receiver saves.
func fillOldDB(t *testing.T, db *store.DB) {
	t.Helper()
	for _, f := range []string{"adk-send-twice.json", "genai-semconv.json", "openinference-charge.jsonl"} {
		if _, err := ImportFile(db, filepath.Join(fixtures, f)); err != nil {
			t.Fatal(err)
		}
	}
	spans := readFixture(t, "openllmetry-ticket.json")
	if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, spans, "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
}

// openTestdata opens a copy of a database under testdata.
func openTestdata(t *testing.T, name string) *store.DB {
	t.Helper()
	old, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(p, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A database written before the binary encoding reads as a fresh one
// does: the same executions, the same spans, and importing the same files
// again finds every span already there.
func TestDatabaseWithJSONSpansStillReads(t *testing.T) {
	oldDB := openTestdata(t, "spans-json-v0.db")
	// The file really holds the old encoding.
	jsonSpans := 0
	oldDB.View(func(tx *store.Tx) error {
		return tx.Scan(BucketSpans, nil, false, func(_, v []byte) bool {
			if len(v) > 0 && v[0] == '{' {
				jsonSpans++
			}
			return true
		})
	})
	if jsonSpans == 0 {
		t.Fatal("testdata/spans-json-v0.db holds no JSON-encoded span")
	}
	fresh := openDB(t)
	fillOldDB(t, fresh)

	oldX, freshX := executions(t, oldDB), executions(t, fresh)
	for i := range freshX {
		// The old file predates the records' duplicate and possible
		// flags (the audit's verdict, set when a record is written).
		freshX[i].Duplicates, freshX[i].Possible = false, false
	}
	if len(oldX) == 0 || !reflect.DeepEqual(oldX, freshX) {
		t.Fatalf("executions differ:\nold   %+v\nfresh %+v", oldX, freshX)
	}
	for _, x := range oldX {
		a, err := LoadSpans(oldDB, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadSpans(fresh, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: spans differ:\nold   %+v\nfresh %+v", x.ID, a, b)
		}
		if ea, eb := Events(a), Events(b); !reflect.DeepEqual(ea, eb) {
			t.Errorf("%s: events differ", x.ID)
		}
	}
	res, err := ImportFile(oldDB, filepath.Join(fixtures, "adk-send-twice.json"))
	if err != nil || res.Spans != 0 || res.Repeated != 9 {
		t.Fatalf("re-import into the old database: %+v, %v", res.Stats, err)
	}
}

// Every field survives the binary encoding, ids that are not hex too.
func TestSpanEncodingRoundTrips(t *testing.T) {
	spans := []Span{
		{TraceID: "0123456789abcdef0123456789abcdef", SpanID: "0123456789abcdef", ParentID: "fedcba9876543210",
			Name: "execute_tool send_email", Kind: "internal", Start: 1790607000000000000, End: 1790607001000000000,
			Status: "error", Message: "boom", Service: "svc", Scope: "scope",
			Attrs:  AttrsOf(map[string]string{"gen_ai.tool.name": "send_email", "custom.key": "v", "gen_ai.tool.call.arguments": `{"a":1}`}),
			Events: []SpanEvent{{Name: "exception", Time: 1790607000500000000, Attrs: AttrsOf(map[string]string{"exception.message": "x", "other": "y"})}, {Name: "e2", Time: -5}}},
		{TraceID: "t1", SpanID: "S1", ParentID: "ABCDEF0123456789", Name: "x", Start: 10, End: 5},
	}
	for _, s := range spans {
		enc := encodeSpan(nil, &s)
		var got Span
		if err := decodeSpan(enc, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, s)
		}
		if err := decodeSpan(enc[:len(enc)-1], &got); err == nil {
			t.Error("a truncated span decoded")
		}
	}
}

// Decoding and storing overlap; a span refused by the store is still
// named with the line it came from, and the file leaves nothing behind.
func TestStoreErrorNamesTheSpansLine(t *testing.T) {
	for _, chunk := range []int{1, 2, 8192} {
		db := openDB(t)
		p := filepath.Join(t.TempDir(), "dup.jsonl")
		other := strings.Replace(goodSpan, `"a000000000000001"`, `"a000000000000002"`, 1)
		dup := strings.Replace(goodSpan, `"name":"x"`, `"name":"y"`, 1)
		os.WriteFile(p, []byte(doc(goodSpan)+"\n"+doc(other)+"\n"+doc(dup)+"\n"+doc(other)+"\n"), 0o600)
		_, err := importFile(db, p, chunk)
		if err == nil || !strings.Contains(err.Error(), p+": line 3: span a000000000000001: appears twice") {
			t.Fatalf("chunks of %d: error %v", chunk, err)
		}
		if xs := executions(t, db); len(xs) != 0 {
			t.Fatalf("chunks of %d: a failed file left %d executions", chunk, len(xs))
		}
	}
}

// testdata/spans-v4-compact.db was written by fillOldDB with the code
// before an index entry stood for a run of a trace's spans (schema 4: one
// entry per span, spans in the binary encoding). It reads as a fresh one
// does; importing the same files again finds every span already there; a
// span added to one of its traces, and an import that fails half way
// through one, leave its spans as they were.
func TestDatabaseWithAnIndexEntryPerSpanStillReads(t *testing.T) {
	oldDB := openTestdata(t, "spans-v4-compact.db")
	perSpan, binarySpans := 0, 0
	oldDB.View(func(tx *store.Tx) error {
		tx.Scan(BucketIndex, nil, false, func(_, v []byte) bool {
			if len(v) == 16 {
				perSpan++
			}
			return true
		})
		return tx.Scan(BucketSpans, nil, false, func(_, v []byte) bool {
			if len(v) > 0 && v[0] == spanBinary {
				binarySpans++
			}
			return true
		})
	})
	if perSpan == 0 || binarySpans == 0 {
		t.Fatalf("testdata/spans-v4-compact.db holds %d index entries of one span, %d binary spans", perSpan, binarySpans)
	}
	readsAsFresh(t, oldDB)
}

// testdata/spans-v7-runs.db was written by fillOldDB with the code before
// a run's spans were stored in blocks: a run is spans one a value, at
// consecutive sequences. It reads, takes more spans and refuses a bad
// import as a fresh one does, and checks clean.
func TestDatabaseWithASpanPerValueStillReads(t *testing.T) {
	oldDB := openTestdata(t, "spans-v7-runs.db")
	runs, blocks := 0, 0
	oldDB.View(func(tx *store.Tx) error {
		tx.Scan(BucketIndex, nil, false, func(_, v []byte) bool {
			if _, _, n := decodeIndex(v); len(v) == 20 && n > 1 {
				runs++
			}
			return true
		})
		return tx.Scan(BucketSpans, nil, false, func(_, v []byte) bool {
			if len(v) > 0 && v[0] == spanBlock {
				blocks++
			}
			return true
		})
	})
	if runs == 0 || blocks != 0 {
		t.Fatalf("testdata/spans-v7-runs.db holds %d runs of spans and %d blocks, want runs and no block", runs, blocks)
	}
	readsAsFresh(t, oldDB)
	var damaged []error
	if err := oldDB.View(func(tx *store.Tx) error { var err error; damaged, err = CheckRecords(tx, 10); return err }); err != nil || len(damaged) != 0 {
		t.Fatalf("check of the old database: %v, %v", damaged, err)
	}
}

// readsAsFresh checks that oldDB, filled by fillOldDB in an older layout,
// reads as a fresh database filled the same way; that importing the same
// files again finds every span already there; and that a span added to
// one of its traces, and an import that fails half way through one, leave
// its spans as they were.
func readsAsFresh(t *testing.T, oldDB *store.DB) {
	t.Helper()
	fresh := openDB(t)
	fillOldDB(t, fresh)
	oldX, freshX := executions(t, oldDB), executions(t, fresh)
	for i := range freshX {
		// The old files predate the records' possible flag (the audit's
		// verdict, set when a record is written).
		freshX[i].Possible = false
	}
	if len(oldX) == 0 || !reflect.DeepEqual(oldX, freshX) {
		t.Fatalf("executions differ:\nold   %+v\nfresh %+v", oldX, freshX)
	}
	for _, x := range freshX {
		a, err := LoadSpans(oldDB, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadSpans(fresh, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: spans differ:\nold   %+v\nfresh %+v", x.ID, a, b)
		}
	}
	const exec = "otlp-conv-sess-adk-mail-1"
	before, err := LoadSpans(oldDB, exec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ImportFile(oldDB, filepath.Join(fixtures, "adk-send-twice.json"))
	if err != nil || res.Spans != 0 || res.Repeated != len(before) {
		t.Fatalf("re-import into the old database: %+v, %v", res.Stats, err)
	}

	// One more span of a stored trace, sent as the receiver would, beside
	// the spans indexed one by one; sent again, it is already there.
	extra := before[len(before)-1]
	extra.Import = 0
	extra.SpanID, extra.ParentID = "f00000000000000f", before[0].SpanID
	extra.Name, extra.Attrs, extra.Events = "late", AttrsOf(map[string]string{"gen_ai.conversation.id": "sess-adk-mail-1"}), nil
	for round, want := range []Stats{{Spans: 1}, {Repeated: 1}} {
		var got Stats
		if err := oldDB.Update(func(tx *store.Tx) error { var err error; got, err = Save(tx, []Span{extra}, "receiver"); return err }); err != nil {
			t.Fatal(err)
		}
		if got.Spans != want.Spans || got.Repeated != want.Repeated {
			t.Fatalf("save %d: %+v, want %+v", round+1, got, want)
		}
	}
	after, err := LoadSpans(oldDB, exec)
	if err != nil || len(after) != len(before)+1 {
		t.Fatalf("after one more span: %d spans (%v), want %d", len(after), err, len(before)+1)
	}

	// An import whose first line adds to the trace and whose second fails.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	line1 := strings.Replace(doc(goodSpan), "5b8efff798038103d269b633813fc60c", before[0].TraceID, 1)
	line2 := strings.Replace(doc(goodSpan), `"endTimeUnixNano":"1790607001000000000"`, `"endTimeUnixNano":"1"`, 1)
	if err := os.WriteFile(bad, []byte(line1+"\n"+line2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := importFile(oldDB, bad, 1); err == nil {
		t.Fatal("the bad file imported")
	}
	again, err := LoadSpans(oldDB, exec)
	if err != nil || !reflect.DeepEqual(again, after) {
		t.Fatalf("after a failed import: %d spans (%v), want the %d before it", len(again), err, len(after))
	}
}

// TestSortAttrsOrdersAsStrings checks sortAttrs against the strings' own
// order, on keys that share prefixes of 16 bytes and more, differ only
// past them, hold zero bytes, or are prefixes of one another.
func TestSortAttrsOrdersAsStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"", "a", "gen_ai.", "retrylab.", "retrylab.execution.", "\x00", "z", "tool", "\xff"}
	for round := 0; round < 2000; round++ {
		n := rng.IntN(40)
		seen := map[string]bool{}
		var kvs []Attr
		for len(kvs) < n {
			var k string
			for j := rng.IntN(4); j >= 0; j-- {
				k += parts[rng.IntN(len(parts))]
			}
			if !seen[k] {
				seen[k] = true
				kvs = append(kvs, Attr{k, fmt.Sprint(len(kvs))})
			}
		}
		want := slices.Clone(kvs)
		slices.SortFunc(want, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
		sortAttrs(kvs)
		if !slices.Equal(kvs, want) {
			t.Fatalf("round %d: sorted %q, want %q", round, kvs, want)
		}
	}
}
