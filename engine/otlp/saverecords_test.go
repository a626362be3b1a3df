package otlp

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/store"
)

// convSpans are the spans of one agent run of conversation conv: a root
// and a send_email call, trace tid, starting at start (seconds).
func convSpans(tid, conv string, start int64, failed bool) []Span {
	root := Span{TraceID: tid, SpanID: tid[:8] + "00000000", Name: "invoke_agent " + conv,
		Start: start * 1e9, End: start*1e9 + 9e8, Attrs: AttrsOf(map[string]string{"gen_ai.conversation.id": conv, "gen_ai.operation.name": "invoke_agent"})}
	if failed {
		root.Status, root.Message = "error", "boom"
	}
	tool := Span{TraceID: tid, SpanID: tid[:8] + "00000001", ParentID: root.SpanID, Name: "execute_tool send_email",
		Start: start*1e9 + 1e8, End: start*1e9 + 2e8, Attrs: AttrsOf(map[string]string{"gen_ai.conversation.id": conv,
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_email", "gen_ai.tool.call.id": "call-" + tid,
			"gen_ai.tool.call.arguments": `{"to":"a@example.com"}`})}
	return []Span{root, tool}
}

// Requests that share a group commit's transaction each save their spans
// with a writer of their own: the second request's write finds the record
// the first one's made in the same transaction and folds its spans into
// it, as it would into one committed before. A record made new is stored
// as history.Put stores it, without a place among the active executions.
func TestSavesInOneTransactionShareTheRecord(t *testing.T) {
	db := openDB(t)
	const exec = "otlp-conv-c1"
	if err := db.Update(func(tx *store.Tx) error {
		if _, err := Save(tx, convSpans("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "c1", 100, true), "r"); err != nil {
			return err
		}
		if _, err := Save(tx, convSpans("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "c1", 200, false), "r"); err != nil {
			return err
		}
		// A third request resends the first one's spans: nothing changes.
		st, err := Save(tx, convSpans("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "c1", 100, true), "r")
		if err != nil || st.Spans != 0 || st.Repeated != 2 {
			t.Errorf("resent: %+v, %v; want 2 repeated", st, err)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	xs := executions(t, db)
	if len(xs) != 1 {
		t.Fatalf("%d executions, want 1: %+v", len(xs), xs)
	}
	x := xs[0]
	if x.ID != exec || x.Runs != 2 || x.Status != history.StatusCompleted || x.Error != "" ||
		x.Started.Unix() != 100 || x.Ended.Unix() != 200 || x.Scenario != "invoke_agent c1" || x.Imported != ImportedFormat {
		t.Errorf("record %+v: want both runs, the rerun's success, 100s to 200s", x)
	}
	if err := db.View(func(tx *store.Tx) error {
		if tx.ExecutionCount() != 1 {
			t.Errorf("execution count %d, want 1", tx.ExecutionCount())
		}
		if v := tx.Get(store.Active, []byte(exec)); v != nil {
			t.Errorf("an imported execution is active: %q", v)
		}
		spans, err := Load(tx, exec)
		if err != nil || len(spans) != 4 {
			t.Errorf("%d spans, %v; want 4", len(spans), err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A later request of the conversation reads the committed record.
	if err := db.Update(func(tx *store.Tx) error {
		_, err := Save(tx, convSpans("cccccccccccccccccccccccccccccccc", "c1", 300, true), "r")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if xs := executions(t, db); len(xs) != 1 || xs[0].Runs != 3 || xs[0].Status != history.StatusFailed || xs[0].Ended.Unix() != 300 {
		t.Errorf("after a third run: %+v", xs)
	}
}

// A span's attributes are stored in key order, whatever the order they
// arrived in, so that equal spans store equal bytes (a span sent again is
// recognised by them).
func TestAttributesEncodeInKeyOrder(t *testing.T) {
	keys := []string{"z.custom", "gen_ai.tool.name", "a.custom", "gen_ai.tool.call.id", "m.custom", "gen_ai.operation.name",
		"b", "gen_ai.conversation.id", "y", "x", "http.request.header.idempotency-key"}
	var read []Attr
	for _, k := range keys {
		read = append(read, Attr{k, "v-" + k})
	}
	attrs := keptAttrs(slices.Clone(read), nil)
	want := appendAttrs(nil, attrs)
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r.Shuffle(len(read), func(i, j int) { read[i], read[j] = read[j], read[i] })
		if got := appendAttrs(nil, keptAttrs(slices.Clone(read), nil)); !bytes.Equal(got, want) {
			t.Fatalf("attributes encode as %x, and as %x", got, want)
		}
	}
	s := Span{TraceID: "t", SpanID: "s", Attrs: attrs}
	var back Span
	if err := decodeSpan(encodeSpan(nil, &s), &back); err != nil || len(back.Attrs) != len(keys) {
		t.Fatalf("decoded %d attributes, %v", len(back.Attrs), err)
	}
	for k, v := range attrs.Map() {
		if back.Attrs.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, back.Attrs.Get(k), v)
		}
	}
}

// groupByTrace keeps the traces in order of first mention and each
// trace's spans in their order, however the traces interleave.
func TestGroupByTrace(t *testing.T) {
	var spans []Span
	for _, tid := range []string{"b", "a", "b", "c", "a", "b", "c", "d"} {
		spans = append(spans, Span{TraceID: tid})
	}
	order, byTrace := groupByTrace(spans)
	want := map[string][]int{"b": {0, 2, 5}, "a": {1, 4}, "c": {3, 6}, "d": {7}}
	if !slices.Equal(order, []string{"b", "a", "c", "d"}) || len(byTrace) != len(order) {
		t.Fatalf("order %v, %d groups", order, len(byTrace))
	}
	for k, tid := range order {
		if !slices.Equal(byTrace[k], want[tid]) {
			t.Errorf("trace %s: spans %v, want %v", tid, byTrace[k], want[tid])
		}
		if len(byTrace[k]) != cap(byTrace[k]) {
			t.Errorf("trace %s: a group with room after it (%d, %d): an append would overwrite the next", tid, len(byTrace[k]), cap(byTrace[k]))
		}
	}
	if order, byTrace := groupByTrace(nil); len(order) != 0 || len(byTrace) != 0 {
		t.Errorf("no spans: %v %v", order, byTrace)
	}
}
