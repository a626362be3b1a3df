package otlp

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// sameAsPdata says how decodeProtoSpans and pdata's decoder followed by
// SpansLenient differ on data: "" when they refuse it both, or make the
// same spans with the same refusals.
func sameAsPdata(data []byte) string {
	td, perr := unmarshalProto(data)
	got, err := decodeProtoSpans(data, math.MaxInt, nil)
	if (perr == nil) != (err == nil) {
		return fmt.Sprintf("pdata's error %v, the decoder's %v", perr, err)
	}
	if perr != nil {
		return ""
	}
	want, rejected, first := SpansLenient(td)
	if got.count != td.SpanCount() {
		return fmt.Sprintf("counted %d spans, pdata %d", got.count, td.SpanCount())
	}
	if got.rejected != rejected || fmt.Sprint(got.first) != fmt.Sprint(first) {
		return fmt.Sprintf("refused %d (%v), SpansLenient %d (%v)", got.rejected, got.first, rejected, first)
	}
	if len(got.spans) != len(want) {
		return fmt.Sprintf("%d spans, SpansLenient %d", len(got.spans), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got.spans[i], want[i]) {
			return fmt.Sprintf("span %d:\n got %#v\nwant %#v", i, got.spans[i], want[i])
		}
	}
	return ""
}

// richTraces holds a span of every shape the decoder converts: each
// attribute value type, nested maps and arrays with keys repeated, a
// header array of one, a double JSON cannot hold, events, links, every
// status and kind (one unknown), refused spans, two resources and scopes.
func richTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	at := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("pid", 7)
		if r == 0 {
			rs.Resource().Attributes().PutStr("service.name", "rich")
		}
		for sc := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(fmt.Sprintf("scope-%d", sc))
			ss.Scope().Attributes().PutStr("lib", "x")
			for k := range 9 {
				s := ss.Spans().AppendEmpty()
				s.SetTraceID(pcommon.TraceID{1, byte(r), byte(sc), 9})
				s.SetSpanID(pcommon.SpanID{2, byte(r), byte(sc), byte(k + 1)})
				if k > 0 {
					s.SetParentSpanID(pcommon.SpanID{2, byte(r), byte(sc), 1})
				}
				s.SetName(fmt.Sprintf("span %d", k%3))
				s.SetKind(ptrace.SpanKind(k % 7))
				s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(k) * time.Millisecond)))
				s.Status().SetCode(ptrace.StatusCode(k % 4))
				s.Status().SetMessage([]string{"", "boom"}[k%2])
				a := s.Attributes()
				a.PutStr("gen_ai.conversation.id", "conv-1")
				a.PutBool("flag", k%2 == 0)
				a.PutDouble("temperature", 0.7)
				a.PutDouble("huge", 1e300)
				a.PutEmptyBytes("blob").FromRaw([]byte{0, 1, 2, 250})
				a.PutEmptyBytes("none")
				a.PutEmpty("nothing")
				if r+sc == 0 && k == 2 {
					a.PutStr("gen_ai.tool.call.arguments", strings.Repeat("é", maxAttr))
					a.PutStr("gen_ai.prompt", strings.Repeat("ü", maxAttr))
				}
				m := a.PutEmptyMap("map")
				m.PutStr("z", "<&>")
				m.PutDouble("d", -0.0)
				m.PutEmptySlice("s").AppendEmpty().SetEmptyBytes()
				inner := m.PutEmptyMap("m")
				inner.PutInt("n", -3)
				inner.PutEmptyBytes("b").FromRaw([]byte("hi"))
				sl := a.PutEmptySlice("list")
				sl.AppendEmpty().SetStr("a")
				sl.AppendEmpty().SetInt(1)
				sl.AppendEmpty()
				sl.AppendEmpty().SetEmptyMap().PutBool("t", true)
				a.PutEmptySlice("http.request.header.x-one").AppendEmpty().SetStr("v")
				two := a.PutEmptySlice("http.request.header.x-two")
				two.AppendEmpty().SetStr("v")
				two.AppendEmpty().SetStr("w")
				if k == 3 {
					a.PutEmptyMap("nan").PutDouble("x", math.NaN())
					a.PutDouble("inf", math.Inf(-1))
				}
				e := s.Events().AppendEmpty()
				e.SetName("exception")
				e.SetTimestamp(pcommon.NewTimestampFromTime(at))
				e.Attributes().PutStr("exception.message", "timeout")
				s.Events().AppendEmpty()
				l := s.Links().AppendEmpty()
				l.SetTraceID(pcommon.TraceID{5})
				l.Attributes().PutStr("why", "retry")
				switch k {
				case 4:
					s.SetSpanID(pcommon.SpanID{})
				case 5:
					s.SetName("")
				case 6:
					s.SetStartTimestamp(0)
				case 7:
					s.SetParentSpanID(s.SpanID())
				case 8:
					s.SetTraceID(pcommon.TraceID{})
				}
			}
		}
	}
	return td
}

// wire builds protobuf by hand, for what pdata's marshaller never writes.
type wire []byte

func (w wire) bytes(field protowire.Number, b []byte) wire {
	return protowire.AppendBytes(protowire.AppendTag(w, field, protowire.BytesType), b)
}

func (w wire) varint(field protowire.Number, v uint64) wire {
	return protowire.AppendVarint(protowire.AppendTag(w, field, protowire.VarintType), v)
}

func (w wire) fixed64(field protowire.Number, v uint64) wire {
	return protowire.AppendFixed64(protowire.AppendTag(w, field, protowire.Fixed64Type), v)
}

func (w wire) tag(field protowire.Number, t protowire.Type) wire {
	return protowire.AppendTag(w, field, t)
}

// protoSeeds are the decoder's seed corpus: pdata's own encodings of
// agent batches, of richTraces and of the fixtures, and hand-made messages
// in orders and forms pdata's marshaller never writes.
func protoSeeds(tb testing.TB) [][]byte {
	marshal := func(td ptrace.Traces) []byte {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	seeds := [][]byte{marshal(batchOf(0, 16)), marshal(richTraces())}
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if td, err := unmarshalJSON(data); err == nil {
			seeds = append(seeds, marshal(td))
		}
	}
	at := uint64(time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC).UnixNano())
	kv := func(key string, value wire) wire { return wire{}.bytes(1, []byte(key)).bytes(2, value) }
	str := func(s string) wire { return wire{}.bytes(1, []byte(s)) }
	span := wire{}.
		bytes(9, kv("k", str("a"))).          // an attribute before the ids
		bytes(1, []byte("0123456789abcdef")). // trace id
		bytes(2, []byte("01234567")).         // span id
		bytes(5, []byte("first")).bytes(5, []byte("late name")).
		fixed64(7, at).fixed64(8, at+5).
		bytes(9, kv("k", str("b")).bytes(2, wire{})).               // the key again; an empty second value
		bytes(9, kv("v", str("x")).bytes(2, wire{}.varint(3, 42))). // a second value replaces
		bytes(9, kv("s", wire{}.varint(8, 3))).                     // a string index: empty
		bytes(9, kv("http.request.header.a", wire{}.bytes(5, wire{}.bytes(1, wire{}.varint(3, 1))))).
		bytes(15, wire{}.bytes(2, []byte("msg")).varint(3, 2)).
		bytes(15, wire{}.varint(3, 1)). // a second status: the code changes, the message stays
		varint(6, 1<<32|3).             // a kind over 32 bits
		varint(99, 5).fixed64(98, 1).bytes(97, []byte("unknown")).
		tag(96, protowire.StartGroupType).tag(96, protowire.EndGroupType)
	scope := wire{}.bytes(2, span).bytes(1, wire{}.bytes(1, []byte("scope after"))).
		bytes(1, wire{}.bytes(2, []byte("version only")))
	resource := wire{}.bytes(2, scope).
		bytes(1, wire{}.bytes(1, kv("service.name", wire{}.bytes(6, wire{}.bytes(1, kv("x", str("y"))))))).
		bytes(1, wire{}.bytes(1, kv("service.name", str("second")))).
		bytes(1000, scope)
	seeds = append(seeds, wire{}.bytes(1, resource).bytes(1, wire{}.bytes(1000, scope)))
	deep := str("bottom")
	for range 60 {
		deep = wire{}.bytes(5, wire{}.bytes(1, deep))
	}
	seeds = append(seeds,
		wire{}.bytes(1, wire{}.bytes(2, wire{}.bytes(2, wire{}.bytes(1, []byte("0123456789abcdef")).bytes(2, []byte("01234567")).bytes(5, []byte("n")).fixed64(7, at).fixed64(8, at).bytes(9, kv("deep", deep))))),
		wire{}.bytes(1, wire{}.bytes(2, wire{}.bytes(2, wire{}.bytes(1, []byte("short"))))),
		wire{}.bytes(1, wire{}.varint(2, 1)),
		wire{}.tag(3, protowire.StartGroupType).varint(1, 1).tag(3, protowire.EndGroupType),
		wire{}.tag(1, 7),
	)
	return seeds
}

// TestProtoSpansAsPdata holds the receivers' decoder to pdata's decoding
// and SpansLenient on the seed corpus and on every prefix of its
// hand-made and rich seeds (truncated messages).
func TestProtoSpansAsPdata(t *testing.T) {
	t.Parallel()
	for i, data := range protoSeeds(t) {
		if diff := sameAsPdata(data); diff != "" {
			t.Errorf("seed %d: %s", i, diff)
		}
	}
	seeds := protoSeeds(t)
	for _, data := range [][]byte{seeds[1], seeds[len(seeds)-6]} {
		step := max(1, len(data)/1500) // every byte of the hand-made one
		for n := 0; n < len(data); n += step {
			if diff := sameAsPdata(data[:n]); diff != "" {
				t.Fatalf("the first %d bytes: %s", n, diff)
			}
		}
	}
}

// TestProtoSpansCountsPastTheLimit: a request over the limit is counted
// whole but converted only up to it.
func TestProtoSpansCountsPastTheLimit(t *testing.T) {
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(batchOf(0, 40))
	if err != nil {
		t.Fatal(err)
	}
	req, err := decodeProtoSpans(body, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.count != 40 || len(req.spans) != 16 {
		t.Fatalf("counted %d, converted %d; want 40 and 16", req.count, len(req.spans))
	}
}

// mutate changes data as a fuzzer would: bytes overwritten, inserted,
// cut out or repeated.
func mutate(rng *rand.Rand, data []byte) []byte {
	s := append([]byte(nil), data...)
	for range 1 + rng.Intn(3) {
		if len(s) == 0 {
			return s
		}
		i := rng.Intn(len(s))
		switch rng.Intn(4) {
		case 0:
			s[i] = byte(rng.Intn(256))
		case 1:
			s = slices.Insert(s, i, byte(rng.Intn(256)))
		case 2:
			s = slices.Delete(s, i, min(len(s), i+1+rng.Intn(8)))
		default:
			j := min(len(s), i+1+rng.Intn(32))
			s = slices.Insert(s, j, s[i:j]...)
		}
	}
	return s
}

// TestProtoSpansMutated holds the decoder to pdata on seeds mutated at
// random, from a fixed seed (RETRYLAB_PROTO_MUTATIONS sets how many).
func TestProtoSpansMutated(t *testing.T) {
	t.Parallel()
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("RETRYLAB_PROTO_MUTATIONS")); err == nil && v > 0 {
		n = v
	}
	seeds := protoSeeds(t)
	rng := rand.New(rand.NewSource(24))
	for i := range n {
		data := mutate(rng, seeds[rng.Intn(len(seeds))])
		if diff := sameAsPdata(data); diff != "" {
			t.Fatalf("mutation %d (%x): %s", i, data, diff)
		}
	}
}

// FuzzProtoSpans compares the receivers' decoder with pdata's decoding and
// SpansLenient on arbitrary bytes.
func FuzzProtoSpans(f *testing.F) {
	for _, s := range protoSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if diff := sameAsPdata(data); diff != "" {
			t.Fatal(diff)
		}
	})
}
