package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/store"
)

// longTrace is one trace of n spans under one root, each with an argument
// of size bytes.
func longTrace(n, size int) []Span {
	spans := make([]Span, n)
	for i := range spans {
		s := &spans[i]
		s.TraceID = "7b8efff798038103d269b633813fc60c"
		s.SpanID = fmt.Sprintf("%016x", i+1)
		if i > 0 {
			s.ParentID = spans[0].SpanID
		}
		s.Name = "execute_tool send_invoice_email"
		s.Start, s.End = int64(1790607000000000000+i*1000), int64(1790607000000000000+i*1000+500)
		s.Attrs = AttrsOf(map[string]string{"gen_ai.tool.name": "send_invoice_email", "gen_ai.tool.call.arguments": strings.Repeat("a", size)})
	}
	spans[0].Name, spans[0].Attrs = "invoke_agent", nil
	return spans
}

// A trace's spans one write stores are blocks of spans, several values
// for a long trace: they load, are found again when sent again, and check
// clean.
func TestARunIsStoredInBlocks(t *testing.T) {
	db := openDB(t)
	spans := longTrace(300, 1000) // ~300 KB: about ten blocks
	for round, want := range []Stats{{Spans: 300}, {Repeated: 300}} {
		var got Stats
		if err := db.Update(func(tx *store.Tx) error { var err error; got, err = Save(tx, spans, "receiver"); return err }); err != nil {
			t.Fatal(err)
		}
		if got.Spans != want.Spans || got.Repeated != want.Repeated {
			t.Fatalf("save %d: %+v, want %+v", round+1, got, want)
		}
	}
	exec := ExecutionID(spans[0].TraceID, "")
	got, err := LoadSpans(db, exec)
	if err != nil || len(got) != len(spans) {
		t.Fatalf("loaded %d spans (%v), want %d", len(got), err, len(spans))
	}
	for i := range got {
		if got[i].SpanID != spans[i].SpanID || got[i].Attrs.Get("gen_ai.tool.call.arguments") != spans[i].Attrs.Get("gen_ai.tool.call.arguments") {
			t.Fatalf("span %d: %s, want %s", i, got[i].SpanID, spans[i].SpanID)
		}
	}
	db.View(func(tx *store.Tx) error {
		values, index := tx.Count(BucketSpans), tx.Count(BucketIndex)
		if values < 300*1000/maxBlockBytes || values > 2*300*1000/maxBlockBytes || index != 1 {
			t.Errorf("%d values and %d index entries for 300 spans of 1 KB, want about %d blocks and one entry", values, index, 300*1000/maxBlockBytes)
		}
		if n := storedSpanCount(t, tx); n != 300 {
			t.Errorf("the blocks hold %d spans, want 300", n)
		}
		damaged, err := CheckRecords(tx, 10)
		if err != nil || len(damaged) != 0 {
			t.Errorf("check: %v, %v", damaged, err)
		}
		return nil
	})
}

// A block that does not split is damage to that value, named by the
// reader and the check, never a panic or a span made up.
func TestABlockCutShortIsDamage(t *testing.T) {
	db := openDB(t)
	spans := longTrace(8, 100)
	if err := db.Update(func(tx *store.Tx) error { _, err := Save(tx, spans, "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *store.Tx) error {
		var key, v []byte
		tx.Scan(BucketSpans, nil, false, func(k, val []byte) bool { key, v = k, val; return false })
		if len(v) == 0 || v[0] != spanBlock {
			t.Fatalf("the first value is not a block: % x", v[:min(len(v), 8)])
		}
		return tx.Put(BucketSpans, key, v[:len(v)-10])
	}); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSpans(db, ExecutionID(spans[0].TraceID, ""))
	var d *store.DamagedRecord
	if !errors.As(err, &d) || d.Bucket != BucketSpans || !strings.Contains(err.Error(), "a block of spans cut short") {
		t.Fatalf("load of a cut block: %v", err)
	}
	db.View(func(tx *store.Tx) error {
		damaged, err := CheckRecords(tx, 10)
		if err != nil || len(damaged) == 0 || !strings.Contains(damaged[0].Error(), "a block of spans cut short") {
			t.Errorf("check of a cut block: %v, %v", damaged, err)
		}
		return nil
	})
}

// An import cut short by a crash after it stored a long trace's blocks
// leaves none of them once cleaned up.
func TestCleanPendingRemovesEveryBlock(t *testing.T) {
	db := openDB(t)
	spans := longTrace(300, 1000)
	db.Update(func(tx *store.Tx) error {
		id, err := tx.Append(BucketImports, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
		if err != nil {
			return err
		}
		return newWriter("crashed.json", id).write(tx, spans, nil, nil) // and the process dies before finish
	})
	db.View(func(tx *store.Tx) error {
		if n := tx.Count(BucketSpans); n < 2 {
			t.Fatalf("the crashed import stored %d values, want several blocks", n)
		}
		return nil
	})
	if err := CleanPending(db); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *store.Tx) error {
		if n := tx.Count(BucketSpans) + tx.Count(BucketIndex); n != 0 {
			t.Errorf("%d values and index entries left after the clean-up", n)
		}
		return nil
	})
}

// requestSpans is a request as the receiver gets one: traces of several
// spans, their spans out of order, one trace longer than a block, a span
// sent twice, and spans whose stored forms are under 128 bytes and over
// 16 KiB (lengths of one and three bytes).
func requestSpans() []Span {
	var spans []Span
	for t := range 6 {
		tr := longTrace(5, 40*t)
		for i := range tr {
			tr[i].TraceID = fmt.Sprintf("%032x", t+1)
		}
		spans = append(spans, tr...)
	}
	spans = append(spans, longTrace(40, 1000)...) // ~40 KB: no block of its own
	tiny := Span{TraceID: fmt.Sprintf("%032x", 99), SpanID: "00000000000000aa", Name: "t", Start: 1, End: 2}
	huge := tiny
	huge.SpanID, huge.Attrs = "00000000000000bb", AttrsOf(map[string]string{"input.value": strings.Repeat("h", 20000)})
	spans = append(spans, tiny, huge, spans[3]) // spans[3] again, identical
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	return spans
}

// The receiver lays a request's spans out in blocks ahead (prepare): a
// trace's run is its prepared block, appended as it is (its checksum
// written in the room after it), and the database is byte for byte the
// one a write without them makes.
func TestPreparedBlocksStoreAsTheWriteWould(t *testing.T) {
	spans := requestSpans()
	var mem requestMemory
	own := slices.Clone(spans)
	encoded, facts := mem.prepare(own)
	for i := range own {
		if want := encodeSpan(nil, &own[i]); !bytes.Equal(encoded[i], want) {
			t.Fatalf("span %d: prepared form differs from encodeSpan's", i)
		}
	}
	withDB, withoutDB := openDB(t), openDB(t)
	if err := withDB.Update(func(tx *store.Tx) error {
		_, err := save(tx, own, madeAhead{encoded: encoded, facts: facts, prepared: &mem.blocks, scratch: &mem.write}, "receiver")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := withoutDB.Update(func(tx *store.Tx) error { _, err := Save(tx, slices.Clone(spans), "receiver"); return err }); err != nil {
		t.Fatal(err)
	}
	inPlace := 0
	for _, b := range mem.blocks.blocks {
		if room := b[len(b):cap(b)]; !bytes.Equal(room, make([]byte, len(room))) {
			inPlace++
		}
	}
	// The duplicated span's trace is stored from a copy; the other five
	// short traces and the two spans of trace 99 from their blocks.
	if inPlace != 6 {
		t.Errorf("%d of %d prepared blocks appended as they are, want 6", inPlace, len(mem.blocks.blocks))
	}
	if a, b := dumpSpans(withDB), dumpSpans(withoutDB); !reflect.DeepEqual(a, b) {
		t.Fatalf("the databases differ:\nprepared %d records\nwithout  %d records", len(a), len(b))
	}
}

// dumpSpans lists every key and value of db's span buckets and its
// execution records, in order.
func dumpSpans(db *store.DB) (out []string) {
	db.View(func(tx *store.Tx) error {
		for _, b := range []store.Bucket{BucketSpans, BucketIndex, BucketTraces} {
			tx.Scan(b, nil, false, func(k, v []byte) bool {
				out = append(out, fmt.Sprintf("%s %x %x", b, k, v))
				return true
			})
		}
		return tx.ExecutionRecords(func(id, record []byte) bool {
			out = append(out, fmt.Sprintf("record %s %x", id, record))
			return true
		})
	})
	return out
}

// The receiver keeps a request's memory for the next request (reset): a
// request stored with memory that served others before stores what one
// with memory of its own does, spans, records and verdicts alike, also
// when it repeats spans of an earlier one or audits executions in hand.
func TestRequestMemoryServesRequestAfterRequest(t *testing.T) {
	decoded := func(first, n int) []Span {
		body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(batchOf(first, n))
		if err != nil {
			t.Fatal(err)
		}
		req, err := decodeProtoSpans(body, n, nil)
		if err != nil || req.rejected > 0 {
			t.Fatalf("decode: %v (%d rejected)", err, req.rejected)
		}
		return req.spans
	}
	requests := [][]Span{decoded(0, 512), requestSpans(), decoded(256, 512), decoded(0, 512), decoded(4096, 96)}
	reused, own := openDB(t), openDB(t)
	mem := &requestMemory{}
	for i, spans := range requests {
		for _, db := range []*store.DB{reused, own} {
			m := mem
			if db == own {
				m = &requestMemory{}
			}
			req := slices.Clone(spans)
			encoded, facts := m.prepare(req)
			if err := db.Update(func(tx *store.Tx) error {
				_, err := save(tx, req, madeAhead{encoded: encoded, facts: facts, prepared: &m.blocks, scratch: &m.write}, "receiver")
				return err
			}); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		if !mem.reset() {
			t.Fatalf("request %d: memory not kept", i)
		}
		if a, b := dumpSpans(reused), dumpSpans(own); !reflect.DeepEqual(a, b) {
			t.Fatalf("after request %d the databases differ: %d records with memory used again, %d without", i, len(a), len(b))
		}
	}
	if cap(mem.write.puts) == 0 || cap(mem.write.flags) == 0 {
		t.Fatalf("the write's memory was not kept: puts %d, flags %d", cap(mem.write.puts), cap(mem.write.flags))
	}
}

// A block holds each span after its length, of one, two or three bytes.
func TestAppendLengthAndSpan(t *testing.T) {
	for _, size := range []int{0, 50, 5000, 40000} {
		s := longTrace(2, size)[1]
		block, enc := appendLengthAndSpan([]byte{spanBlock}, &s)
		if want := encodeSpan(nil, &s); !bytes.Equal(enc, want) {
			t.Fatalf("argument of %d bytes: stored form differs", size)
		}
		var got [][]byte
		if err := eachStoredSpan(block, func(b []byte) bool { got = append(got, b); return true }); err != nil || len(got) != 1 || !bytes.Equal(got[0], enc) {
			t.Fatalf("argument of %d bytes: the block splits into %d spans (%v)", size, len(got), err)
		}
	}
}
