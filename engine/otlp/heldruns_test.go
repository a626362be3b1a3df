package otlp

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// A file whose traces interleave across lines imports the same whether
// its writes store their runs at once or hold them back (heldRuns) until
// the end or until the holding is full: the same records, the same spans
// read back, the same audit and counts. The file has what makes holding
// hard: a span sent again at the end (its held trace is stored before it
// is looked for), and traces whose conversation is known only from their
// last span (their held spans were kept under the trace's own execution
// and move to the conversation's). Held, each trace is stored in fewer
// runs.
func TestHeldRunsImportAsWritesThatStore(t *testing.T) {
	t.Parallel()
	const traces = 300
	td := batchOf(0, 8*traces)
	src := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	var spans []ptrace.Span
	for i := 0; i < src.Len(); i++ {
		s := src.At(i)
		// Every tenth trace names its conversation in its root only, which
		// the shuffle puts anywhere among its spans.
		if tr := i / 8; tr%10 == 3 && i%8 != 0 {
			s.Attributes().Remove("gen_ai.conversation.id")
		}
		spans = append(spans, s)
	}
	spans = append(spans, src.At(42)) // sent again, the same
	dir := t.TempDir()
	p := interleavedLines(t, dir, "lines.jsonl", spans, 40, len(spans)-1, 7) // the repeat last

	type outcome struct {
		stats Stats
		execs []history.Execution
		spans map[string][]Span
		runs  int // index entries
	}
	importWith := func(lim limits) outcome {
		t.Helper()
		db := openDB(t)
		res, err := importFrom(db, p, nil, lim)
		if err != nil {
			t.Fatalf("%+v: %v", lim, err)
		}
		recordsAsAudited(t, db, "held up to "+strconv.Itoa(lim.heldBytes))
		o := outcome{stats: res.Stats, execs: executions(t, db), spans: map[string][]Span{}}
		for _, x := range o.execs {
			got, err := LoadSpans(db, x.ID)
			if err != nil {
				t.Fatal(err)
			}
			o.spans[x.ID] = got
		}
		if err := db.View(func(tx *store.Tx) error {
			return tx.Scan(BucketIndex, nil, false, func([]byte, []byte) bool { o.runs++; return true })
		}); err != nil {
			t.Fatal(err)
		}
		return o
	}
	base := limits{chunkSpans: 128, mergeChunks: 2, keptBytes: keptBudget}
	stored := importWith(base)
	if stored.stats.Spans != 8*traces || stored.stats.Repeated != 1 || len(stored.execs) != traces {
		t.Fatalf("stored at once: %d spans, %d repeated, %d executions; want %d, 1, %d",
			stored.stats.Spans, stored.stats.Repeated, len(stored.execs), 8*traces, traces)
	}
	for _, budget := range []int{1 << 10, 64 << 10, heldBudget} {
		lim := base
		lim.heldBytes = budget
		held := importWith(lim)
		if !reflect.DeepEqual(held.stats, stored.stats) || !reflect.DeepEqual(held.execs, stored.execs) {
			t.Errorf("held up to %d bytes: %+v %+v\nstored at once: %+v %+v", budget,
				held.stats, held.execs, stored.stats, stored.execs)
		}
		for exec, want := range stored.spans {
			if got := held.spans[exec]; len(want) != 8 || !reflect.DeepEqual(got, want) {
				t.Errorf("held up to %d bytes: %s reads back\n%+v\nwant\n%+v", budget, exec, got, want)
			}
		}
		if budget == heldBudget && held.runs >= stored.runs {
			t.Errorf("held: %d index entries, stored at once %d: want fewer", held.runs, stored.runs)
		}
	}
}

// A span sent again with other content is refused, naming it, when the
// first copy is held back; nothing of the import stays.
func TestHeldRunsRefuseAChangedCopy(t *testing.T) {
	td := batchOf(0, 8*50)
	src := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans := spanList(src)
	changed := ptrace.NewSpan()
	src.At(13).CopyTo(changed)
	changed.SetName("execute_tool something_else")
	spans = append(spans, changed)
	p := interleavedLines(t, t.TempDir(), "lines.jsonl", spans, 20, len(spans)-1, 5)
	db := openDB(t)
	_, err := importFrom(db, p, nil, limits{chunkSpans: 64, mergeChunks: 2, keptBytes: keptBudget, heldBytes: heldBudget})
	var se *SpanError
	if !errors.As(err, &se) || se.SpanID != src.At(13).SpanID().String() || !strings.Contains(err.Error(), "duplicate span id") {
		t.Fatalf("import: %v; want the changed copy of span %s refused", err, src.At(13).SpanID().String())
	}
	if got := executions(t, db); len(got) != 0 {
		t.Errorf("%d executions stored by the failed import", len(got))
	}
	if err := db.View(func(tx *store.Tx) error { return assertEmpty(tx, BucketIndex, BucketSpans) }); err != nil {
		t.Error(err)
	}
}

// assertEmpty says which of buckets holds a key.
func assertEmpty(tx *store.Tx, buckets ...store.Bucket) error {
	for _, b := range buckets {
		var n int
		if err := tx.Scan(b, nil, false, func([]byte, []byte) bool { n++; return true }); err != nil {
			return err
		}
		if n != 0 {
			return errors.New(string(b) + " holds keys")
		}
	}
	return nil
}
